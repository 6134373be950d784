"""``kbdesk doctor`` checks the database file's pages (``PRAGMA quick_check``) within a
bounded time, and a damaged file is reported with a non-zero exit and what to do."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import sqlite_store
from kbdesk import open_desk
from kbdesk.cli.main import cli
from kbdesk.store.sqlite import quick_check

PAGE = 4096


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def filled_db(tmp_path: Path) -> Path:
    """A real kbdesk database with documents ingested from files, closed (WAL folded in)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(30):
        (folder / f"note{i:02}.txt").write_text(
            "\n\n".join(
                f"Note {i}, paragraph {j}: the backup runs at night and the restore uses snapshots. " * 4
                for j in range(12)
            )
        )
    db = tmp_path / "kb.db"
    with open_desk(db) as desk:
        desk.create_kb("notes", keyword_only=True)
        report = desk.add("notes", [folder])
        assert len(report.added) == 30 and not report.failed
    assert not (tmp_path / "kb.db-wal").exists()
    return db


def _damage(db: Path) -> None:
    """Write random bytes over eight pages in the middle of the file (page 1 is left alone,
    so SQLite still recognises the file and only a check finds the damage)."""
    pages = db.stat().st_size // PAGE
    assert pages > 40
    rng = random.Random(20261201)
    with db.open("r+b") as f:
        for page in range(pages // 3, pages // 3 + 8):
            f.seek(page * PAGE)
            f.write(rng.randbytes(PAGE))


def doctor(db: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), "doctor", *args])


def test_a_sound_database_passes_the_check(filled_db):
    r = doctor(filled_db)
    assert r.exit_code == 0, r.output
    assert "pages ok (quick_check)" in r.stdout
    report = json.loads(doctor(filled_db, "--json").stdout)
    assert report["ok"] is True and report["integrity"]["status"] == "ok"


def test_a_damaged_database_fails_with_what_to_do_and_is_not_written(filled_db):
    _damage(filled_db)
    before = _digest(filled_db)
    r = doctor(filled_db)
    assert r.exit_code == 1
    assert "DAMAGED" in r.stdout
    problem = [line for line in r.stderr.splitlines() if line.startswith("problem:")]
    assert len(problem) == 1
    assert f"{filled_db} is damaged" in problem[0]
    assert "restore it from a backup" in problem[0] and ".recover" in problem[0]

    report = json.loads(doctor(filled_db, "--json").stdout)
    assert report["ok"] is False
    assert report["integrity"]["status"] == "damaged" and report["integrity"]["problems"]
    # the check only read the damaged file: not a byte changed, nothing written to a WAL
    assert _digest(filled_db) == before
    wal = filled_db.with_name("kb.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_the_check_stops_when_its_time_is_up_and_says_so(filled_db):
    # no time at all: SQLite is interrupted at its first progress callback
    r = doctor(filled_db, "--check-seconds", "0")
    assert r.exit_code == 0, r.output
    assert "not finished within 0 s" in r.stdout
    with open_desk(filled_db) as desk:
        check = quick_check(filled_db, sqlite_store(desk).driver, seconds=0)
    assert check.status == "unfinished" and check.problems == ["not finished within 0 s"]


def test_the_check_runs_beside_a_live_writer(filled_db):
    # kbdesk open elsewhere, its last change still in the -wal file
    with open_desk(filled_db) as desk:
        desk.create_kb("later", keyword_only=True)
        assert filled_db.with_name("kb.db-wal").stat().st_size > 0
        assert quick_check(filled_db, sqlite_store(desk).driver).status == "ok"
