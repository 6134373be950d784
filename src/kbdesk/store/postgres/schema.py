"""The Postgres schema: the seed's migration ``008_knowledge_bases.sql`` plus kbdesk's extras.

The seed's four tables are created exactly as seed 000 §1 writes them (``vector(3072)``,
zero-padded vectors, the real dimension in ``embedding_config.dimensions``), and only
when they do not exist: on a team server that already has them they are used as they
are. Everything kbdesk adds is either a nullable or defaulted column on those tables
(so a program that only knows the seed's columns reads and writes them unchanged) or a
table of its own whose name starts with ``kbdesk_``.

Migrations are an ordered list of named functions, each applied in its own transaction
with its row in ``kbdesk_migrations`` under an advisory lock, and written with
``IF NOT EXISTS`` throughout, so running them again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kbdesk.errors import SchemaTooNewError, StoreError
from kbdesk.store.postgres.keyword import install as install_keyword_stats
from kbdesk.store.postgres.rls import install_row_security
from kbdesk.store.postgres.seed import MINIMAL_TABLES, SEED_008

MIGRATION_LOCK = 0x6B62_6465_736B  # "kbdesk": the advisory lock key of migrations
MISSING_PGVECTOR = (
    "the PostgreSQL server has no pgvector extension, which kbdesk needs for the seed's vector(3072) column: "
    "install pgvector on the server (https://github.com/pgvector/pgvector; packages are named "
    "postgresql-NN-pgvector) and run again")


def _ensure_pgvector(conn: Any) -> None:
    installed = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if installed:
        return
    available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if not available:
        raise StoreError(MISSING_PGVECTOR)
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as exc:  # psycopg.errors.InsufficientPrivilege, mostly
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return  # created meanwhile by someone who does not take kbdesk's lock
        raise StoreError("pgvector is installed on the server but not enabled in this database, and this user "
                         f"may not enable it ({_first_line(exc)}): ask an administrator to run "
                         "CREATE EXTENSION vector; in this database") from None


def team_members_ddl(table: str) -> str:
    """A team membership table (kbdesk's, where the server has none of its own)."""
    return f"""CREATE TABLE IF NOT EXISTS {table} (
            team_id  UUID NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
            user_id  UUID NOT NULL,
            role     TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('member', 'admin')),
            added_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (team_id, user_id)
        )"""


def _m001_seed_008(conn: Any) -> None:
    # Minimal users / teams (with members and admins) / channels, only when the server
    # has none: the seed's foreign keys point at teams and channels.
    own = []
    for table, ddl in MINIMAL_TABLES:
        if not _table_exists(conn, table):
            conn.execute(ddl)
            own.append(table)
    if "teams" in own:  # the team server's own teams table keeps its own membership model
        conn.execute(team_members_ddl("team_members"))
    for statement in SEED_008:
        conn.execute(statement)
    conn.execute("""CREATE TABLE IF NOT EXISTS kbdesk_settings (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""")
    if own:
        conn.execute("INSERT INTO kbdesk_settings(key, value) VALUES ('own_tables', %s) ON CONFLICT (key) DO NOTHING",
                     (",".join(own),))


def _m002_kbdesk_columns(conn: Any) -> None:
    # discoverable (seed 002); the ingestion lifecycle's columns; seq, the integer key
    # shared with the search module; content_tsv, the keyword index (generated, so a
    # seed writer's rows are indexed too).
    for statement in [
        "ALTER TABLE knowledge_bases ADD COLUMN IF NOT EXISTS discoverable BOOLEAN NOT NULL DEFAULT true",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS content_hash TEXT",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS source_path TEXT",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS source_mtime DOUBLE PRECISION",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS claimed_by TEXT",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS replaces_id UUID",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS extracted_sections JSONB",
        "CREATE INDEX IF NOT EXISTS idx_kbdoc_hash ON kb_documents(kb_id, content_hash)",
        "CREATE INDEX IF NOT EXISTS idx_kbdoc_source ON kb_documents(kb_id, source_path)",
        "CREATE INDEX IF NOT EXISTS idx_kbdoc_status ON kb_documents(status)",
        "ALTER TABLE kb_chunks ADD COLUMN IF NOT EXISTS seq BIGINT GENERATED BY DEFAULT AS IDENTITY",
        "CREATE UNIQUE INDEX IF NOT EXISTS idx_kbchunk_seq ON kb_chunks(seq)",
        "ALTER TABLE kb_chunks ADD COLUMN IF NOT EXISTS content_hash TEXT",
        "CREATE INDEX IF NOT EXISTS idx_kbchunk_hash ON kb_chunks(content_hash)",
        "CREATE INDEX IF NOT EXISTS idx_kbchunk_doc_index ON kb_chunks(document_id, chunk_index)",
        # (the first 256k characters: a tsvector stops at 1 MB, and a longer chunk must
        # not fail its batch)
        "ALTER TABLE kb_chunks ADD COLUMN IF NOT EXISTS content_tsv tsvector "
        "GENERATED ALWAYS AS (to_tsvector('english'::regconfig, left(content, 262144))) STORED",
        "CREATE INDEX IF NOT EXISTS idx_kbchunk_tsv ON kb_chunks USING gin (content_tsv)",
    ]:
        conn.execute(statement)


def _m003_kbdesk_tables(conn: Any) -> None:
    # kbdesk's own tables, prefixed so they never meet a team server's audit_log or
    # usage_log. Original document bytes copied by an export live in
    # kbdesk_document_blobs (the seed keeps them in an object store kbdesk cannot reach).
    for statement in [
        """CREATE TABLE IF NOT EXISTS kbdesk_audit_log (
            id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            user_id    UUID,
            action     TEXT NOT NULL,
            kb_id      UUID,
            target     TEXT,
            details    JSONB NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX IF NOT EXISTS idx_kbdesk_audit_kb ON kbdesk_audit_log(kb_id)",
        """CREATE TABLE IF NOT EXISTS kbdesk_usage_log (
            id                BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
            user_id           UUID,
            role              TEXT NOT NULL,
            provider          TEXT NOT NULL DEFAULT '',
            model             TEXT NOT NULL DEFAULT '',
            kb_id             UUID,
            prompt_tokens     INT,
            completion_tokens INT,
            total_tokens      INT,
            inputs            INT NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE IF NOT EXISTS kbdesk_embedding_cache (
            model      TEXT NOT NULL,
            text_hash  TEXT NOT NULL,
            dimensions INT NOT NULL,
            embedding  BYTEA NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (model, text_hash)
        )""",
        """CREATE TABLE IF NOT EXISTS kbdesk_document_blobs (
            document_id UUID PRIMARY KEY REFERENCES kb_documents(id) ON DELETE CASCADE,
            data        BYTEA NOT NULL
        )""",
    ]:
        conn.execute(statement)


Migration = tuple[str, Callable[[Any], None]]

def _m004_one_document_per_path(conn: Any) -> None:
    # As on SQLite (store/migrations.py, step 7): a source path has one row per KB
    # (partial unique index); ``version`` moves with every claim of new work;
    # ``indexed_at``/``indexed_hash`` say which version the chunks come from;
    # ``error_kind`` whether a failure is the file's own (remembered) or retried.
    # Rows an older kbdesk left twice for one path: the newest ready one stays.
    for statement in [
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS version INT NOT NULL DEFAULT 0",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS indexed_at TIMESTAMPTZ",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS indexed_hash TEXT",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS error_kind TEXT",
        """DELETE FROM kb_documents d USING (
               SELECT id, row_number() OVER (PARTITION BY kb_id, source_path
                                             ORDER BY status = 'ready' DESC, created_at DESC, id DESC) AS n
               FROM kb_documents WHERE source_path IS NOT NULL) ranked
           WHERE d.id = ranked.id AND ranked.n > 1""",
        """UPDATE kb_documents d SET indexed_at = d.updated_at, indexed_hash = d.content_hash
           WHERE d.indexed_at IS NULL AND EXISTS (SELECT 1 FROM kb_chunks c WHERE c.document_id = d.id)""",
        """UPDATE knowledge_bases k SET
               document_count = (SELECT count(*) FROM kb_documents d WHERE d.kb_id = k.id),
               chunk_count = (SELECT count(*) FROM kb_chunks c WHERE c.kb_id = k.id),
               total_bytes = (SELECT coalesce(sum(size_bytes), 0) FROM kb_documents d WHERE d.kb_id = k.id)""",
        "DROP INDEX IF EXISTS idx_kbdoc_source",
        "CREATE UNIQUE INDEX IF NOT EXISTS idx_kbdoc_source_path ON kb_documents(kb_id, source_path) "
        "WHERE source_path IS NOT NULL",
    ]:
        conn.execute(statement)


def _m005_keyword_stats(conn: Any) -> None:
    # BM25 as SQLite's FTS5 scores it: per-KB term statistics kept exact by triggers on
    # kb_chunks, each chunk's length, and content_tsv over text with ASCII punctuation
    # made spaces (store/postgres/keyword.py; docs/BENCHMARKS-postgres.md).
    install_keyword_stats(conn)


def _m006_row_security(conn: Any) -> None:
    # Team servers: the login is the user, and the database enforces seed 002's scopes
    # with row-level security — the login-to-user map, helper functions, policies on
    # every KB table, a per-user embedding cache (store/postgres/rls.py). Needs only
    # the tables' owner; the roles and grants come with ``kbdesk pg setup``.
    install_row_security(conn)


def _m007_api_tokens(conn: Any) -> None:
    # Bearer tokens of kbdesk serve (store/tokens.py), hashed. Only the tables' owner,
    # which the server connects as, reads them: no grant to kbdesk users, and row
    # security on with no policy, so a grant made by hand still shows no row.
    for statement in [
        """CREATE TABLE IF NOT EXISTS kbdesk_api_tokens (
            id           TEXT PRIMARY KEY,
            token_hash   TEXT NOT NULL UNIQUE,
            prefix       TEXT NOT NULL,
            user_id      TEXT NOT NULL,
            username     TEXT NOT NULL,
            permissions  TEXT NOT NULL DEFAULT '',
            label        TEXT NOT NULL DEFAULT '',
            created_at   TEXT NOT NULL,
            last_used_at TEXT,
            revoked_at   TEXT
        )""",
        "REVOKE ALL ON kbdesk_api_tokens FROM PUBLIC",
        "ALTER TABLE kbdesk_api_tokens ENABLE ROW LEVEL SECURITY",
    ]:
        conn.execute(statement)


def _m008_keyword_folding(conn: Any) -> None:
    # The keyword index folds diacritics as SQLite's FTS5 does ("cafe" finds "café"):
    # kbdesk_keyword_text gets its new body, content_tsv is rewritten and the
    # statistics recounted (store/postgres/keyword.py).
    install_keyword_stats(conn)


MIGRATIONS: list[Migration] = [
    ("seed_008_knowledge_bases", _m001_seed_008),
    ("kbdesk_columns", _m002_kbdesk_columns),
    ("kbdesk_tables", _m003_kbdesk_tables),
    ("one_document_per_path", _m004_one_document_per_path),
    ("keyword_stats", _m005_keyword_stats),
    ("row_security", _m006_row_security),
    ("api_tokens", _m007_api_tokens),
    ("keyword_folding", _m008_keyword_folding),
]

REQUIRED_COLUMNS = {
    "knowledge_bases": {"id", "name", "description", "scope", "owner_id", "team_id", "embedding_config",
                        "document_count", "chunk_count", "total_bytes", "status", "created_at", "updated_at"},
    "kb_documents": {"id", "kb_id", "filename", "content_type", "size_bytes", "storage_key", "extracted_text",
                     "chunk_count", "status", "error", "uploaded_by", "created_at", "updated_at"},
    "kb_chunks": {"id", "kb_id", "document_id", "chunk_index", "content", "token_count", "embedding",
                  "metadata", "created_at"},
}


def _table_exists(conn: Any, name: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0]


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def current_version(conn: Any) -> int:
    if not _table_exists(conn, "kbdesk_migrations"):
        return 0
    return conn.execute("SELECT coalesce(max(version), 0) FROM kbdesk_migrations").fetchone()[0]


def migrate(conn: Any, migrations: list[Migration] | None = None, *, label: str = "") -> int:
    """Bring the database up to date; return the number of migrations applied.

    ``conn`` is an autocommit connection. Each step runs in its own transaction with
    its record. Enabling pgvector and every step happen under an advisory lock, so
    several kbdesk processes opening a new, empty database at once all succeed: the
    first creates the extension and the schema, the others wait and find it done.
    """
    migrations = MIGRATIONS if migrations is None else migrations
    known = len(migrations)
    found = _checked_version(conn, known, label)
    if found == known:
        _check_seed_tables(conn, label)
        return 0
    applied = 0
    with _migration_lock(conn):
        _checked_version(conn, known, label)  # a newer kbdesk may have migrated while we waited
        _ensure_pgvector(conn)
        conn.execute("""CREATE TABLE IF NOT EXISTS kbdesk_migrations (
            version    INT PRIMARY KEY,
            name       TEXT NOT NULL,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""")
        for version, (name, step) in enumerate(migrations, start=1):
            with conn.transaction():
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


def _checked_version(conn: Any, known: int, label: str) -> int:
    found = current_version(conn)
    if found > known:
        raise SchemaTooNewError(f"the database {label} has kbdesk schema version {found}, but this kbdesk knows "
                                f"only up to {known}: it was written by a newer kbdesk; upgrade kbdesk to use it")
    return found


@contextmanager
def _migration_lock(conn: Any) -> Iterator[None]:
    """kbdesk's session-level advisory lock (per database) around schema changes."""
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        yield
    finally:
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        except Exception:
            if not (conn.closed or conn.broken):
                raise
            # a lost connection: the server released the lock with the session


def _check_seed_tables(conn: Any, label: str) -> None:
    """A server whose tables lack the seed's columns is refused with the names missing."""
    rows = conn.execute("SELECT table_name, column_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
                        (list(REQUIRED_COLUMNS),)).fetchall()
    have: dict[str, set[str]] = {}
    for table, column in rows:
        have.setdefault(table, set()).add(column)
    for table, needed in REQUIRED_COLUMNS.items():
        missing = needed - have.get(table, set())
        if missing:
            raise StoreError(f"{label}: table {table} exists but lacks the seed's column(s) "
                             f"{', '.join(sorted(missing))}; it is not the seed 008_knowledge_bases schema")
