"""The seed's schema on Postgres: created in an empty database, adopted on a team server's."""

from typing import Any, cast

import numpy as np
import pytest

from helpers import axis
from kbdesk import open_desk
from kbdesk.errors import SchemaTooNewError, StoreError
from kbdesk.filters import Filters
from kbdesk.store.postgres import PostgresStore
from kbdesk.store.postgres.schema import MIGRATIONS, _ensure_pgvector, migrate
from pg_support import sql, with_password

SEED_COLUMNS = {
    ("knowledge_bases", "id"): ("uuid", False, "gen_random_uuid()"),
    ("knowledge_bases", "name"): ("text", False, None),
    ("knowledge_bases", "description"): ("text", False, "''::text"),
    ("knowledge_bases", "scope"): ("text", False, "'global'::text"),
    ("knowledge_bases", "owner_id"): ("uuid", True, None),
    ("knowledge_bases", "team_id"): ("uuid", True, None),
    ("knowledge_bases", "embedding_config"): ("jsonb", False, "'{}'::jsonb"),
    ("knowledge_bases", "document_count"): ("integer", False, "0"),
    ("knowledge_bases", "chunk_count"): ("integer", False, "0"),
    ("knowledge_bases", "total_bytes"): ("bigint", False, "0"),
    ("knowledge_bases", "status"): ("text", False, "'active'::text"),
    ("knowledge_bases", "created_at"): ("timestamp with time zone", False, "now()"),
    ("knowledge_bases", "updated_at"): ("timestamp with time zone", False, "now()"),
    ("kb_documents", "id"): ("uuid", False, "gen_random_uuid()"),
    ("kb_documents", "kb_id"): ("uuid", False, None),
    ("kb_documents", "filename"): ("text", False, None),
    ("kb_documents", "content_type"): ("text", False, None),
    ("kb_documents", "size_bytes"): ("bigint", False, None),
    ("kb_documents", "storage_key"): ("text", False, None),
    ("kb_documents", "extracted_text"): ("text", True, None),
    ("kb_documents", "chunk_count"): ("integer", False, "0"),
    ("kb_documents", "status"): ("text", False, "'pending'::text"),
    ("kb_documents", "error"): ("text", True, None),
    ("kb_documents", "uploaded_by"): ("uuid", False, None),
    ("kb_documents", "created_at"): ("timestamp with time zone", False, "now()"),
    ("kb_documents", "updated_at"): ("timestamp with time zone", False, "now()"),
    ("kb_chunks", "id"): ("uuid", False, "gen_random_uuid()"),
    ("kb_chunks", "kb_id"): ("uuid", False, None),
    ("kb_chunks", "document_id"): ("uuid", False, None),
    ("kb_chunks", "chunk_index"): ("integer", False, None),
    ("kb_chunks", "content"): ("text", False, None),
    ("kb_chunks", "token_count"): ("integer", False, "0"),
    ("kb_chunks", "embedding"): ("vector(3072)", True, None),
    ("kb_chunks", "metadata"): ("jsonb", False, "'{}'::jsonb"),
    ("kb_chunks", "created_at"): ("timestamp with time zone", False, "now()"),
    ("channel_knowledge_bases", "channel_id"): ("uuid", False, None),
    ("channel_knowledge_bases", "kb_id"): ("uuid", False, None),
    ("channel_knowledge_bases", "enabled"): ("boolean", False, "true"),
    ("channel_knowledge_bases", "added_at"): ("timestamp with time zone", False, "now()"),
}
SEED_INDEXES = {"idx_kb_scope", "idx_kb_owner", "idx_kb_team", "idx_kbdoc_kb", "idx_kbchunk_kb", "idx_kbchunk_doc"}


def columns(uri):
    rows = sql(
        uri,
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, "
        "pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 "
        "AND NOT a.attisdropped",
    )
    return {(t, c): (ty, null, default) for t, c, ty, null, default in rows}


