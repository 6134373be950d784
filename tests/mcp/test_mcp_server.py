"""``kbdesk mcp`` driven the way an MCP client drives it: the official SDK's client
starts it as a subprocess and talks over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client

from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.chat.tools import KB_SEARCH_TOOL, NOTE_SEARCH_TOOL
from mcp import Client
from vault_support import MATCHING, vault_kb

T = TypeVar("T")

FILES = {
    "sso.md": "# Single sign-on\n\nTo configure SSO, open Settings > Security and paste the metadata URL.\n",
    "backups.txt": "Backups run nightly at 02:00 and are kept for thirty days.\n",
    "tricky.md": "# Tricky\n\nThe walrus \x1b[2J\x1b]0;pwned\x07 sleeps on the ice floe.\n",
}


def run_client(work: Callable[[Client], Awaitable[T]], *args: str, mcp_args: tuple[str, ...] = (), errlog=None) -> T:
    """``work(client)`` against ``kbdesk [args] mcp [mcp_args]`` in a child process (its
    stderr into ``errlog``, a file, when given)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbdesk.cli.main", *args, "mcp", *mcp_args],
        env={"KBDESK_HOME": os.environ["KBDESK_HOME"], **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}},
    )
    out: dict[str, T] = {}

    async def main() -> None:
        with anyio.fail_after(60):
            transport = stdio_client(params, errlog=errlog) if errlog is not None else params
            async with Client(transport) as client:
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
    schema = tools["kb_search"].input_schema
    assert tools["kb_search"].description == spec["description"]
    assert {k: v for k, v in schema["properties"].items() if k != "kbs"} == spec["parameters"]["properties"]
    assert schema["properties"]["kbs"]["type"] == "array" and schema["required"] == ["query"]
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


def test_with_no_knowledge_base_kb_search_says_so_as_a_tool_result(kbdesk_home):
    open_desk().close()

    async def work(client):
        names = [t.name for t in (await client.list_tools()).tools]
        return names, await client.call_tool("kb_search", {"query": "anything"})

    names, found = run_client(work)
    assert "kb_search" in names
    assert found.is_error and "no knowledge base to search yet" in found.content[0].text
    assert "no tool named" not in found.content[0].text


def test_bad_input_is_an_error_not_silently_changed(tmp_path, kbdesk_home):
    _desk(tmp_path).close()

    async def work(client):
        calls = {
            "zero": {"query": "backups", "max_results": 0},
            "negative": {"query": "backups", "max_results": -5},
            "huge": {"query": "backups", "max_results": 1000},
            "limit": {"query": "backups", "limit": 3},
            "unknown": {"query": "backups", "colour": "red"},
            "kbs_not_list": {"query": "backups", "kbs": "Handbook"},
            "kbs_unknown": {"query": "backups", "kbs": ["Nope"]},
        }
        out = {k: await client.call_tool("kb_search", v) for k, v in calls.items()}
        out["tool"] = await client.call_tool("kb_find", {"query": "backups"})
        out["ok"] = await client.call_tool("kb_search", {"query": "backups", "max_results": 20})
        return out

    out = run_client(work)
    text = {k: v.content[0].text for k, v in out.items()}
    for key in ("zero", "negative", "huge"):
        assert out[key].is_error and "max_results must be from 1 to 20" in text[key], text[key]
    assert out["limit"].is_error and "unknown argument 'limit' (the number of results is max_results)" in text["limit"]
    assert out["unknown"].is_error and "unknown argument 'colour'" in text["unknown"]
    assert out["kbs_not_list"].is_error and "kbs must be a non-empty list" in text["kbs_not_list"]
    assert (
        out["kbs_unknown"].is_error
        and "'Nope' is not one of the knowledge bases offered (Handbook)" in text["kbs_unknown"]
    )
    assert out["tool"].is_error and "the tools are: kb_search, kb_list, note_search" in text["tool"]
    assert not out["ok"].is_error


def test_kbs_narrows_the_search_by_name_or_id(tmp_path, kbdesk_home):
    desk = _desk(tmp_path)
    other = desk.create_kb("Recipes", keyword_only=True)
    desk.add(other.id, [write_files(tmp_path / "food", {"soup.md": "# Soup\n\nBackups of soup run nightly.\n"})])
    desk.close()

    async def work(client):
        both = await client.call_tool("kb_search", {"query": "backups nightly"})
        by_name = await client.call_tool("kb_search", {"query": "backups nightly", "kbs": ["Recipes"]})
        by_id = await client.call_tool("kb_search", {"query": "backups nightly", "kbs": [other.id]})
        by_prefix = await client.call_tool("kb_search", {"query": "backups nightly", "kbs": [other.id[:8]]})
        return both, by_name, by_id, by_prefix

    both, by_name, by_id, by_prefix = run_client(work)
    assert {r["kb"] for r in both.structured_content["results"]} == {"Handbook", "Recipes"}
    for found in (by_name, by_id, by_prefix):
        assert not found.is_error
        assert [r["source"] for r in found.structured_content["results"]] == ["soup.md"]
        assert found.structured_content["searched_kbs"] == ["Recipes"]


