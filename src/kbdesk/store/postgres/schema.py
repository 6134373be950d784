"""The Postgres schema: the seed's migration ``008_knowledge_bases.sql`` plus kbdesk's extras.

The seed's four tables are created exactly as seed 000 §1 writes them (``vector(3072)``,
zero-padded vectors, the real dimension in ``embedding_config.dimensions``), and only
when they do not exist: on a team server that already has them they are used as they
are. Everything kbdesk adds is either a nullable or defaulted column on those tables
(so a program that only knows the seed's columns reads and writes them unchanged) or a
table of its own whose name starts with ``kbdesk_``.

Migrations are an ordered list of named functions, each applied in its own transaction
with its row in ``kbdesk_migrations`` under a lock only the tables' owner can take
(:func:`kbdesk.store.postgres.locks.migration_lock`), and written with ``IF NOT
EXISTS`` throughout, so running them again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kbdesk.errors import SchemaTooNewError, StoreError
from kbdesk.store.postgres.chat_tables import install_chat_filters, install_chat_tables
from kbdesk.store.postgres.keyword import install as install_keyword_stats
from kbdesk.store.postgres.locks import maintenance, migration_lock
from kbdesk.store.postgres.names import install as install_name_rule
from kbdesk.store.postgres.rls import install_row_security
from kbdesk.store.postgres.seed import MINIMAL_TABLES, SEED_008, team_members_ddl
from kbdesk.store.postgres.widths import install as install_widths

# a chunk's last heading as the index idx_kbchunk_heading holds it (step 18)
LAST_HEADING = "lower((metadata -> 'headings') ->> (-1))"

MISSING_PGVECTOR = (
    "the PostgreSQL server has no pgvector extension, which kbdesk needs for the seed's vector(3072) column: "
    "install pgvector on the server (https://github.com/pgvector/pgvector; packages are named "
    "postgresql-NN-pgvector) and run again"
)


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
    except Exception as exc:  # noqa: BLE001 - psycopg.errors.InsufficientPrivilege, mostly; re-raised below
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return  # created meanwhile by someone who does not take kbdesk's lock
        raise StoreError(
            "pgvector is installed on the server but not enabled in this database, and this user "
            f"may not enable it ({_first_line(exc)}): ask an administrator to run "
            "CREATE EXTENSION vector; in this database"
        ) from None


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
        conn.execute(
            "INSERT INTO kbdesk_settings(key, value) VALUES ('own_tables', %s) ON CONFLICT (key) DO NOTHING",
            (",".join(own),),
        )


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
    # As on SQLite (store/sqlite/migrations.py, step 7): a source path has one row per KB
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
    from kbdesk.store.tokens import tokens_ddl

    for statement in [
        tokens_ddl("kbdesk_api_tokens"),
        "REVOKE ALL ON kbdesk_api_tokens FROM PUBLIC",
        "ALTER TABLE kbdesk_api_tokens ENABLE ROW LEVEL SECURITY",
    ]:
        conn.execute(statement)


def _m008_keyword_folding(conn: Any) -> None:
    # The keyword index folds diacritics as SQLite's FTS5 does ("cafe" finds "café"):
    # kbdesk_keyword_text gets its new body, content_tsv is rewritten and the
    # statistics recounted (store/postgres/keyword.py).
    install_keyword_stats(conn)


def _m009_chat(conn: Any) -> None:
    # Conversations (kbdesk's own channels get persona_id, project_id, retrieval), their
    # messages and tool calls, personas, projects, notes with their keyword index and
    # vectors, per-user settings (store/postgres/chat_tables.py); row security on them
    # in the same transaction (store/postgres/rls.py).
    install_chat_tables(conn)
    install_row_security(conn)


def _m010_hostile_logins(conn: Any) -> None:
    # No login can break, stall or peek at another's work (store/postgres/guards.py):
    # users delete through kbdesk_delete and write no identity column (the grants come
    # from apply_grants), KB names stay free for their readers, scope moves need a
    # system admin, hidden global KBs are hidden, audit and usage rows carry the
    # database's clock and counts that are not negative (NOT VALID: rows written
    # before stay as they are).
    for table, name, check in [
        (
            "kbdesk_usage_log",
            "kbdesk_usage_counts",
            "prompt_tokens >= 0 AND completion_tokens >= 0 AND total_tokens >= 0 AND inputs >= 0",
        ),
        ("kbdesk_usage_log", "kbdesk_usage_role", "char_length(role) BETWEEN 1 AND 64"),
        (
            "kbdesk_audit_log",
            "kbdesk_audit_action",
            "action ~ '^[a-z][a-z_]*([.][a-z_]+)*$' AND char_length(action) <= 64",
        ),
    ]:
        if not conn.execute(
            "SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass(%s) AND conname = %s", (table, name)
        ).fetchone():
            conn.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({check}) NOT VALID")
    install_row_security(conn)


HIDDEN_PATH_SQL = r"""CREATE OR REPLACE FUNCTION kbdesk_hidden_path(salt text, path text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $f$
    SELECT 'kbdesk-path:' || string_agg(left(encode(sha256(convert_to(salt, 'UTF8') || '\x00'::bytea
                                                           || convert_to(prefix, 'UTF8')), 'hex'), 10), '.' ORDER BY n)
    FROM (SELECT 0 AS n, '/'::text AS prefix
          UNION ALL
          SELECT n, '/' || array_to_string(a.parts[1:n], '/')
          FROM (SELECT string_to_array(ltrim(path, '/'), '/') AS parts) a, generate_series(1, cardinality(a.parts)) n
         ) x $f$"""


def _m011_private_sources(conn: Any) -> None:
    # A document on a team server keeps its name, not where the file lay on the disk of
    # whoever added it: the paths kept so far become the hidden form kbdesk now writes
    # (kbdesk.ingest.names.hidden_source: one keyed hash per folder, salted with the
    # adder's user id), so the same file is still the same document.
    conn.execute(HIDDEN_PATH_SQL)
    conn.execute(
        "UPDATE kb_documents SET source_path = kbdesk_hidden_path(uploaded_by::text, source_path) "
        "WHERE source_path LIKE '/%'"
    )


def _m012_keyword_cjk(conn: Any) -> None:
    # Chinese, Japanese and Korean words inside running text: CJK runs indexed as their
    # characters and pairs, as on SQLite (kbdesk.store.cjk); kbdesk_keyword_text gets
    # its new body, content_tsv and keyword_length are rewritten and the statistics
    # recounted (store/postgres/keyword.py).
    install_keyword_stats(conn)


def _m013_document_facts(conn: Any) -> None:
    # What search filters look at (kbdesk.filters), as on SQLite: the folder a document
    # was added from, its file type, title, tags and other properties; documents indexed
    # before get their file type from their name (the extension of its last component).
    # Row security covers the new columns with their rows; ``pg setup`` grants them.
    for statement in (
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS folder TEXT",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS file_type TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS title TEXT",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS tags JSONB NOT NULL DEFAULT '[]'::jsonb",
        "ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS properties JSONB NOT NULL DEFAULT '{}'::jsonb",
        r"""UPDATE kb_documents SET file_type = lower(substring(filename FROM '[^/.][^/]*\.([^./ ]{1,16})$'))
            WHERE file_type = '' AND filename ~ '[^/.][^/]*\.[^./ ]{1,16}$'""",
        "CREATE INDEX IF NOT EXISTS idx_kbdoc_facts ON kb_documents(kb_id) "
        "INCLUDE (id, chunk_count, filename, file_type, source_mtime, indexed_at, tags)",
    ):
        conn.execute(statement)


def _m016_vector_widths(conn: Any) -> None:
    # Each chunk's vector also at its KB's own width, in a narrow table kept by triggers
    # on kb_chunks, for the exact scan of a filtered search (store/postgres/widths.py);
    # the chunks stored so far are filled in. Policies and grants follow (security.secure).
    schema = conn.execute("SELECT quote_ident(current_schema())").fetchone()[0]
    install_widths(conn, f"{schema}, pg_temp")


def _m014_chat_filters(conn: Any) -> None:
    # Default filters of a conversation's or persona's searches (kbdesk.filters' JSON
    # form as text; NULL: none), as on SQLite (store/postgres/chat_tables.py).
    install_chat_filters(conn)


def _m015_document_dates(conn: Any) -> None:
    # The date a document gives itself, as on SQLite (kbdesk.filters.document_date: seconds
    # since the epoch; NULL without one that parses), filled in for documents indexed
    # before from their properties; the covering index of a filter's read takes it in.
    from kbdesk.filters import document_date

    conn.execute("ALTER TABLE kb_documents ADD COLUMN IF NOT EXISTS doc_date DOUBLE PRECISION")
    rows = conn.execute(
        "SELECT id, properties FROM kb_documents WHERE properties ? 'date' OR properties ? 'created'"
    ).fetchall()
    for doc_id, props in rows:
        dated = document_date(props) if isinstance(props, dict) else None
        if dated is not None:
            conn.execute("UPDATE kb_documents SET doc_date = %s WHERE id = %s", (dated, doc_id))
    conn.execute("DROP INDEX IF EXISTS idx_kbdoc_facts")
    conn.execute(
        "CREATE INDEX idx_kbdoc_facts ON kb_documents(kb_id) "
        "INCLUDE (id, chunk_count, filename, file_type, source_mtime, indexed_at, tags, doc_date)"
    )


def _m017_one_document_per_name(conn: Any) -> None:
    # One document per file name in a KB where one came by upload, as on SQLite (step 16):
    # pairs an older kbdesk left are mended (the newest ready row stays), then a trigger
    # refuses a second row of such a name, whoever writes it (store/postgres/names.py).
    schema = conn.execute("SELECT quote_ident(current_schema())").fetchone()[0]
    install_name_rule(conn, f"{schema}, pg_temp")


def _m018_heading_index(conn: Any) -> None:
    # A chunk's last heading, lower-cased, as on SQLite (step 17): keyword search looks up
    # the chunks a query names by it (kbdesk.store.headings, store/postgres/lookup.py).
    conn.execute(f"CREATE INDEX IF NOT EXISTS idx_kbchunk_heading ON kb_chunks(({LAST_HEADING}), kb_id)")


MIGRATIONS: list[Migration] = [
    ("seed_008_knowledge_bases", _m001_seed_008),
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
    ("heading_index", _m018_heading_index),
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


def _create_migrations_table(conn: Any) -> None:
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


def _checked_version(conn: Any, known: int, label: str) -> int:
    found = current_version(conn)
    if found > known:
        raise SchemaTooNewError(
            f"the database {label} has kbdesk schema version {found}, but this kbdesk knows "
            f"only up to {known}: it was written by a newer kbdesk; upgrade kbdesk to use it"
        )
    return found


def _check_seed_tables(conn: Any, label: str) -> None:
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
                f"{label}: table {table} exists but lacks the seed's column(s) "
                f"{', '.join(sorted(missing))}; it is not the seed 008_knowledge_bases schema"
            )
