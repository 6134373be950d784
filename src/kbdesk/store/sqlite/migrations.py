"""Schema migrations for the SQLite store: an ordered list, recorded in a table.

Tables mirror seed 000 §1 (``knowledge_bases``, ``kb_documents``, ``kb_chunks``,
``channel_knowledge_bases``) with SQLite types: UUIDs as text, JSONB as JSON text,
timestamps as ISO-8601 UTC text. Never edit a migration that has shipped; append one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from kbdesk.errors import SchemaTooNewError, StoreError
from kbdesk.store.sqlite.dbapi import SqliteConnection
from kbdesk.store.sqlite.schema_steps import (
    m006_vector_bits,
    m007_one_document_per_path,
    m008_chat_retrieval,
    m009_api_tokens,
    m010_document_lookup,
    m011_keyword_cjk,
    m012_document_facts,
    m013_chat_filters,
    m014_document_dates,
    m015_document_rows,
    m016_one_document_per_name,
    m017_heading_index,
)
from kbdesk.store.sqlite.schema_v1 import (
    m001_core,
    m002_keyword_index,
    m003_vector_state,
    m004_ingestion,
    m005_chat,
)

Migration = tuple[str, Callable[[Any], None]]

MIGRATIONS: list[Migration] = [
    ("core_tables", m001_core),
    ("keyword_index", m002_keyword_index),
    ("vector_state", m003_vector_state),
    ("ingestion", m004_ingestion),
    ("chat_and_notes", m005_chat),
    ("vector_bits", m006_vector_bits),
    ("one_document_per_path", m007_one_document_per_path),
    ("chat_retrieval", m008_chat_retrieval),
    ("api_tokens", m009_api_tokens),
    ("document_lookup", m010_document_lookup),
    ("keyword_cjk", m011_keyword_cjk),
    ("document_facts", m012_document_facts),
    ("chat_filters", m013_chat_filters),
    ("document_dates", m014_document_dates),
    ("document_rows", m015_document_rows),
    ("one_document_per_name", m016_one_document_per_name),
    ("heading_index", m017_heading_index),
]


def current_version(conn: SqliteConnection) -> int:
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return row[0] or 0


def migrate(conn: SqliteConnection, migrations: list[Migration] | None = None, *, path: str = "") -> int:
    """Bring the database up to date; return the number of migrations applied.

    ``conn`` must be in autocommit mode (``isolation_level=None``). Each migration runs
    in its own ``BEGIN IMMEDIATE`` transaction together with its record, so an
    interrupted upgrade leaves the file at the last whole step.
    """
    migrations = MIGRATIONS if migrations is None else migrations
    known = len(migrations)
    found = current_version(conn)
    if found > known:
        raise SchemaTooNewError(
            f"database {path or ''} has schema version {found}, but this kbdesk knows only "
            f"up to {known}: it was written by a newer kbdesk; upgrade kbdesk to open it".replace("  ", " ")
        )
    applied = 0
    conn.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    )""")
    for version, (name, step) in enumerate(migrations, start=1):
        if version <= found:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # re-check inside the lock: another process may have migrated meanwhile
            if current_version(conn) >= version:
                conn.execute("ROLLBACK")
                continue
            _run_step(conn, step)
            conn.execute("INSERT INTO schema_migrations(version, name) VALUES (?, ?)", (version, name))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # (SQLite rolls back by itself after a full disk)
                conn.execute("ROLLBACK")
            raise
        applied += 1
    return applied


def _run_step(conn: SqliteConnection, step: Callable[[Any], None]) -> None:
    """Run a migration's SQL inside the already-open transaction.

    ``executescript`` would COMMIT first, so statements are split and run one by one.
    """
    try:
        step(_ScriptRunner(conn))
    except Exception as exc:
        raise StoreError(f"schema migration failed: {exc}") from exc


class _ScriptRunner:
    """Looks like a connection; runs ``executescript`` statement by statement."""

    def __init__(self, conn: SqliteConnection) -> None:
        self._conn = conn

    def execute(self, *args: Any) -> Any:
        return self._conn.execute(*args)

    def executescript(self, script: str) -> None:
        # any sqlite3 module parses statements the same way; the stdlib one is always here
        complete = sqlite3.complete_statement
        buffer = ""
        for line in script.splitlines(keepends=True):
            buffer += line
            if complete(buffer):
                if buffer.strip():
                    self._conn.execute(buffer)
                buffer = ""
        if buffer.strip():
            self._conn.execute(buffer)
