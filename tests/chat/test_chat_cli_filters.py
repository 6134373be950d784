"""Filters from the command line in the chat: ``kbdesk ask --tag …`` narrows that question's
searches, ``kbdesk conversations filter`` and ``kbdesk persona … --path`` keep default
filters, and ``kbdesk chat`` shows them and changes them with ``/filter``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from chat_support import write_config
from kbdesk import open_desk
from kbdesk.cli.main import cli
from pty_terminal import WAIT
from vault_support import MATCHING, vault_kb


@pytest.fixture
def run(chat_server):
    write_config(chat_server)
    desk = open_desk()
    vault_kb(desk)
    desk.close()
    runner = CliRunner()

    def invoke(*args):
        result = runner.invoke(cli, [str(a) for a in args])
        assert "Traceback" not in result.output
        return result

    return invoke


def searched(chat_server) -> set[str]:
    """The sources of the last tool result kbdesk sent the model."""
    tool = [m for m in chat_server.chat_requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    data = json.loads(next(line for line in tool.splitlines() if line.startswith("{")))
    return {r["source"] for r in data["results"]}


def test_ask_with_filters_narrows_that_questions_searches(run, chat_server):
    chat_server.reply(tool_calls=[("kb_search", {"query": "roadmap", "max_results": 10})])
    chat_server.reply("The work roadmap [1].")
    r = run("ask", "--tag", "q3", "--path", "work/**", "What does the roadmap say?")
    assert r.exit_code == 0, r.output
    assert searched(chat_server) == MATCHING
    assert "within path work/** · tags q3" in r.stderr
    # this question's only: the conversation keeps no filter
    conv = json.loads(run("conversations", "list", "--json").stdout)["data"][0]
    assert conv["filters"] is None


def test_a_bad_filter_flag_is_one_line_naming_it(run):
    r = run("ask", "--since", "someday", "roadmap?")
    assert r.exit_code == 1 and r.output.strip() == (
        "Error: --since must be a date like 2026-11-01 (or 2026-11-01T09:30), not 'someday'"
    )


def test_conversations_filter_shows_sets_and_clears(run, chat_server):
    chat_server.reply("Hello.")
    run("ask", "Hi")
    conv = json.loads(run("conversations", "list", "--json").stdout)["data"][0]["id"]
    assert run("conversations", "filter", conv).output.strip() == "filters: none"
    r = run("conversations", "filter", conv, "--path", "work/**", "--tag", "q3")
    assert r.output.strip() == "filters: path work/** · tags q3"
    body = json.loads(run("conversations", "filter", conv, "--json").stdout)
    assert body["filters"] == body["applied"] == {"path": ["work/**"], "tags": ["q3"]}
    chat_server.reply(tool_calls=[("kb_search", {"query": "roadmap", "max_results": 10})])
    chat_server.reply("Only work [1].")
    assert run("ask", "-c", conv, "roadmap?").exit_code == 0
    assert searched(chat_server) == MATCHING
    assert run("conversations", "filter", conv, "--clear").output.strip() == "filters: none"
    assert run("conversations", "filter", conv, "--clear", "--tag", "x").exit_code == 2


def test_a_personas_filters_are_its_conversations_defaults(run, chat_server):
    r = run("persona", "create", "Home", "--path", "home/**", "--json")
    assert json.loads(r.stdout)["filters"] == {"path": ["home/**"]}
    assert "filters: path home/**" in run("persona", "show", "Home").output
    chat_server.reply(tool_calls=[("kb_search", {"query": "roadmap"})])
    chat_server.reply("At home [1].")
    assert run("ask", "--persona", "Home", "roadmap?").exit_code == 0
    assert searched(chat_server) == {"home/roadmap.md"}
    conv = json.loads(run("conversations", "list", "--json").stdout)["data"][0]["id"]
    assert run("conversations", "filter", conv).output.strip() == "filters: path home/** (the persona’s)"
    edited = json.loads(run("persona", "edit", "Home", "--type", "pdf", "--json").stdout)
    assert edited["filters"] == {"type": ["pdf"]}
    assert json.loads(run("persona", "edit", "Home", "--no-filters", "--json").stdout)["filters"] is None


@pytest.mark.slow
def test_chat_keeps_its_filters_and_filter_changes_them(run, chat_server):
    chat_server.reply(tool_calls=[("kb_search", {"query": "roadmap", "max_results": 10})])
    chat_server.reply("Work only [1].")
    chat_server.reply(tool_calls=[("kb_search", {"query": "roadmap", "max_results": 10})])
    chat_server.reply("Drafts [1].")
    script = "/filter\nroadmap?\n/filter tag:draft\nroadmap again?\n/filter since:whenever\n/filter none\n"
    r = subprocess.run(
        [sys.executable, "-m", "kbdesk.cli.main", "chat", "--tag", "q3", "--path", "work/**"],
        input=script,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert "filters: path work/** · tags q3" in r.stdout
    assert "searched notes (kb_search), within path work/** · tags q3" in r.stderr
    assert "filters: tags draft" in r.stdout
    assert "filter since: must be a date like 2026-11-01" in r.stderr
    assert "filters: none (every document)" in r.stdout
    conv = json.loads(CliRunner().invoke(cli, ["conversations", "list", "--json"]).stdout)["data"][0]
    assert conv["filters"] is None