def catalog(uri):
    """Everything a migration could change: columns, indexes, constraints, extensions."""
    return (
        columns(uri),
        sorted(sql(uri, "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'")),
        sorted(
            sql(
                uri,
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE connamespace = 'public'::regnamespace",
            )
        ),
        sorted(sql(uri, "SELECT extname, extversion FROM pg_extension")),
    )


def test_an_empty_database_gets_the_seed_schema_and_minimal_tables(empty_pg_uri):
    assert not sql(empty_pg_uri, "SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    store = PostgresStore(empty_pg_uri)
    store.close()
    cols = columns(empty_pg_uri)
    for key, expected in SEED_COLUMNS.items():
        assert cols[key] == expected, key
    assert sql(empty_pg_uri, "SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    tables = {t for t, _ in cols}
    assert {
        "users",
        "teams",
        "team_members",
        "channels",
        "kbdesk_migrations",
        "kbdesk_audit_log",
        "kbdesk_usage_log",
        "kbdesk_embedding_cache",
        "kbdesk_document_blobs",
    } <= tables
    indexes = {r[0] for r in sql(empty_pg_uri, "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")}
    assert indexes >= SEED_INDEXES and "idx_kbchunk_tsv" in indexes
    check = sql(empty_pg_uri, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'kb_scope_check'")
    assert "scope = 'global'::text" in check[0][0] and "owner_id IS NULL" in check[0][0]
    cascades = sql(
        empty_pg_uri,
        "SELECT conrelid::regclass::text, confrelid::regclass::text, confdeltype "
        "FROM pg_constraint WHERE contype = 'f'",
    )
    assert ("kb_chunks", "kb_documents", "c") in cascades and ("knowledge_bases", "teams", "c") in cascades
    assert ("channel_knowledge_bases", "channels", "c") in cascades
    steps = sql(empty_pg_uri, "SELECT version, name FROM kbdesk_migrations ORDER BY version")
    assert steps == [(i + 1, name) for i, (name, _) in enumerate(MIGRATIONS)]
    # kbdesk's additions to the seed's tables are nullable, defaulted, generated or identity:
    # a writer that only knows the seed's columns inserts rows unchanged
    added = {
        k: v
        for k, v in cols.items()
        if k[0] in ("knowledge_bases", "kb_documents", "kb_chunks") and k not in SEED_COLUMNS
    }
    assert {c for _, c in added} >= {"discoverable", "content_hash", "seq", "content_tsv", "extracted_sections"}
    assert all(null or default or column == "seq" for (_, column), (_, null, default) in added.items())


def test_migrations_are_recorded_and_rerunning_them_changes_nothing(pg_uri):
    before = catalog(pg_uri)
    import psycopg

    with psycopg.connect(pg_uri, autocommit=True) as conn:
        assert migrate(conn) == 0
        for _, step in MIGRATIONS:  # even run again by hand, every step is a no-op
            with conn.transaction():
                step(conn)
    store = PostgresStore(pg_uri)
    store.close()
    assert catalog(pg_uri) == before
    assert sql(pg_uri, "SELECT count(*) FROM kbdesk_migrations")[0][0] == len(MIGRATIONS)


SERVER_TABLES = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE users (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), email TEXT NOT NULL UNIQUE);
CREATE TABLE teams (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), name TEXT NOT NULL, slug TEXT);
CREATE TABLE channels (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), name TEXT);
CREATE TABLE knowledge_bases (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(), name TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
    scope TEXT NOT NULL DEFAULT 'global', owner_id UUID, team_id UUID REFERENCES teams(id) ON DELETE CASCADE,
    embedding_config JSONB NOT NULL DEFAULT '{}', document_count INT NOT NULL DEFAULT 0,
    chunk_count INT NOT NULL DEFAULT 0, total_bytes BIGINT NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'active', created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT kb_scope_check CHECK ((scope = 'global' AND owner_id IS NULL) OR
        (scope = 'team' AND team_id IS NOT NULL) OR (scope = 'personal' AND owner_id IS NOT NULL)));
