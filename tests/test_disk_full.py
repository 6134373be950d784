"""A database that cannot be written during ``kbdesk add`` / ``watch`` (a full disk, an
I/O error): one line saying what happened, what finished and how to go on, exit code 4,
nothing else on stderr; nothing lost, and the next run finishes the rest."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner

from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.cli.ingest_run import EXIT_DATABASE
from kbdesk.cli.main import cli
from kbdesk.store.sqlite.store import SqliteStore

NOTES = {f"n{i:03d}.md": f"# Note {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(1200)) for i in range(120)}


def _statuses(kb: str) -> dict[str, int]:
    with open_desk() as desk:
        docs = desk.store.list_documents(desk.kb(kb).id)
    out: dict[str, int] = {}
    for doc in docs:
        out[doc.status] = out.get(doc.status, 0) + 1
    return out


def test_a_full_disk_during_add_ends_in_one_line_and_exit_4_and_the_next_add_finishes(
    tmp_path, kbdesk_home, monkeypatch
):
    folder = write_files(tmp_path / "notes", NOTES)
    runner = CliRunner()
    assert runner.invoke(cli, ["kb", "create", "notes", "--keyword-only"]).exit_code == 0
    # SQLite's own limit on the file's pages: its writes then fail exactly as on a full
    # disk ("database or disk is full", SQLITE_FULL), a few hundred KB from now
    made = SqliteStore.connection
    cap: list[int] = []

    def full_soon(self):
        conn = made(self)
        if not cap:
            cap.append(conn.execute("PRAGMA page_count").fetchone()[0] + 1200)
        conn.execute(f"PRAGMA max_page_count = {cap[0]}")  # (each connection keeps its own)
        return conn

    with monkeypatch.context() as patch:
        patch.setattr(SqliteStore, "connection", full_soon)
        result = runner.invoke(cli, ["add", "notes", str(folder)])
    assert result.exit_code == EXIT_DATABASE, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr  # no traceback, no "cannot rollback", no second error
    line = lines[0]
    assert line.startswith("Error: stopped: the disk holding ")
    assert "kbdesk.db is full (database or disk is full). " in line
    finished = int(line.split(" is full (database or disk is full). ")[1].split(" ")[0])
    assert line.endswith("then run the same `kbdesk add` again: it takes up the rest.")
    statuses = _statuses("notes")
    assert statuses.get("ready", 0) == finished < len(NOTES)  # what it says finished, did
    assert "error" not in statuses  # nothing was recorded as failed: the rest is as it was
    # room again: the same add finishes the rest
    again = runner.invoke(cli, ["add", "notes", str(folder), "--json"])
    assert again.exit_code == 0, again.output
    assert _statuses("notes") == {"ready": len(NOTES)}
    assert json.loads(again.stdout)["failed"] == []


def _limit_file_size(limit: int):
    def apply() -> None:  # in the child: a file past `limit` bytes cannot be written (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow
def test_a_disk_error_during_watch_ends_in_one_line_and_exit_4(tmp_path, kbdesk_home):
    folder = write_files(tmp_path / "notes", NOTES)
    with open_desk() as desk:
        desk.create_kb("notes", keyword_only=True)
        size = desk.db_path.stat().st_size
    watch = subprocess.run(
        [sys.executable, "-m", "kbdesk.cli.main", "watch", "notes", str(folder), "--poll", "--passes", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size(size + 512 * 1024),  # the operating system refuses the file's growth
    )
    assert watch.returncode == EXIT_DATABASE, watch.stderr
    lines = watch.stderr.splitlines()
    assert len(lines) == 1, watch.stderr
    assert lines[0].startswith("Error: stopped: cannot write ")
    assert "the disk reported an error (disk I/O error)" in lines[0]
    assert lines[0].endswith("its first pass takes up the rest.")
    finished = int(lines[0].split("(disk I/O error). ")[1].split(" ")[0])
    statuses = _statuses("notes")
    assert statuses.get("ready", 0) == finished and "error" not in statuses
    done = subprocess.run(
        [sys.executable, "-m", "kbdesk.cli.main", "add", "notes", str(folder)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert _statuses("notes") == {"ready": len(NOTES)}
