"""A document cannot drive the terminal: its text and its file name are shown with their
escape sequences (window title, clear screen, hyperlinks, C1 CSI, BEL) escaped, on every
human-readable output of the CLI; ``--json`` keeps the exact text.

The documents are ingested for real from files whose names and contents carry the
sequences, and the CLI runs as a user runs it, its stdout and stderr captured as text.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.text import Text

from kbdesk import open_desk
from kbdesk.cli import output
from kbdesk.cli.main import cli

TITLE = "\x1b]0;PWNED\x07"  # OSC 0: set the window title
CLEAR = "\x1b[2J"  # CSI 2J: clear the screen
LINK = "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"  # OSC 8: a hyperlink
C1_CSI = "\x9b31m"  # the one-byte C1 CSI: red
BELL = "\x07"
PAYLOAD = f"{TITLE} {CLEAR} {LINK} {C1_CSI} {BELL}"
NAME_PAYLOAD = PAYLOAD.replace("http://evil", "http:evil")  # "/" cannot be in a file name
TEXT = f"{PAYLOAD} The lighthouse keeper logs every ship. {PAYLOAD} Lighthouse lamps are cleaned at dawn."

# what a terminal would obey: C0 controls except \n and \t, DEL, C1
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def assert_inert(text: str) -> None:
    found = RAW_CONTROL.search(text)
    assert found is None, f"raw {found.group(0)!r} in {text[max(0, found.start() - 40) : found.start() + 40]!r}"


@pytest.fixture
def shelf(tmp_path: Path) -> dict[str, str]:
    """KB 'docs' with two documents holding TEXT: one ingested from a file whose name
    carries the sequences, and one whose stored file name is raw, as a database written
    by an older kbdesk or by another program (a team server's seed tables) may hold it."""
    folder = tmp_path / "inbox"
    folder.mkdir()
    for name in (f"report{NAME_PAYLOAD}.txt", "raw.md"):
        (folder / name).write_text(TEXT, encoding="utf-8")
    raw_name = f"raw{NAME_PAYLOAD}.md"
    with open_desk() as desk:
        desk.create_kb("docs", keyword_only=True)
        report = desk.add("docs", [folder])
        assert len(report.added) == 2 and not report.failed
        docs = {d.filename: d.id for d in desk.store.list_documents(desk.kb("docs").id)}
        db = desk.db_path
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE kb_documents SET filename = ? WHERE id = ?", (raw_name, docs["raw.md"]))
    conn.close()
    ingested = next(doc_id for name, doc_id in docs.items() if name != "raw.md")
    return {"raw_id": docs["raw.md"], "raw_name": raw_name, "ingested_id": ingested}


def inert_cli(*args: str):
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "400"})
    assert "Traceback" not in result.output
    assert_inert(result.stdout)
    assert_inert(result.stderr)
    return result


def test_search_results_show_the_sequences_escaped(shelf):
    for extra in ([], ["--full"]):
        r = inert_cli("search", "docs", "lighthouse", "--mode", "keyword", *extra)
        assert r.exit_code == 0, r.output
        assert r.stdout.count("2 results") == 1
        # the text and both names are there, visibly: \x1b]0;PWNED\x07 and the rest
        assert "\\x1b]0;PWNED\\x07 \\x1b[2J \\x1b]8;;http://evil\\x1b\\link\\x1b]8;;\\x1b\\ \\x9b31m \\x07" in r.stdout
        assert "docs / raw\\x1b]0;PWNED\\x07" in r.stdout
        assert "docs / report\\x1b]0;PWNED\\x07" in r.stdout


def test_search_explain_shows_the_sequences_escaped(shelf):
    r = inert_cli("search", "docs", "lighthouse", "--mode", "keyword", "--explain")
    assert r.exit_code == 0, r.output
    assert "every candidate" in r.stdout
    assert "raw\\x1b]0;PWNED\\x07" in r.stdout and "\\x1b]0;PWNED\\x07 \\x1b[2J" in r.stdout


def test_docs_and_doc_status_show_file_names_escaped(shelf):
    r = inert_cli("docs", "docs")
    assert r.exit_code == 0, r.output
    assert "raw\\x1b]0;PWNED\\x07 \\x1b[2J" in r.stdout
    assert "report\\x1b]0;PWNED\\x07 \\x1b[2J" in r.stdout
    for doc_id in (shelf["raw_id"], shelf["ingested_id"]):
        r = inert_cli("doc", "status", "docs", doc_id)
        assert r.exit_code == 0, r.output
        assert "\\x1b]0;PWNED\\x07" in r.stdout and ": ready, 1 chunks" in r.stdout


def test_errors_quoting_a_name_show_it_escaped(shelf):
    r = inert_cli("doc", "status", "docs", f"missing{CLEAR}{TITLE}")
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1
    assert "missing\\x1b[2J\\x1b]0;PWNED\\x07" in r.stderr


def test_json_keeps_the_exact_text(shelf):
    r = inert_cli("search", "docs", "lighthouse", "--mode", "keyword", "--json")
    results = json.loads(r.stdout)["results"]
    assert [hit["content"] for hit in results] == [TEXT, TEXT]
    assert shelf["raw_name"] in [hit["source"] for hit in results]

    r = inert_cli("search", "docs", "lighthouse", "--mode", "keyword", "--explain", "--json")
    assert {c["content"] for c in json.loads(r.stdout)["explain"]} == {TEXT}

    r = inert_cli("docs", "docs", "--json")
    by_id = {d["id"]: d for d in json.loads(r.stdout)["data"]}
    assert by_id[shelf["raw_id"]]["filename"] == shelf["raw_name"]

    r = inert_cli("doc", "status", "docs", shelf["raw_id"], "--json")
    assert json.loads(r.stdout)["filename"] == shelf["raw_name"]


def test_kb_list_and_show_are_inert(shelf):
    for args in (["kb", "list"], ["kb", "show", "docs"]):
        r = inert_cli(*args)
        assert r.exit_code == 0 and "docs" in r.stdout


def test_the_console_escapes_what_a_caller_forgot(monkeypatch):
    """The last line of defence: a raw Text given to the CLI's console is escaped too."""
    buffer = io.StringIO()
    monkeypatch.setattr("sys.stdout", buffer)
    console = output.stdout()
    console.print(Text(f"failed {NAME_PAYLOAD}.txt"))
    table = output.table("name")
    table.add_row(Text(CLEAR + "cell"))  # (measured before it is escaped: cropped, but inert)
    console.print(table)
    printed = buffer.getvalue()
    assert_inert(printed)
    assert "failed \\x1b]0;PWNED" in printed and "\\x1b[2J" in printed
