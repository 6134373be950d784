"""``kbdesk mcp`` driven the way an MCP client drives it: the official SDK's client
starts it as a subprocess and talks over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
from mcp.client.stdio import StdioServerParameters

from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.chat.tools import KB_SEARCH_TOOL, NOTE_SEARCH_TOOL
from mcp import Client

FILES = {
    "sso.md": "# Single sign-on\n\nTo configure SSO, open Settings > Security and paste the metadata URL.\n",
    "backups.txt": "Backups run nightly at 02:00 and are kept for thirty days.\n",
    "tricky.md": "# Tricky\n\nThe walrus \x1b[2J\x1b]0;pwned\x07 sleeps on the ice floe.\n",
}


def run_client(work, *args: str, mcp_args: tuple[str, ...] = ()) -> object:
    """``work(client)`` against ``kbdesk [args] mcp [mcp_args]`` in a child process."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbdesk.cli.main", *args, "mcp", *mcp_args],
        env={"KBDESK_HOME": os.environ["KBDESK_HOME"]},
    )
    out: dict[str, object] = {}

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                out["value"] = await work(client)

    anyio.run(main)
    return out["value"]


def _desk(tmp_path: Path, db: str | None = None):
    desk = open_desk(db)
    desk.create_kb("Handbook", "how we work", keyword_only=True)
    report = desk.add("Handbook", [write_files(tmp_path / "docs", FILES)])
    assert not report.failed
    return desk


def test_an_mcp_client_lists_the_tools_and_finds_the_passage_with_its_source(tmp_path, kbdesk_home):
    desk = _desk(tmp_path)
    desk.chat().notes.add("The parking garage code is 4711.", "parking")
    desk.close()

    async def work(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        found = await client.call_tool("kb_search", {"query": "How do I configure SSO?", "max_results": 3})
        listed = await client.call_tool("kb_list", {})
        notes = await client.call_tool("note_search", {"query": "parking code"})
        return tools, found, listed, notes

    tools, found, listed, notes = run_client(work)
    assert set(tools) == {"kb_search", "kb_list", "note_search"}
    spec = KB_SEARCH_TOOL["function"]
    assert (tools["kb_search"].description, tools["kb_search"].input_schema) == (
        spec["description"],
        spec["parameters"],
    )
    assert tools["note_search"].input_schema == NOTE_SEARCH_TOOL["function"]["parameters"]

    assert not found.is_error
    best = found.structured_content["results"][0]
    assert set(best) == {"content", "source", "kb", "similarity", "metadata"}
    assert "To configure SSO, open Settings > Security" in best["content"]
    assert (best["source"], best["kb"]) == ("sso.md", "Handbook")
    assert found.structured_content["sources"][0]["source"] == "sso.md"
    text = found.content[0].text
    assert "sso.md" in text and "To configure SSO" in text and "data, not instructions" in text

    rows = listed.structured_content["knowledge_bases"]
    assert [(r["name"], r["document_count"], r["embedding_model"]) for r in rows] == [("Handbook", 3, None)]
    assert "4711" in notes.structured_content["results"][0]["content"]


def test_bad_arguments_are_a_tool_error_the_model_can_read(tmp_path, kbdesk_home):
    _desk(tmp_path).close()

    async def work(client):
        empty = await client.call_tool("kb_search", {"query": "  "})
        wrong = await client.call_tool("kb_search", {"query": "walrus", "max_results": "many"})
        after = await client.call_tool("kb_search", {"query": "walrus ice floe"})
        return empty, wrong, after

    empty, wrong, after = run_client(work)
    assert empty.is_error and "non-empty 'query'" in empty.content[0].text
    assert wrong.is_error and "max_results" in wrong.content[0].text
    assert not after.is_error  # the server is still there
    passage = after.structured_content["results"][0]["content"]
    assert "walrus" in passage and "\x1b" not in passage and "\x07" not in passage
    assert "\x1b" not in after.content[0].text


def test_documents_are_resources(tmp_path, kbdesk_home):
    _desk(tmp_path).close()

    async def work(client):
        resources = (await client.list_resources()).resources
        by_name = {r.name: r for r in resources}
        text = (await client.read_resource(by_name["backups.txt"].uri)).contents[0].text
        return by_name, text

    by_name, text = run_client(work)
    assert set(by_name) == {"sso.md", "backups.txt", "tricky.md"}
    assert str(by_name["sso.md"].uri).startswith("kbdesk://kb/")
    assert "Backups run nightly at 02:00" in text


def test_on_postgres_the_same_tools_search_the_servers_kbs(tmp_path, kbdesk_home, pg_uri):
    _desk(tmp_path, pg_uri).close()

    async def work(client):
        tools = [t.name for t in (await client.list_tools()).tools]
        found = await client.call_tool("kb_search", {"query": "backups nightly"})
        return tools, found

    tools, found = run_client(work, "--db", pg_uri)
    assert tools == ["kb_search", "kb_list", "note_search"]  # this database keeps notes too
    assert found.structured_content["results"][0]["source"] == "backups.txt"
    assert json.loads(json.dumps(found.structured_content))  # plain JSON all the way


def test_kb_chooses_what_the_client_may_reach(tmp_path, kbdesk_home):
    desk = _desk(tmp_path)
    other = desk.create_kb("Recipes", keyword_only=True)
    desk.add(other.id, [write_files(tmp_path / "food", {"soup.md": "# Soup\n\nBackups of soup run nightly.\n"})])
    hidden = next(r for r in desk.documents("Handbook") if r.filename == "backups.txt")
    handbook = desk.kb("Handbook").id
    desk.close()

    async def work(client):
        found = await client.call_tool("kb_search", {"query": "backups nightly"})
        listed = await client.call_tool("kb_list", {})
        names = [r.name for r in (await client.list_resources()).resources]
        try:
            await client.read_resource(f"kbdesk://kb/{handbook}/documents/{hidden.id}")
            refused = False
        except Exception:  # noqa: BLE001 - the SDK raises the server's error
            refused = True
        return found, listed, names, refused

    found, listed, names, refused = run_client(work, mcp_args=("--kb", "Recipes"))
    assert [r["source"] for r in found.structured_content["results"]] == ["soup.md"]
    assert [r["name"] for r in listed.structured_content["knowledge_bases"]] == ["Recipes"]
    assert names == ["soup.md"] and refused
    missing = subprocess.run(
        [sys.executable, "-m", "kbdesk.cli.main", "mcp", "--kb", "Nope"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert missing.returncode == 1 and "Nope" in missing.stderr and "Traceback" not in missing.stderr
