"""``kbdesk ask``, ``chat``, ``note``, ``persona`` and ``project`` through click's runner."""

import json

import pytest
from click.testing import CliRunner

from chat_support import write_config
from kbdesk.cli.main import cli


@pytest.fixture
def run(chat_server):
    write_config(chat_server)
    runner = CliRunner()

    def invoke(*args, input=None):
        result = runner.invoke(cli, [str(a) for a in args], input=input)
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
    listed = json.loads(run("chat", "list", "--json").stdout)["data"]
    assert len(listed) == 1 and listed[0]["title"] == "When do backups run?"
    shown = run("chat", "show", listed[0]["id"][:8]).stdout
    assert "When do backups run?" in shown and "[kb_search]" in shown and "guide.md" in shown
    source = run("chat", "source", listed[0]["id"], "1").stdout
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
    run("chat", "list")
    r = run("persona", "create", "Helper", "--prompt", "Be brief.", "--model", "helper-model",
            "--auto-search", "HR", "--json")
    assert json.loads(r.stdout)["knowledge_bases"][0]["auto_search"] is True
    run("project", "create", "Onboarding", "--kb", "Docs")
    chat_server.reply("Brief answer.")
    body = json.loads(run("ask", "--json", "--persona", "Helper", "--project", "Onboarding", "Holidays?").stdout)
    sent = chat_server.chat_requests[-1]
    assert sent["model"] == "helper-model" and sent["messages"][0]["content"].startswith("Be brief.")
    assert body["sources"][0]["via"] == "auto_search"
    toggles = json.loads(run("chat", "kbs", body["conversation_id"], "--json").stdout)["data"]
    assert {(t["name"], t["origin"], t["locked"]) for t in toggles} == {("Docs", "project", True),
                                                                        ("HR", "persona", True)}
    r = run("chat", "kbs", body["conversation_id"], "--off", "HR")
    assert r.exit_code == 1 and "comes from this conversation's persona" in r.output
    assert "Helper" in run("persona", "list").stdout and "Onboarding" in run("project", "list").stdout
    run("persona", "edit", "Helper", "--no-kbs")
    assert json.loads(run("persona", "show", "Helper", "--json").stdout)["knowledge_bases"] == []
    run("chat", "rename", body["conversation_id"], "Time off")
    assert "Time off" in run("chat", "list").stdout
    run("chat", "rm", body["conversation_id"])
    run("persona", "rm", "Helper")
    run("project", "rm", "Onboarding")
    assert json.loads(run("chat", "list", "--json").stdout)["total"] == 0


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
