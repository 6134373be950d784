"""``kbdesk ask``, ``conversations``, ``note``, ``persona`` and ``project`` through click's runner
(the interactive ``kbdesk chat`` runs in real processes: test_chat_repl.py)."""

import json

import pytest
from click.testing import CliRunner

from chat_support import desk_on, write_config
from kbdesk.cli.main import cli


@pytest.fixture
def run(request, chat_engine, chat_server):
    """The CLI against the SQLite file or a Postgres database (``--db``)."""
    write_config(chat_server)
    runner = CliRunner()
    where: list[str] = []
    if chat_engine == "postgres":
        desk_on(request, chat_engine).close()  # the database, its owner acting as admin
        where = ["--db", request.getfixturevalue("pg_uri")]

    def invoke(*args, input=None):
        result = runner.invoke(cli, where + [str(a) for a in args], input=input)
        assert "Traceback" not in result.output
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke


@pytest.fixture
def docs(run, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\n## Backups\n\nBackups run every night at two.\n")
    (folder / "hr.txt").write_text("Holidays are booked through the HR portal.")
    run("kb", "create", "Docs", "--keyword-only")
    run("kb", "create", "HR", "--keyword-only")
    run("add", "Docs", folder / "guide.md")
    run("add", "HR", folder / "hr.txt")


def test_ask_streams_the_answer_and_prints_sources(run, docs, chat_server):
    chat_server.reply(tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply("Backups run nightly at two [1].")
    r = run("ask", "--kb", "Docs", "When do backups run?")
    assert r.exit_code == 0, r.output
    assert "Backups run nightly at two [1]." in r.stdout
    assert "Sources:" in r.stdout and "[1] guide.md § Guide › Backups — Docs" in r.stdout
    assert "[kb_search] backups" in r.stderr and "1 result from Docs" in r.stderr
    # --kb made Docs the only KB of the conversation
    assert chat_server.chat_requests[0]["messages"][0]["content"].count('- "') == 1
    listed = json.loads(run("conversations", "list", "--json").stdout)["data"]
    assert len(listed) == 1 and listed[0]["title"] == "When do backups run?"
    shown = run("conversations", "show", listed[0]["id"][:8]).stdout
    assert "When do backups run?" in shown and "[kb_search]" in shown and "guide.md" in shown
    source = run("conversations", "source", listed[0]["id"], "1").stdout
    assert "Backups run every night at two." in source


def test_ask_json_and_continuing_a_conversation(run, docs, chat_server):
    chat_server.reply(tool_calls=[("kb_search", {"query": "holidays"})])
    chat_server.reply("Use the HR portal.")
    body = json.loads(run("ask", "--json", "How do I book holidays?").stdout)
    assert body["status"] == "complete" and body["answer"] == "Use the HR portal."
    assert body["tool_calls"][0]["name"] == "kb_search" and body["tool_calls"][0]["ok"]
    assert body["sources"][0]["source"] == "hr.txt" and body["sources"][0]["kb"] == "HR"
    chat_server.reply("Yes, any time.")
    again = json.loads(run("ask", "--json", "-c", body["conversation_id"], "Can I do it now?").stdout)
    assert again["conversation_id"] == body["conversation_id"]
    assert [m["role"] for m in chat_server.chat_requests[-1]["messages"]][-3:] == ["tool", "assistant", "user"]


def test_ask_failure_is_one_clear_line_and_exit_1(run, chat_server):
    chat_server.error(503, "upstream is down")
    r = run("ask", "Anyone there?")
    assert r.exit_code == 1
    assert "error: provider 'local', model 'tiny'" in r.stderr and "upstream is down" in r.stderr
    r = run("ask", "   ")
    assert r.exit_code == 1 and "the question is empty" in r.output


def test_kb_toggles_persona_and_project_commands(run, docs, chat_server):
    run("conversations", "list")
    r = run(
        "persona",
        "create",
        "Helper",
        "--prompt",
        "Be brief.",
        "--model",
        "helper-model",
        "--auto-search",
        "HR",
        "--json",
    )
    assert json.loads(r.stdout)["knowledge_bases"][0]["auto_search"] is True
    run("project", "create", "Onboarding", "--kb", "Docs")
    chat_server.reply("Brief answer.")
    body = json.loads(run("ask", "--json", "--persona", "Helper", "--project", "Onboarding", "Holidays?").stdout)
    sent = chat_server.chat_requests[-1]
    assert sent["model"] == "helper-model" and sent["messages"][0]["content"].startswith("Be brief.")
    assert body["sources"][0]["via"] == "auto_search"
    toggles = json.loads(run("conversations", "kbs", body["conversation_id"], "--json").stdout)["data"]
    assert {(t["name"], t["origin"], t["locked"]) for t in toggles} == {
        ("Docs", "project", True),
        ("HR", "persona", True),
    }
    r = run("conversations", "kbs", body["conversation_id"], "--off", "HR")
    assert r.exit_code == 1 and "comes from this conversation's persona" in r.output
    assert "Helper" in run("persona", "list").stdout and "Onboarding" in run("project", "list").stdout
    run("persona", "edit", "Helper", "--no-kbs")
    assert json.loads(run("persona", "show", "Helper", "--json").stdout)["knowledge_bases"] == []
    run("conversations", "rename", body["conversation_id"], "Time off")
    assert "Time off" in run("conversations", "list").stdout
    run("conversations", "rm", body["conversation_id"])
    run("persona", "rm", "Helper")
    run("project", "rm", "Onboarding")
    assert json.loads(run("conversations", "list", "--json").stdout)["total"] == 0


def test_note_commands(run):
    added = json.loads(run("note", "add", "--title", "Wifi", "The guest password is on the fridge", "--json").stdout)
    run("note", "add", "-", input="Call the plumber on Monday\n")
    assert "Wifi" in run("note", "list").stdout
    hits = json.loads(run("note", "search", "password", "--json").stdout)["results"]
    assert [h["id"] for h in hits] == [added["id"]]
    r = run("note", "search", "plumber", "--semantic")
    assert "keyword" in r.stdout and "no embedding model" in r.stderr
    run("note", "edit", added["id"][:8], "The password changed")
    assert "changed" in run("note", "show", added["id"]).stdout
    run("note", "rm", added["id"])
    assert json.loads(run("note", "list", "--json").stdout)["total"] == 1


def test_conversations_keep_their_old_chat_spellings(run, chat_server):
    chat_server.reply("Hello.")
    conv = json.loads(run("ask", "--json", "Hi there").stdout)["conversation_id"]
    listed = run("chat", "list", "--json")  # scripts written before 'kbdesk chat' chatted
    assert json.loads(listed.stdout)["data"][0]["id"] == conv
    assert "'kbdesk chat list' is now 'kbdesk conversations list'" in listed.stderr
    assert "Hi there" in run("conv", "show", conv[:8]).stdout
    run("chat", "rename", conv, "Greeting")
    assert "Greeting" in run("conversations", "list").stdout
    help_text = run("--help").stdout
    assert "conversations" in help_text and "\n  conv " not in help_text  # the short alias stays hidden
    assert "/kbs" in run("chat", "--help").stdout


def test_ask_retrieval_and_max_tokens_options_and_what_json_tells(run, docs, chat_server):
    chat_server.reply("Backups run every", finish="length")
    body = json.loads(
        run("ask", "--json", "--kb", "Docs", "--retrieval", "off", "--max-tokens", "300", "When do backups run?").stdout
    )
    sent = chat_server.chat_requests[-1]
    assert "tools" not in sent and sent["max_tokens"] <= 300  # the default is 1024
    assert body["finish_reason"] == "length" and body["cut"] is True
    assert body["retrieval"] == "off" and body["trimmed"] == 0
    chat_server.reply("Nightly, at two.")
    body = json.loads(run("ask", "--json", "--kb", "Docs", "--retrieval", "always", "When do backups run?").stdout)
    assert body["retrieval"] == "auto" and body["cut"] is False and body["sources"][0]["source"] == "guide.md"


def test_ask_says_on_stderr_what_was_searched_and_when_the_answer_was_cut(run, docs, chat_server):
    chat_server.reply("From memory: weekly.")
    r = run("ask", "--kb", "Docs", "--retrieval", "tool", "When do backups run?")
    assert r.exit_code == 0 and r.stdout.strip() == "From memory: weekly."  # stdout is the answer alone
    assert "the model did not search Docs" in r.stderr
    chat_server.reply("Backups run every", finish="length")
    r = run("ask", "--kb", "Docs", "--retrieval", "always", "When do backups run?")
    assert r.exit_code == 0 and "Backups run every" in r.stdout and "Sources:" in r.stdout
    assert "searched Docs" in r.stderr and "cut at the length limit" in r.stderr
    assert "cut at the length limit" not in r.stdout


def test_without_a_chat_model_ask_and_chat_say_how_to_set_one(chat_server, kbdesk_home):
    from kbdesk.paths import get_paths

    get_paths().config_file.parent.mkdir(parents=True, exist_ok=True)
    get_paths().config_file.write_text(f'[providers.local]\nkind = "custom"\nbase_url = "{chat_server.base_url}"\n')
    runner = CliRunner()
    for args in (["ask", "Hello?"], ["chat"]):
        r = runner.invoke(cli, args, input="Hello?\n")
        assert r.exit_code == 1
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "kbdesk model set chat PROVIDER MODEL" in lines[0]
        assert "Settings → Model roles" in lines[0]
    assert chat_server.chat_requests == []
    assert json.loads(runner.invoke(cli, ["conversations", "list", "--json"]).stdout)["total"] == 0
    runner.invoke(cli, ["persona", "create", "Bot", "--model", "bot-model"])
    chat_server.reply("Beep.")
    r = runner.invoke(cli, ["ask", "--persona", "Bot", "Hello?"])  # the persona's model will do
    assert r.exit_code == 0 and "Beep." in r.stdout and chat_server.chat_requests[-1]["model"] == "bot-model"


def test_persona_retrieval_and_max_tokens(run, docs, chat_server):
    made = json.loads(run("persona", "create", "Terse", "--retrieval", "off", "--max-tokens", "200", "--json").stdout)
    assert made["retrieval"] == "off" and made["max_tokens"] == 200
    assert "retrieval: off, max_tokens: 200" in run("persona", "show", "Terse").stdout
    chat_server.reply("Short.")
    run("ask", "--persona", "Terse", "When do backups run?")
    sent = chat_server.chat_requests[-1]
    assert "tools" not in sent and sent["max_tokens"] <= 200
    edited = json.loads(run("persona", "edit", "Terse", "--retrieval", "default", "--max-tokens", "0", "--json").stdout)
    assert edited["retrieval"] is None and edited["max_tokens"] is None
    r = run("persona", "create", "Bad", "--retrieval", "sometimes")
    assert r.exit_code == 2 and "sometimes" in r.output