CREATE TABLE kb_documents (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(), kb_id UUID NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    filename TEXT NOT NULL, content_type TEXT NOT NULL, size_bytes BIGINT NOT NULL, storage_key TEXT NOT NULL,
    extracted_text TEXT, chunk_count INT NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'pending', error TEXT,
    uploaded_by UUID NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE TABLE kb_chunks (
    id UUID PRIMARY KEY DEFAULT gen_random_uuid(), kb_id UUID NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    document_id UUID NOT NULL REFERENCES kb_documents(id) ON DELETE CASCADE, chunk_index INT NOT NULL,
    content TEXT NOT NULL, token_count INT NOT NULL DEFAULT 0, embedding vector(3072),
    metadata JSONB NOT NULL DEFAULT '{}', created_at TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE TABLE channel_knowledge_bases (
    channel_id UUID NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    kb_id UUID NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    enabled BOOLEAN NOT NULL DEFAULT true, added_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (channel_id, kb_id));
CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, dirty BOOLEAN NOT NULL);
INSERT INTO schema_migrations VALUES (8, false);
"""
# seed 000 §5, as the team server runs it
SEED_SIMILARITY = """
SELECT c.content, c.metadata, d.filename, kb.name as kb_name, 1 - (c.embedding <=> %(q)s::vector) AS similarity
FROM kb_chunks c JOIN kb_documents d ON c.document_id = d.id JOIN knowledge_bases kb ON c.kb_id = kb.id
WHERE c.kb_id = ANY(%(kbs)s::uuid[]) AND 1 - (c.embedding <=> %(q)s::vector) > %(threshold)s
ORDER BY c.embedding <=> %(q)s::vector LIMIT %(limit)s
"""


def padded(vector):
    out = np.zeros(3072, dtype=np.float32)
    out[: len(vector)] = vector
    return "[" + ",".join(repr(float(x)) for x in out) + "]"


def test_a_team_servers_existing_tables_are_used_as_they_are(empty_pg_uri, kbdesk_home):
    for statement in SERVER_TABLES.strip().split(";\n"):
        sql(empty_pg_uri, statement)
    kb_id, doc_id, server_user = sql(
        empty_pg_uri,
        """
        WITH kb AS (INSERT INTO knowledge_bases(name, embedding_config) VALUES
                    ('Handbook', '{"provider_config_id": "p1", "model_id": "m", "dimensions": 4}') RETURNING id),
             u AS (INSERT INTO users(email) VALUES ('ops@example.com') RETURNING id)
        SELECT kb.id, gen_random_uuid(), u.id FROM kb, u""",
    )[0]
    sql(
        empty_pg_uri,
        "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
        "status, uploaded_by, extracted_text) VALUES (%s, %s, 'policy.md', 'text/markdown', 40, 'k', "
        "'ready', %s, 'Expenses are approved by the team lead.')",
        doc_id,
        kb_id,
        server_user,
    )
    sql(
        empty_pg_uri,
        f"INSERT INTO kb_chunks(kb_id, document_id, chunk_index, content, embedding) VALUES "
        f"(%s, %s, 0, 'Expenses are approved by the team lead.', '{padded([1, 0, 0, 0])}')",
        kb_id,
        doc_id,
    )
    users_before = sorted(k for k in columns(empty_pg_uri) if k[0] in ("users", "teams", "channels"))

    with open_desk(empty_pg_uri) as desk:
        assert [kb.name for kb in desk.list_kbs()] == ["Handbook"]  # global: everyone sees it
        hit = desk.search(["Handbook"], "who approves expenses", mode="keyword").results[0]
        assert hit.source == "policy.md"  # the keyword index covers the server's own rows
        # a filter reads the server's own rows too (their file type came with kbdesk's schema step)
        assert desk.document("Handbook", "policy.md").file_type == "md"
        modes: list[tuple[str, dict[str, Any]]] = [("keyword", {}), ("vector", {"query_vector": [1, 0, 0, 0]})]
        for mode, extra in modes:
            md = desk.search(["Handbook"], "who approves expenses", mode=mode, filters=Filters(types=("md",)), **extra)
            assert [r.source for r in md.results] == ["policy.md"]
            pdf = desk.search(
                ["Handbook"], "who approves expenses", mode=mode, filters=Filters(types=("pdf",)), **extra
            )
            assert pdf.results == []
        vec = desk.search(["Handbook"], "x", query_vector=[1, 0, 0, 0], mode="vector").results
        assert vec[0].similarity == pytest.approx(1.0)
        # the server's own tables are untouched; kbdesk's minimal tables are not made
        assert sorted(k for k in columns(empty_pg_uri) if k[0] in ("users", "teams", "channels")) == users_before
        assert not sql(empty_pg_uri, "SELECT to_regclass('team_members')")[0][0]
        assert sql(empty_pg_uri, "SELECT * FROM schema_migrations") == [(8, False)]
        # kbdesk writes a KB of its own; a reader that knows only the seed reads it
        mine = desk.create_kb("Mine", model_id="m", dimensions=4)
        desk.add_document("Mine", "mine.txt", ["the lighthouse keeper's log"], vectors=[[0, 1, 0, 0]])
        assert desk.kb("Handbook").embedding_config["provider_config_id"] == "p1"
    import psycopg

    with psycopg.connect(empty_pg_uri) as conn:
        rows = conn.execute(
            SEED_SIMILARITY, {"q": padded([0, 1, 0, 0]), "kbs": [mine.id, str(kb_id)], "threshold": 0.3, "limit": 5}
        ).fetchall()
        assert [(r[0], r[2], r[3]) for r in rows] == [("the lighthouse keeper's log", "mine.txt", "Mine")]
        assert rows[0][4] == pytest.approx(1.0)
        seed_view = conn.execute(
            "SELECT id, name, scope, owner_id, embedding_config, document_count, chunk_count "
            "FROM knowledge_bases WHERE name = 'Mine'"
        ).fetchone()
        assert seed_view is not None
        assert seed_view[2] == "personal" and seed_view[4]["dimensions"] == 4 and seed_view[5:] == (1, 1)
        stored = conn.execute("SELECT vector_dims(embedding) FROM kb_chunks WHERE kb_id = %s", (mine.id,)).fetchone()
        assert stored == (3072,)


def test_missing_pgvector_is_a_clear_error():
    class NoVector:
        def execute(self, *args):
            return self

        def fetchone(self):
            return None

    with pytest.raises(StoreError, match=r"no pgvector extension.*install pgvector"):
        _ensure_pgvector(cast(Any, NoVector()))  # only what the check calls


def test_a_newer_kbdesk_schema_is_refused(pg_uri):
    sql(pg_uri, "INSERT INTO kbdesk_migrations(version, name) VALUES (%s, 'future')", len(MIGRATIONS) + 5)
    with pytest.raises(SchemaTooNewError, match="newer kbdesk"):
        PostgresStore(pg_uri)


def test_tables_that_are_not_the_seeds_are_refused(empty_pg_uri):
    sql(empty_pg_uri, "CREATE TABLE kb_chunks (id uuid PRIMARY KEY, body text)")
    refused = r"schema migration 'team_schema_008_knowledge_bases'|lacks the column"
    with pytest.raises(StoreError, match=refused) as info:
        PostgresStore(empty_pg_uri)
    assert "seed" not in str(info.value)


def test_connection_errors_are_clear_and_never_show_the_password(tmp_path):
    uri = with_password(f"postgresql://kb@/nowhere?host={tmp_path}", "s3cr3t-pw")
    with pytest.raises(StoreError) as info:
        open_desk(uri)
    assert "cannot connect" in str(info.value) and "s3cr3t-pw" not in str(info.value)
    assert "***" in str(info.value)


def test_dimensions_beyond_the_seed_column_are_refused(pg_desk):
    from kbdesk.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="at most 3072"):
        pg_desk.create_kb("huge", model_id="m", dimensions=4096)
    pg_desk.create_kb("learns", model_id="m")
    with pytest.raises(InvalidInputError, match="3072"):
        pg_desk.add_document("learns", "a.txt", ["x"], vectors=[axis(0, dims=4096)])
