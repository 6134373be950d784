"""The interactive ``kbdesk chat``, run as a real process against a chat server on loopback:
with piped stdin (one question or /command a line) and on a real pseudo-terminal
(Ctrl-C, Ctrl-D, line editing and history)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from chat_support import write_config
from kbdesk.chat import Answer, Notice, Source, TextDelta, TurnFinished, Waiting
from kbdesk.cli.chat_turn import TurnView
from kbdesk.cli.main import cli
from pty_terminal import WAIT, Terminal


def run_kbdesk(*args: str, input: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kbdesk.cli.main", *args], input=input, capture_output=True, text=True, timeout=WAIT
    )


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def user_questions(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


@pytest.fixture
def docs(chat_server, tmp_path):
    write_config(chat_server)  # retrieval "tool": the model alone decides whether to search
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\n## Backups\n\nBackups run every night at two.\n")
    (folder / "hr.txt").write_text("Holidays are booked through the HR portal.")
    runner = CliRunner()
    for args in (
        ["kb", "create", "Docs", "--keyword-only"],
        ["kb", "create", "HR", "--keyword-only"],
        ["add", "Docs", str(folder / "guide.md")],
        ["add", "HR", str(folder / "hr.txt")],
    ):
        assert runner.invoke(cli, args).exit_code == 0


# ── piped stdin ────────────────────────────────────────────────────────────────
def test_piped_questions_share_one_conversation_with_sources_and_what_was_searched(docs, chat_server):
    chat_server.reply(tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply("Backups run nightly at two [1].")
    chat_server.reply("Yes, every night.")
    r = run_kbdesk("chat", "--kb", "Docs", input="When do backups run?\nEvery night?\n")
    assert r.returncode == 0, r.stderr
    assert "Backups run nightly at two [1]." in r.stdout and "[1] guide.md § Guide › Backups — Docs" in r.stdout
    assert r.stdout.index("[1] guide.md") < r.stdout.index("Yes, every night.")  # sources after their answer
    assert "searched Docs (kb_search)" in r.stderr and "the model did not search Docs" in r.stderr
    assert user_questions(chat_server.chat_requests[-1]) == ["When do backups run?", "Every night?"]
    listed = cli_json("conversations", "list")
    assert listed["total"] == 1 and listed["data"][0]["title"] == "When do backups run?"


def test_kbs_persona_and_retrieval_commands_change_the_next_answer(docs, chat_server):
    CliRunner().invoke(cli, ["persona", "create", "Helper", "--prompt", "Be brief.", "--model", "helper-model"])
    script = (
        "\n".join(
            ["/kbs", "/kbs -HR", "Holidays?", "/retrieval off", "/persona Helper", "Backups?", "/persona", "/retrieval"]
        )
        + "\n"
    )
    r = run_kbdesk("chat", input=script)
    assert r.returncode == 0, r.stderr
    assert " 1 ☑ Docs (1 doc)  (personal)" in r.stdout and " 2 ☑ HR (1 doc)  (personal)" in r.stdout
    assert " 2 ☐ HR (1 doc)" in r.stdout
    first, second = chat_server.chat_requests
    assert '"Docs"' in first["messages"][0]["content"] and '"HR"' not in first["messages"][0]["content"]
    assert first["tools"] and "tools" not in second  # retrieval off: the KBs are not offered
    assert second["model"] == "helper-model" and second["messages"][0]["content"].startswith("Be brief.")
    assert "persona: Helper" in r.stdout and "retrieval: off (set on this conversation)" in r.stdout
    conv = cli_json("conversations", "list")["data"][0]
    assert conv["retrieval"] == "off" and conv["persona_id"]


def test_new_history_sources_unknown_commands_and_exit(docs, chat_server):
    chat_server.reply(tool_calls=[("kb_search", {"query": "holidays"})])
    chat_server.reply("Use the HR portal [1].")
    script = (
        "\n".join(
            [
                "How do I book holidays?",
                "/sources",
                "/sources 1",
                "/history",
                "/nonsense",
                "//etc is a folder?",
                "/new",
                "/history",
                "Another topic",
                "/exit",
                "Never asked",
            ]
        )
        + "\n"
    )
    r = run_kbdesk("chat", input=script)
    assert r.returncode == 1, r.stderr  # piped: /nonsense failed, and a script learns it
    assert "[1] hr.txt — HR" in r.stdout and "Holidays are booked through the HR portal." in r.stdout
    assert "you:" in r.stdout and "How do I book holidays?" in r.stdout.split("you:")[1]
    assert "no command /nonsense" in r.stderr and "nothing asked yet in this conversation" in r.stderr
    asked = [user_questions(req)[-1] for req in chat_server.chat_requests]
    assert asked == ["How do I book holidays?", "How do I book holidays?", "/etc is a folder?", "Another topic"]
    assert user_questions(chat_server.chat_requests[-1]) == ["Another topic"]  # /new: a fresh conversation
    assert cli_json("conversations", "list")["total"] == 2


def test_several_lines_with_multi_or_a_trailing_backslash(docs, chat_server):
    r = run_kbdesk("chat", input="!multi\nline one\n\nline three\n!end\nfirst\\\nsecond\n")
    assert r.returncode == 0, r.stderr
    assert [user_questions(req)[-1] for req in chat_server.chat_requests] == ["line one\n\nline three", "first\nsecond"]


def test_leaving_without_asking_saves_nothing(docs, chat_server):
    assert run_kbdesk("chat", input="/kbs\n/retrieval always\n").returncode == 0
    assert run_kbdesk("chat", input="").returncode == 0
    assert cli_json("conversations", "list")["total"] == 0 and chat_server.chat_requests == []


def test_continue_and_a_named_conversation(docs, chat_server):
    chat_server.reply("First answer.")
    conv = cli_json("ask", "Where are the backups?")["conversation_id"]
    chat_server.reply("Second answer.")
    r = run_kbdesk("chat", "--continue", input="And how often?\n")
    assert r.returncode == 0 and "Second answer." in r.stdout
    assert user_questions(chat_server.chat_requests[-1]) == ["Where are the backups?", "And how often?"]
    r = run_kbdesk("chat", conv[:8], input="Anything else?\n")
    assert user_questions(chat_server.chat_requests[-1])[0] == "Where are the backups?"
    assert cli_json("conversations", "list")["total"] == 1
    r = run_kbdesk("chat", "--continue", conv, input="")
    assert r.returncode == 2 and "not both" in r.stderr


def test_a_failed_answer_is_one_line_and_the_session_goes_on(docs, chat_server):
    chat_server.error(503, "upstream is down")
    chat_server.reply("Back again.")
    r = run_kbdesk("chat", input="Anyone there?\nAnd now?\n")
    assert r.returncode == 1  # piped: a script learns that an answer failed
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "upstream is down" in errors[0]
    assert "Back again." in r.stdout


def test_waiting_cut_and_trimmed_history_are_said(chat_server, kbdesk_home):
    write_config(chat_server, extra="context_window = 1500\nmax_tokens = 300\n")
    chat_server.reply("Late but here.", delay=1.3, pieces=1)
    for i in range(7):  # each exchange ~1,000 characters: the window holds only the newest few
        chat_server.reply(f"answer {i} " + "word " * 180)
    chat_server.reply("Backups run every", finish="length")
    questions = ["hello"] + [f"question {i} " + "filler " * 20 for i in range(7)] + ["And now?"]
    r = run_kbdesk("chat", input="\n".join(questions) + "\n")
    assert r.returncode == 0, r.stderr
    waiting = [line for line in r.stderr.splitlines() if line.startswith("waiting for the model (")]
    assert len(waiting) == 1 and "Late but here." in r.stdout  # printed sparsely: not a line a second
    assert "cut at the length limit" in r.stderr and "left out to fit the model's context" in r.stderr
    assert "\x1b[2K" not in r.stderr  # nothing rewritten in place where it cannot be


# ── drawing (the same view ask and chat use) ───────────────────────────────────
def test_on_a_terminal_the_waiting_line_is_rewritten_in_place_and_cleared():
    out, err = io.StringIO(), io.StringIO()
    view = TurnView(out=out, err=err, live=True)
    for seconds in (1.0, 2.0, 3.0):
        view(Waiting(seconds))
    view(TextDelta("Here\x1b]0;pwned\x07 it is."))
    view(Notice("something to know", "warning"))
    view(
        TurnFinished(Answer("c", "m", "Here it is.", "complete", sources=(Source(1, "chunk", "guide.md", kb="Docs"),)))
    )
    shown = err.getvalue()
    assert shown.count("\r\x1b[2Kwaiting for the model") == 3 and "(3 s)" in shown
    assert shown.index("(3 s)") < shown.rindex("\r\x1b[2K") < shown.index("note: something to know")
    assert "\x1b]0;" not in out.getvalue() and "\\x1b]0;pwned\\x07" in out.getvalue()  # shown, not obeyed
    assert out.getvalue().startswith("Here") and "\n  [1] guide.md — Docs" in out.getvalue()


# ── a real terminal ────────────────────────────────────────────────────────────
def test_ctrl_c_stops_a_streaming_answer_keeps_it_and_returns_to_the_prompt(docs, chat_server):
    chat_server.reply("The first part of a long story.", pieces=1, hold=WAIT)  # then the model stalls
    chat_server.reply("A short answer.")
    with Terminal("chat") as term:
        term.expect("> ")
        term.send("Tell me a long story\r")
        term.expect("The first part of a long story.")
        term.send("\x03\x03")  # Ctrl-C (twice, as people do): SIGINT from the terminal mid-answer
        term.expect("stopped")
        term.expect("> ")
        term.send("And a short one?\r")
        term.expect("A short answer.")
        term.expect("> ")
        term.send("\x04")  # Ctrl-D leaves
        assert term.wait() == 0
    conv = cli_json("conversations", "list")["data"][0]
    messages = cli_json("conversations", "show", conv["id"])["messages"]
    said = [(m["role"], m["status"], m["content"]) for m in messages if m["role"] == "assistant"]
    assert said == [
        ("assistant", "cancelled", "The first part of a long story."),
        ("assistant", "complete", "A short answer."),
    ]


def test_ctrl_c_at_the_prompt_clears_the_line_and_typed_lines_come_back_with_up(docs, chat_server):
    with Terminal("chat") as term:
        term.expect("> ")
        term.send("half a thought")
        term.expect("half a thought")
        term.interrupt(until="> ")  # Ctrl-C at the prompt: the line is dropped, the chat goes on
        term.send("Hello there\r")
        term.expect("ok")  # the server's default answer
        term.expect("> ")
        term.send("\x1b[A\r")  # Up: the last typed line again (readline history)
        term.expect("ok")
        term.expect("> ")
        term.send("/exit\r")
        assert term.wait() == 0
    assert [user_questions(r)[-1] for r in chat_server.chat_requests] == ["Hello there", "Hello there"]


def test_a_short_pause_in_the_middle_of_an_answer_does_not_break_its_line():
    out, err = io.StringIO(), io.StringIO()
    view = TurnView(out=out, err=err, live=True)
    view(TextDelta("A slow "))
    view(Waiting(1.0))
    view(Waiting(2.0))
    view(TextDelta("answer."))
    assert out.getvalue() == "A slow answer." and err.getvalue() == ""
    view(Waiting(12.0))  # a long stall is said, on a line of its own
    assert out.getvalue() == "A slow answer.\n" and "waiting for the model (12 s)" in err.getvalue()


def test_ctrl_c_stops_ask_mid_answer_with_status_130_and_keeps_the_part(docs, chat_server):
    chat_server.reply("Once upon a time", pieces=1, hold=WAIT)
    with Terminal("ask", "Tell me a long story") as term:
        term.expect("Once upon a time")
        term.send("\x03")
        term.expect("stopped")
        assert term.wait() == 130
    conv = cli_json("conversations", "list")["data"][0]
    messages = cli_json("conversations", "show", conv["id"])["messages"]
    assert [(m["status"], m["content"]) for m in messages if m["role"] == "assistant"] == [
        ("cancelled", "Once upon a time")
    ]
