"""A database that cannot be written (a read-only file, folder or share) is still searched
and listed; every write fails with one line saying the database is read-only and why.

Tests run as root here, and root ignores permission bits. The file-system tests therefore
run the real CLI in a child process that is root without CAP_DAC_OVERRIDE (dropped from
its capability bounding set before exec), which obeys permission bits like any user; as
a normal user the child simply runs as that user. The in-process tests force read-only
mode, which takes the same SQLite path (``mode=ro``) without any permission tricks.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import axis, sqlite_store
from kbdesk import open_desk
from kbdesk.config import load_config
from kbdesk.desk import Desk
from kbdesk.errors import SchemaTooNewError
from kbdesk.models import ChunkInput
from kbdesk.paths import get_paths
from kbdesk.store import choose_driver
from kbdesk.store.sqlite import ReadOnlyDatabaseError, SqliteStore, read_only_reason
from kbdesk.store.sqlite.migrations import MIGRATIONS, migrate

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3
PR_CAPBSET_DROP = 24


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def made_db(tmp_path: Path) -> Path:
    """A closed kbdesk database: a keyword KB ingested from files, a vector KB with vectors."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "backups.txt").write_text("Backups run every night at two. Restore with the snapshot name.")
    (folder / "launch.md").write_text("# Launch\n\nThe lighthouse feature ships in March.")
    db = tmp_path / "shelf" / "kb.db"
    with open_desk(db) as desk:
        desk.create_kb("docs", keyword_only=True)
        report = desk.add("docs", [folder])
        assert len(report.added) == 2 and not report.failed
        desk.create_kb("pets", model_id="toy", dimensions=8)
        desk.add_document("pets", "cats.txt", [ChunkInput("Cats sleep all day.")], vectors=[axis(0)])
        desk.add_document("pets", "dogs.txt", [ChunkInput("Dogs fetch sticks.")], vectors=[axis(1)])
    assert sorted(p.name for p in db.parent.iterdir()) == ["kb.db", "kb.db.files"]
    return db


def _read_only_desk(db: Path) -> Desk:
    paths = get_paths()
    store = SqliteStore(db, choose_driver("auto"), read_only=True)
    return Desk(paths=paths, config=load_config(paths.config_file), db_path=db, store=store)


# ── forced read-only, in process ──────────────────────────────────────────────────
def test_a_read_only_database_is_searched_and_listed_and_refuses_every_write(made_db, tmp_path):
    before = _digest(made_db)
    desk = _read_only_desk(made_db)
    try:
        assert sqlite_store(desk).read_only
        assert sorted(kb.name for kb in desk.list_kbs()) == ["docs", "pets"]
        assert [d.filename for d in desk.store.list_documents(desk.kb("docs").id)] == ["backups.txt", "launch.md"]
        hits = desk.search(["docs"], "snapshot restore", mode="keyword").results
        assert [h.source for h in hits] == ["backups.txt"]
        # vectors too (sqlite-vec's index would need a rebuild, a write: numpy reads them)
        near = desk.search(["pets"], "x", query_vector=axis(1), mode="vector").results
        assert near[0].source == "dogs.txt"

        writes = [
            lambda: desk.create_kb("more", keyword_only=True),
            lambda: desk.rename_kb("docs", "papers"),
            lambda: desk.delete_kb("pets"),
            lambda: desk.add("docs", [tmp_path / "corpus"]),
            lambda: desk.delete_document(desk.store.list_documents(desk.kb("docs").id)[0].id),
        ]
        for write in writes:
            with pytest.raises(ReadOnlyDatabaseError) as caught:
                write()
            message = str(caught.value)
            assert (
                message == f"{made_db} is read-only (it was opened read-only): it can be searched and listed, "
                "not changed"
            )
    finally:
        desk.close()
    assert _digest(made_db) == before
    with open_desk(made_db) as writable:
        assert sorted(kb.name for kb in writable.list_kbs()) == ["docs", "pets"]