def test_a_bad_resource_read_is_one_line_and_no_traceback(tmp_path, kbdesk_home):
    desk = _desk(tmp_path)
    kb = desk.kb("Handbook").id
    desk.close()
    errors: dict[str, str] = {}

    async def work(client):
        for label, uri in {
            "not ours": "kbdesk://elsewhere/1",
            "no kb": "kbdesk://kb/00000000-0000-0000-0000-000000000000/documents/00000000-0000-0000-0000-000000000000",
            "no doc": f"kbdesk://kb/{kb}/documents/00000000-0000-0000-0000-000000000000",
        }.items():
            try:
                await client.read_resource(uri)
            except Exception as exc:  # noqa: BLE001 - the SDK raises the server's error
                errors[label] = str(exc)
        return (await client.list_tools()).tools  # still serving

    with open(tmp_path / "stderr.txt", "w") as errlog:
        assert run_client(work, errlog=errlog)
    logged = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in logged, logged
    assert "not a kbdesk document" in errors["not ours"] and "\n" not in errors["not ours"]
    assert "is offered here" in errors["no kb"]
    assert "no document 00000000-0000-0000-0000-000000000000 in Handbook" in errors["no doc"]


def test_a_query_that_cannot_be_embedded_is_answered_by_keyword_with_a_notice(tmp_path, kbdesk_home, fake_openai):
    from ingest_support import configure_provider

    configure_provider(fake_openai)
    desk = open_desk()
    desk.create_kb("Vec", model_id="text-embedding-3-small", provider="fake")
    desk.add("Vec", [write_files(tmp_path / "docs", FILES)])
    desk.close()
    fake_openai.stop()

    async def work(client):
        return await client.call_tool("kb_search", {"query": "backups nightly"})

    found = run_client(work)
    assert not found.is_error
    assert found.structured_content["keyword_fallback"] == ["Vec"]
    assert found.structured_content["notice"] == "keyword search only in Vec: the query could not be embedded"
    assert found.structured_content["results"][0]["source"] == "backups.txt"


def test_filters_narrow_kb_search_and_a_bad_one_is_a_tool_error_naming_the_field(kbdesk_home):
    desk = open_desk()
    vault_kb(desk)
    desk.close()

    async def work(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        narrowed = await client.call_tool(
            "kb_search", {"query": "roadmap", "max_results": 10, "filters": {"tags": ["q3"], "path": "work/**"}}
        )
        as_text = await client.call_tool("kb_search", {"query": "roadmap", "filters": {"type": "pdf"}})
        bad = await client.call_tool("kb_search", {"query": "roadmap", "filters": {"since": "last week"}})
        unknown = await client.call_tool("kb_search", {"query": "roadmap", "filters": {"folder": "work"}})
        slow_for_a_regex = await client.call_tool(
            "kb_search", {"query": "roadmap", "filters": {"path": "*?" * 14 + "Z"}}
        )
        refused = [
            await client.call_tool("kb_search", {"query": "roadmap", "filters": f})
            for f in ({"path": "*?" * 30 + "Z"}, {"exclude": "**/" * 500})
        ]
        return tools, narrowed, as_text, bad, unknown, slow_for_a_regex, refused

    tools, narrowed, as_text, bad, unknown, slow_for_a_regex, refused = run_client(work)  # within 60 s, or it fails
    described = tools["kb_search"].input_schema["properties"]["filters"]
    assert described["type"] == "object" and {"path", "type", "since", "date", "tags"} <= set(described["properties"])
    assert not narrowed.is_error
    assert {r["source"] for r in narrowed.structured_content["results"]} == MATCHING
    assert narrowed.structured_content["filters"] == {"path": ["work/**"], "tags": ["q3"]}
    assert [r["source"] for r in as_text.structured_content["results"]] == ["work/roadmap-review.pdf"]
    assert bad.is_error and "'since' must be a date like 2026-11-01" in bad.content[0].text
    assert "\n" not in bad.structured_content["error"]
    assert unknown.is_error and "unknown field 'folder'" in unknown.content[0].text
    assert not slow_for_a_regex.is_error and slow_for_a_regex.structured_content["results"] == []
    assert [r.is_error for r in refused] == [True, True]
    assert "'path' has a glob with 60 wildcards (at most 32)" in refused[0].content[0].text
    assert "'exclude' has a glob of 1500 characters (at most 256)" in refused[1].content[0].text
