"""Remote KBs in a chat turn and over MCP: a real ``kbdesk serve`` on loopback holds the
team's KB, the desk its own; kb_search reaches both and cites both."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters
from remote_support import TeamServer, local_kb

from chat_support import write_config
from kbdesk import open_desk
from kbdesk.chat.events import Retrieval, ToolCallFinished
from kbdesk.paths import get_paths
from mcp import Client

pytestmark = pytest.mark.slow


@pytest.fixture
def team(tmp_path, kbdesk_home, monkeypatch):
    server = TeamServer(tmp_path)
    monkeypatch.setenv("TEAM_KB_TOKEN", server.token)
    yield server
    server.stop()


def _add_remote(team) -> None:
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    previous = path.read_text() if path.exists() else ""
    path.write_text(previous + f'\n[remotes.team]\nurl = "{team.url}"\ntoken_env = "TEAM_KB_TOKEN"\n')


def test_a_chat_turn_searches_and_cites_local_and_remote_kbs(team, tmp_path, chat_server):
    write_config(chat_server)
    _add_remote(team)
    local_kb(tmp_path, dict(os.environ))
    chat_server.reply("Let me look.", tool_calls=[("kb_search", {"query": "backups", "max_results": 5})])
    chat_server.reply("The team backs up nightly [1]; your laptop on Fridays [2].")
    desk = open_desk()
    try:
        events: list = []
        answer = desk.chat().ask(
            None, "When do backups run?", kbs=["Notes", "team:Product Docs"], on_event=events.append
        )
        assert answer.status == "complete"
        cited = {(s.kb, s.source) for s in answer.sources}
        assert cited == {("Notes", "notes.md"), ("team:Product Docs", "handbook.md")}
        remote = next(s for s in answer.sources if s.kb == "team:Product Docs")
        assert remote.heading and "Backups" in remote.heading and remote.document_id is None
        system = chat_server.chat_requests[0]["messages"][0]["content"]
        assert '"team:Product Docs"' in system and '"Notes"' in system
        line = next(e for e in events if isinstance(e, Retrieval))
        assert "team:Product Docs" in line.text and "Notes" in line.text
        # the binding stays with the conversation: the next turn searches both again
        active = [a.kb.name for a in desk.chat().active_kbs(answer.conversation_id)]
        assert active == ["Notes", "team:Product Docs"]

        team.stop()  # the next turn: the remote is gone, the local KB still answers
        chat_server.reply("Let me look.", tool_calls=[("kb_search", {"query": "backups"})])
        chat_server.reply("Your laptop backs up on Fridays [1].")
        events = []
        again = desk.chat().ask(answer.conversation_id, "And mine?", on_event=events.append)
        assert again.status == "complete"
        assert {s.kb for s in again.sources} == {"Notes"}
        call = next(e for e in events if isinstance(e, ToolCallFinished)).call
        assert "remote 'team' was not searched" in call.summary
        line = next(e for e in events if isinstance(e, Retrieval))
        assert "remote not reached: team (is unreachable" in line.text

        # the KB toggles show the bound remote KB, and switch it off
        toggles = {t.name: t for t in desk.chat().kb_toggles(answer.conversation_id)}
        assert toggles["team:Product Docs"].enabled and toggles["team:Product Docs"].kb_id.startswith("team:")
        desk.chat().set_kb_enabled(answer.conversation_id, toggles["team:Product Docs"].kb_id, False)
        assert [a.kb.name for a in desk.chat().active_kbs(answer.conversation_id)] == ["Notes"]
    finally:
        desk.close()


def test_an_mcp_client_searches_local_and_remote_kbs(team, tmp_path):
    _add_remote(team)
    local_kb(tmp_path, dict(os.environ))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbdesk.cli.main", "mcp"],
        env={"KBDESK_HOME": os.environ["KBDESK_HOME"], "TEAM_KB_TOKEN": team.token},
    )
    out: dict = {}

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                out["list"] = await client.call_tool("kb_list", {})
                out["all"] = await client.call_tool("kb_search", {"query": "backups"})
                out["remote"] = await client.call_tool("kb_search", {"query": "backups", "kbs": ["team:Product Docs"]})

    anyio.run(main)
    rows = out["list"].structured_content["knowledge_bases"]
    assert [(r["name"], r["scope"]) for r in rows] == [("Notes", "personal"), ("team:Product Docs", "remote")]
    found = out["all"].structured_content
    assert {(r["kb"], r["source"]) for r in found["results"]} == {
        ("Notes", "notes.md"),
        ("team:Product Docs", "handbook.md"),
    }
    only = out["remote"].structured_content["results"]
    assert [(r["kb"], r["source"]) for r in only] == [("team:Product Docs", "handbook.md")]
    assert team.token not in str(out)


def test_kbdesk_mcp_kb_offers_a_remote_kb_alone(team, tmp_path):
    _add_remote(team)
    local_kb(tmp_path, dict(os.environ))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbdesk.cli.main", "mcp", "--kb", "team:Product Docs"],
        env={"KBDESK_HOME": os.environ["KBDESK_HOME"], "TEAM_KB_TOKEN": team.token},
    )
    out: dict = {}

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                out["list"] = await client.call_tool("kb_list", {})
                out["found"] = await client.call_tool("kb_search", {"query": "backups"})

    anyio.run(main)
    assert [r["name"] for r in out["list"].structured_content["knowledge_bases"]] == ["team:Product Docs"]
    assert {r["kb"] for r in out["found"].structured_content["results"]} == {"team:Product Docs"}