def _old_database(path: Path, steps: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    migrate(conn, MIGRATIONS[:steps])
    conn.close()


def test_a_read_only_database_that_needs_upgrading_says_so(tmp_path):
    db = tmp_path / "old.db"
    _old_database(db, 3)
    before = _digest(db)
    with pytest.raises(ReadOnlyDatabaseError) as caught:
        SqliteStore(db, choose_driver("auto"), read_only=True)
    assert str(caught.value) == (
        f"{db} has schema version 3 and this kbdesk needs {len(MIGRATIONS)}, but it is read-only "
        "(it was opened read-only): open it once where it can be written, to upgrade it"
    )
    assert _digest(db) == before


def test_a_read_only_database_from_a_newer_kbdesk_says_so(made_db):
    conn = sqlite3.connect(made_db, isolation_level=None)
    conn.execute("INSERT INTO schema_migrations(version, name) VALUES (99, 'future')")
    conn.close()
    with pytest.raises(SchemaTooNewError, match=r"schema version 99.*upgrade kbdesk"):
        SqliteStore(made_db, choose_driver("auto"), read_only=True)


def test_a_writable_database_is_not_read_only(made_db):
    assert read_only_reason(made_db) is None
    assert read_only_reason(made_db.with_name("missing.db")) is None


# ── real permissions, through the CLI in a child process ──────────────────────────
def _drop_permission_override() -> None:  # pragma: no cover - runs in the child, before exec
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def kbdesk_as_user(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, under permission bits (root without its override capabilities)."""
    return subprocess.run(
        [sys.executable, "-m", "kbdesk.cli.main", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_drop_permission_override if os.geteuid() == 0 else None,
    )


@pytest.fixture
def locked(made_db):
    """chmod helper that puts every mode back, so pytest can remove the tree."""
    changed: list[tuple[Path, int]] = []

    def chmod(path: Path, mode: int) -> None:
        changed.append((path, path.stat().st_mode & 0o7777))
        path.chmod(mode)

    yield chmod
    for path, mode in reversed(changed):
        path.chmod(mode)


def test_the_child_obeys_permission_bits(made_db, locked):
    locked(made_db.parent, 0o555)
    probe = subprocess.run(
        [sys.executable, "-c", f"open({str(made_db.parent / 'probe')!r}, 'w')"],
        capture_output=True,
        text=True,
        preexec_fn=_drop_permission_override if os.geteuid() == 0 else None,
    )
    assert probe.returncode != 0 and "Permission denied" in probe.stderr


def _reads_work(db: Path) -> None:
    r = kbdesk_as_user(db, "search", "docs", "snapshot restore", "--mode", "keyword", "--json")
    assert r.returncode == 0, r.stderr
    assert [hit["source"] for hit in json.loads(r.stdout)["results"]] == ["backups.txt"]
    r = kbdesk_as_user(db, "docs", "docs")
    assert r.returncode == 0, r.stderr
    assert "backups.txt" in r.stdout and "launch.md" in r.stdout
    r = kbdesk_as_user(db, "kb", "list", "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(kb["name"] for kb in json.loads(r.stdout)["data"]) == ["docs", "pets"]


def _writes_fail(db: Path, why: str) -> None:
    for args in (
        ["kb", "create", "more"],
        ["kb", "rename", "docs", "papers"],
        ["add", "docs", str(db.parent.parent / "corpus")],
    ):
        r = kbdesk_as_user(db, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert r.stderr == f"Error: {db} is read-only ({why}): it can be searched and listed, not changed\n"


def test_a_database_in_a_read_only_folder(made_db, locked):
    # the file itself is writable, but SQLite cannot make its -wal and -shm files beside it
    before = _digest(made_db)
    locked(made_db.parent, 0o555)
    _reads_work(made_db)
    _writes_fail(
        made_db,
        f"its folder {made_db.parent} is not writable by this user, and SQLite keeps its -wal and -shm files there",
    )
    r = kbdesk_as_user(made_db, "doctor", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["integrity"]["status"] == "ok"
    assert report["database"]["read_only"].startswith(f"its folder {made_db.parent} is not writable")
    assert report["vector_backend"]["active"] == "numpy"
    assert sorted(p.name for p in made_db.parent.iterdir()) == ["kb.db", "kb.db.files"]
    assert _digest(made_db) == before


def test_a_read_only_file_in_a_writable_folder(made_db, locked):
    before = _digest(made_db)
    locked(made_db, 0o444)
    _reads_work(made_db)
    _writes_fail(made_db, "the file is not writable by this user")
    assert _digest(made_db) == before


def test_changes_still_in_the_wal_are_read_in_a_read_only_folder(made_db, locked):
    # a writer (the owner, elsewhere) holds the database open; its newest KB is only in the -wal
    with open_desk(made_db) as writer:
        writer.create_kb("latest", keyword_only=True)
        assert made_db.with_name("kb.db-wal").stat().st_size > 0
        locked(made_db.parent, 0o555)
        r = kbdesk_as_user(made_db, "kb", "list", "--json")
        assert r.returncode == 0, r.stderr
        assert sorted(kb["name"] for kb in json.loads(r.stdout)["data"]) == ["docs", "latest", "pets"]
