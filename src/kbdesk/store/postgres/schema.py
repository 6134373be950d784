"""The Postgres schema: the seed's migration ``008_knowledge_bases.sql`` plus kbdesk's extras.

The seed's four tables are created exactly as seed 000 §1 writes them (``vector(3072)``,
zero-padded vectors, the real dimension in ``embedding_config.dimensions``), and only
when they do not exist: on a team server that already has them they are used as they
are. Everything kbdesk adds is either a nullable or defaulted column on those tables
(so a program that only knows the seed's columns reads and writes them unchanged) or a
table of its own whose name starts with ``kbdesk_``.

Migrations are an ordered list of named functions (written in :mod:`.schema_steps`;
the list and the runner are here), each applied in its own transaction
with its row in ``kbdesk_migrations`` under a lock only the tables' owner can take
(:func:`kbdesk.store.postgres.locks.migration_lock`), and written with ``IF NOT
EXISTS`` throughout, so running them again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kbdesk.errors import SchemaTooNewError, StoreError
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.locks import maintenance, migration_lock
from kbdesk.store.postgres.schema_steps import (
    _ensure_pgvector,
    _first_line,
    _m001_seed_008,
    _m002_kbdesk_columns,
    _m003_kbdesk_tables,
    _m004_one_document_per_path,
    _m005_keyword_stats,
    _m006_row_security,
    _m007_api_tokens,
    _m008_keyword_folding,
    _m009_chat,
    _m010_hostile_logins,
    _m011_private_sources,
    _m012_keyword_cjk,
    _m013_document_facts,
    _m014_chat_filters,
    _m015_document_dates,
    _m016_vector_widths,
    _m017_one_document_per_name,
    _m018_kb_tombstones,
    _m019_heading_index,
    _table_exists,
)

Migration = tuple[str, Callable[[Any], None]]


MIGRATIONS: list[Migration] = [
    ("team_schema_008_knowledge_bases", _m001_seed_008),  # the name is a label: runs go by version
    ("kbdesk_columns", _m002_kbdesk_columns),
    ("kbdesk_tables", _m003_kbdesk_tables),
    ("one_document_per_path", _m004_one_document_per_path),
    ("keyword_stats", _m005_keyword_stats),
    ("row_security", _m006_row_security),
    ("api_tokens", _m007_api_tokens),
    ("keyword_folding", _m008_keyword_folding),
    ("chat", _m009_chat),
    ("hostile_logins", _m010_hostile_logins),
    ("private_sources", _m011_private_sources),
    ("keyword_cjk", _m012_keyword_cjk),
    ("document_facts", _m013_document_facts),
    ("chat_filters", _m014_chat_filters),
    ("document_dates", _m015_document_dates),
    ("vector_widths", _m016_vector_widths),
    ("one_document_per_name", _m017_one_document_per_name),
    ("kb_tombstones", _m018_kb_tombstones),
    ("heading_index", _m019_heading_index),
]

REQUIRED_COLUMNS = {
    "knowledge_bases": {
        "id",
        "name",
        "description",
        "scope",
        "owner_id",
        "team_id",
        "embedding_config",
        "document_count",
        "chunk_count",
        "total_bytes",
        "status",
        "created_at",
        "updated_at",
    },
    "kb_documents": {
        "id",
        "kb_id",
        "filename",
        "content_type",
        "size_bytes",
        "storage_key",
        "extracted_text",
        "chunk_count",
        "status",
        "error",
        "uploaded_by",
        "created_at",
        "updated_at",
    },
    "kb_chunks": {
        "id",
        "kb_id",
        "document_id",
        "chunk_index",
        "content",
        "token_count",
        "embedding",
        "metadata",
        "created_at",
    },
}


def current_version(conn: PgConnection) -> int:
    if not _table_exists(conn, "kbdesk_migrations"):
        return 0
    return conn.execute("SELECT coalesce(max(version), 0) FROM kbdesk_migrations").fetchone()[0]


def migrate(conn: PgConnection, migrations: list[Migration] | None = None, *, label: str = "") -> int:
    """Bring the database up to date; return the number of migrations applied.

    ``conn`` is an autocommit connection. Each step runs in its own transaction with
    its record, under the migration lock (which only the owner of ``kbdesk_migrations``
    can take: no user can stall it), so several kbdesk processes opening a new, empty
    database at once all succeed: the first creates the schema, the others wait and
    find it done. Objects of kbdesk's names that another login made are refused first
    (:func:`kbdesk.store.postgres.safety.check_not_planted`).
    """
    from kbdesk.store.postgres.safety import check_not_planted

    migrations = MIGRATIONS if migrations is None else migrations
    known = len(migrations)
    found = _checked_version(conn, known, label)
    if found == known:
        _check_seed_tables(conn, label)
        return 0
    applied = 0
    with maintenance(conn):
        check_not_planted(conn, label)
        _ensure_pgvector(conn)
        _create_migrations_table(conn)
        for version, (name, step) in enumerate(migrations, start=1):
            with conn.transaction():
                migration_lock(conn)
                _checked_version(conn, known, label)  # a newer kbdesk may have migrated while we waited
                if current_version(conn) >= version:
                    continue
                try:
                    step(conn)
                except StoreError:
                    raise
                except Exception as exc:
                    raise StoreError(f"schema migration '{name}' failed on {label}: {_first_line(exc)}") from exc
                conn.execute("INSERT INTO kbdesk_migrations(version, name) VALUES (%s, %s)", (version, name))
            applied += 1
    _check_seed_tables(conn, label)
    return applied


def _create_migrations_table(conn: PgConnection) -> None:
    """The record of migrations (its lock is the migration lock); several first openers
    may race to create it: the losers find it made."""
    import psycopg

    try:
        with conn.transaction():
            conn.execute("""CREATE TABLE IF NOT EXISTS kbdesk_migrations (
                version    INT PRIMARY KEY,
                name       TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )""")
    except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable, psycopg.errors.DuplicateObject):
        if not _table_exists(conn, "kbdesk_migrations"):
            raise


def _checked_version(conn: PgConnection, known: int, label: str) -> int:
    found = current_version(conn)
    if found > known:
        raise SchemaTooNewError(
            f"the database {label} has kbdesk schema version {found}, but this kbdesk knows "
            f"only up to {known}: it was written by a newer kbdesk; upgrade kbdesk to use it"
        )
    return found


def _check_seed_tables(conn: PgConnection, label: str) -> None:
    """A server whose tables lack the seed's columns is refused with the names missing."""
    rows = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
        (list(REQUIRED_COLUMNS),),
    ).fetchall()
    have: dict[str, set[str]] = {}
    for table, column in rows:
        have.setdefault(table, set()).add(column)
    for table, needed in REQUIRED_COLUMNS.items():
        missing = needed - have.get(table, set())
        if missing:
            raise StoreError(
                f"{label}: table {table} exists but lacks the column(s) "
                f"{', '.join(sorted(missing))} of the shared team schema (008_knowledge_bases.sql)"
            )
