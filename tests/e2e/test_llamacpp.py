"""kbdesk's chat against a real llama-cpp-python server (see conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from e2e_support import e2e_cli
from helpers import chat_store
from llamacpp_render import holds

pytestmark = pytest.mark.e2e
CONVERSATIONS = json.loads((Path(__file__).resolve().parent / "conversations.json").read_text())["conversations"]
TOOLS_SHOWN = "You have access to the following functions"  # chatml-function-calling's words for the tools


def _settled(recorder, label: str) -> list[dict]:
    """The streamed chat exchanges of ``label`` once the proxy has written them all down."""
    seen, quiet = -1, 0
    while quiet < 3:
        time.sleep(0.3)
        now = len([e for e in recorder.exchanges if e["label"] == label])
        quiet, seen = (quiet + 1, seen) if now == seen else (0, now)
    return [
        e
        for e in recorder.exchanges
        if e["label"] == label and e["path"].endswith("/chat/completions") and e["request"].get("stream")
    ]


def converse(recorder, prefix: str, *extra: str, conversations: list | None = None) -> list[dict]:
    """The four two-turn conversations, each turn labelled ``{prefix}-{n}-turn-{t}``: per
    turn whether the passage holding the answer is in the prompt the model read (the last
    request rendered through the server's own template) and whether the answer says the fact."""
    rows = []
    for n, conversation in enumerate(conversations or CONVERSATIONS, start=1):
        conv_id = None
        for t, turn in enumerate(conversation["turns"], start=1):
            label = f"{prefix}-{n}-turn-{t}"
            recorder.label = label
            args = ["ask", turn["q"], "--json", *extra] + (["-c", conv_id] if conv_id else [])
            run = e2e_cli(*args, check=False)
            recorder.label = None
            answer = json.loads(run.stdout)
            conv_id = answer["conversation_id"]
            asked = _settled(recorder, label)
            text = answer["answer"] or ""
            rows.append(
                {
                    "turn": label,
                    "q": turn["q"],
                    "status": answer["status"],
                    "retrieval": answer["retrieval"],
                    "cited": turn["doc"] in [s["source"] for s in answer["sources"]],
                    "in_prompt": bool(asked) and holds(asked[-1]["rendered"], turn["passage"]),
                    "fact": any(f.lower() in text.lower() for f in turn["fact"]),
                    "tools_shown": [TOOLS_SHOWN in e["rendered"] for e in asked],
                    "answer": " ".join(text.split())[:160],
                    "error": answer.get("error"),
                }
            )
    print(f"\n{prefix}: " + json.dumps(rows, indent=1, ensure_ascii=False))
    return rows


def test_four_two_turn_conversations_read_the_passage_that_answers_them(e2e_home, recorder):
    """kbdesk's default retrieval (auto): in at least 7 of the 8 turns the passage holding the
    answer is in the prompt the model read — the request as llama-cpp-python's
    chatml-function-calling template renders it (it drops a role "tool" message: kbdesk
    probes that and gives the results as a user message)."""
    rows = converse(recorder, "conversation")
    assert all(r["status"] == "complete" for r in rows), rows
    assert sum(r["in_prompt"] for r in rows) >= 7, rows
    assert sum(r["cited"] for r in rows) >= 7, rows
    print(
        f"default (auto): passage in the prompt {sum(r['in_prompt'] for r in rows)}/8, "
        f"answer holds the fact {sum(r['fact'] for r in rows)}/8"
    )


def test_the_always_baseline(e2e_home, recorder):
    """The same conversations with --retrieval always (the passages in the system prompt):
    the baseline docs/CHAT.md reports the default beside."""
    rows = converse(recorder, "always", "--retrieval", "always")
    assert all(r["status"] == "complete" for r in rows), rows
    assert sum(r["in_prompt"] for r in rows) >= 7, rows
    print(
        f"always: passage in the prompt {sum(r['in_prompt'] for r in rows)}/8, "
        f"answer holds the fact {sum(r['fact'] for r in rows)}/8"
    )


def test_retrieval_tool_shows_the_model_the_tools(e2e_home, recorder):
    """--retrieval tool: every first request of a turn offers kb_search with tool_choice
    "auto", and the server's template shows it to the model."""
    rows = converse(recorder, "tool", "--retrieval", "tool", conversations=CONVERSATIONS[:1])
    asked = [e for e in recorder.chat() if (e["label"] or "").startswith("tool-") and e["request"].get("stream")]
    assert rows and all(r["tools_shown"][0] for r in rows), rows  # each turn's first request
    firsts = [next(e for e in asked if e["label"] == r["turn"]) for r in rows]
    assert all(e["request"]["tool_choice"] == "auto" for e in firsts)
    print(f"tool: {json.dumps([(r['turn'], r['retrieval'], r['status']) for r in rows])}")


def test_a_stream_cut_by_another_request_is_an_interrupted_answer(e2e_home, recorder, llama_server):
    """llama-cpp-python ends a running answer with [DONE] and no finish_reason when another
    request reaches it (here GET /v1/models, as the TUI's model picker sends): kbdesk says
    the answer was interrupted, keeps the part that came, marks it, and exits 1."""
    recorder.label, recorder.texting = "cut-stream", threading.Event()
    asked = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kbdesk.cli.main import main; main()",
            "ask",
            "--retrieval",
            "off",
            "--json",
            "--max-tokens",
            "400",
            "Tell me a long story about a lighthouse keeper and his cat.",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert recorder.texting.wait(300), "no answer text came"
    httpx.get(llama_server + "/models", timeout=30)
    out, err = asked.communicate(timeout=300)
    recorder.label = None
    assert asked.returncode == 1, err
    answer = json.loads(out)
    assert answer["status"] == "error" and "the answer was interrupted" in answer["error"]
    assert answer["answer"].strip()  # the part that came (--json: nothing on stderr)
    cut = _settled(recorder, "cut-stream")[-1]
    assert '"finish_reason": null' in cut["body"] and "[DONE]" in cut["body"]
    assert '"finish_reason": "' not in cut["body"]
    shown = e2e_cli("conversations", "show", answer["conversation_id"]).stdout
    assert "(error)" in shown and "interrupted" in shown


def test_the_server_registered_as_the_wrong_kind_still_answers_from_the_kb(e2e_home, recorder):
    """llama-cpp-python registered as kind llamacpp (that kind is llama.cpp's llama-server):
    the forced "required" tool choice makes it answer an empty 200. kbdesk asks again
    without forcing, with the passages, and remembers it; the answer cites the KB."""
    config = e2e_home / "config" / "config.toml"
    config.write_text(config.read_text().replace('kind = "custom"', 'kind = "llamacpp"'))
    recorder.label = "wrong-kind"
    answer = json.loads(e2e_cli("ask", "How do I restore a backup?", "--json").stdout)
    recorder.label = None
    assert answer["status"] == "complete", answer["error"]
    assert "getting-started.md" in [s["source"] for s in answer["sources"]]
    assert not any("too long" in n for n in answer["notices"])
    forced = next(e for e in recorder.exchanges if e["label"] == "wrong-kind" and e["path"].endswith("/completions"))
    assert forced["request"]["tool_choice"] == "required" and forced["status"] == 200
    tested = e2e_cli("provider", "test", "llama")
    assert "llama-cpp-python" in tested.stdout + tested.stderr


def test_a_question_about_the_sample_kb_and_its_follow_up(e2e_home, recorder):
    recorder.label = "ask"
    first = json.loads(e2e_cli("ask", "How do I restore a backup?", "--json").stdout)
    assert first["status"] == "complete" and first["answer"].strip()
    assert first["sources"] and first["retrieval"] in ("tool", "auto")
    assert {s["kb"] for s in first["sources"]} == {"demo"}
    # the forced kb_search round trip: the call came back as a real tool call and its result
    # went back in a user message (this template drops role "tool": the probe said so)
    chat = _settled(recorder, "ask")
    probes = [e for e in recorder.chat() if e["label"] == "ask" and not e["request"].get("stream")]
    assert chat[0]["request"]["tool_choice"] == {"type": "function", "function": {"name": "kb_search"}}
    assert (
        len(probes) == 2
        and json.loads(probes[0]["body"])["usage"]["prompt_tokens"]
        == json.loads(probes[1]["body"])["usage"]["prompt_tokens"]
    )  # the long tool result cost nothing: the template dropped it
    if first["retrieval"] == "tool":
        sent_back = chat[1]["request"]["messages"]
        call = next(m for m in sent_back if m["role"] == "assistant" and m.get("tool_calls"))
        assert isinstance(call["content"], str)  # never null: this server refuses null
        assert "tool" not in [m["role"] for m in sent_back] and sent_back[-1]["role"] == "user"
        assert "harbor snapshot restore" in chat[1]["rendered"]
    recorder.label = "follow-up"
    second = json.loads(
        e2e_cli("ask", "-c", first["conversation_id"], "And how often do backups run?", "--json").stdout
    )
    assert second["status"] == "complete" and second["answer"].strip()
    assert second["conversation_id"] == first["conversation_id"]
    recorder.label = None


def test_stop_before_the_first_byte(e2e_home, recorder):
    """The server reads a long prompt one token at a time (--n_batch 1): stopped meanwhile,
    the turn ends at once and the server sees the client leave."""
    from kbdesk import open_desk
    from kbdesk.chat import CancelToken, TextDelta, TurnFinished

    long_question = "Please summarise: " + "the harbour keeps its lighthouse lit every night. " * 60
    with open_desk() as desk:
        token = CancelToken()
        events: list = []
        stopped_at: list[float] = []

        def ask() -> None:
            for event in desk.chat().stream(None, long_question, retrieval="off", cancel=token):
                events.append(event)
            stopped_at.append(time.monotonic())

        worker = threading.Thread(target=ask)
        worker.start()
        time.sleep(1.5)
        assert not any(isinstance(e, TextDelta) for e in events), "the answer started before the stop"
        asked = time.monotonic()
        token.cancel()
        worker.join(30)
        assert not worker.is_alive()
        took = stopped_at[0] - asked
        answer = next(e.answer for e in events if isinstance(e, TurnFinished))
        assert answer.status == "cancelled"
        print(f"stop before the first byte took {took:.3f} s")
        assert took < 0.5


def test_an_overflowing_conversation_is_trimmed_not_broken(e2e_home, recorder):
    """A conversation far longer than the server's 2,048-token context: the server does
    not say its context (llama-cpp-python has no /props), so kbdesk plans with 4,096;
    the server's overflow comes back as an overflow, and the turn asks again without the
    history instead of failing."""
    from kbdesk import open_desk

    with open_desk() as desk:
        chat = desk.chat()
        conv = chat.new_conversation("long")
        for i in range(12):  # an old conversation, saved: ~1,500 characters per exchange
            chat_store(desk).add_message(conv.id, "user", f"Question {i} about tides? " + "tide " * 120)
            chat_store(desk).add_message(conv.id, "assistant", f"Answer {i}: " + "water " * 150)
        recorder.label = "overflow"
        answer = chat.ask(conv.id, "What is the capital of France?", retrieval="off", max_tokens=48)
        recorder.label = None
    assert answer.status == "complete", answer.error
    assert answer.text.strip()
    assert answer.trimmed or any("context" in n for n in answer.notices)
