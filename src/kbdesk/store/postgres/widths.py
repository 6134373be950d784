"""Each chunk's vector also at its KB's own width, for the exact scan of a filtered search.

``kb_chunks.embedding`` is the seed's ``vector(3072)``: a KB of a 384-dimension model
stores 384 real values and 2,688 zeros, 12 KB a row, kept out of line (TOAST). An exact
scan reads each row's whole value to take its first D values, about 8 µs a row: a search
filtered to 5,000 chunks spent 40 ms on it where the HNSW index answers the whole KB in 8.

``kbdesk_chunk_vectors`` holds the first D values of every chunk (1.5 KB at 384, kept in
its row), keyed by the chunk's ``seq`` with its KB and document, so a filtered exact scan
reads a narrow table through its document index. ``kb_chunks`` itself stays as narrow as
it was (keyword search reads its rows). Statement triggers on ``kb_chunks`` keep it for
every writer — a program that knows only the seed's columns included — reading the KB's
recorded dimension (``knowledge_bases.embedding_config->>'dimensions'``); users read the
rows of the KBs they can read and write none (its ``kb_id`` gives it the per-KB policies,
:func:`kbdesk.store.postgres.rls.kbdesk_kb_tables`).

It is an accelerator only: a scan uses it for a filter when the chunks with vectors
inside the filter and its rows at the KB's width number the same (:func:`complete_sql`),
and reads ``kb_chunks`` otherwise (a KB of the column's full 3,072 dimensions, one whose
width nobody recorded, rows written with triggers disabled).
"""

from __future__ import annotations

from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.seed import VECTOR_COLUMN_DIMS

TABLE = "kbdesk_chunk_vectors"

# the KB's recorded width, where it is narrower than the stored column (a KB of the
# column's full width keeps no copy: its exact scans read kb_chunks, which is no wider)
_WIDTH = (
    "CASE WHEN k.embedding_config->>'dimensions' ~ '^[0-9]{1,5}$' "
    "AND (k.embedding_config->>'dimensions')::int BETWEEN 1 AND " + str(VECTOR_COLUMN_DIMS - 1) + " "
    "THEN (k.embedding_config->>'dimensions')::int END"
)


def _fill(source: str) -> str:
    """Rows of ``source`` (kb_chunks or a transition table) in, at their KB's width."""
    return (
        f"INSERT INTO {TABLE} AS v (seq, kb_id, document_id, embedding) "
        f"SELECT c.seq, c.kb_id, c.document_id, subvector(c.embedding, 1, w.width) FROM {source} c "
        f"JOIN knowledge_bases k ON k.id = c.kb_id CROSS JOIN LATERAL (SELECT {_WIDTH} AS width) w "
        "WHERE c.embedding IS NOT NULL AND c.seq IS NOT NULL AND w.width IS NOT NULL "
        "ON CONFLICT (seq) DO UPDATE SET kb_id = excluded.kb_id, document_id = excluded.document_id, "
        "embedding = excluded.embedding"
    )


# whether the KB's narrow rows cover the filter's chunks: as many at the KB's width as
# there are chunks with vectors inside the filter
_COMPLETE = (
    "SELECT (SELECT count(*) FROM kb_chunks WHERE kb_id = @KB@ AND document_id = ANY(%(docs)s::uuid[]) "
    f"AND embedding IS NOT NULL) = (SELECT count(*) FROM {TABLE} WHERE kb_id = @KB@ "
    "AND document_id = ANY(%(docs)s::uuid[]) AND vector_dims(embedding) = @DIMS@)"
)


def complete_sql(kb_literal: str, dims: int) -> str:
    """One boolean: whether the narrow rows of the filter's documents (``docs``) cover it."""
    return _COMPLETE.replace("@KB@", kb_literal).replace("@DIMS@", str(int(dims)))


def exact_sql(kb_literal: str, dims: int, k: int, fallback: str) -> str:
    """The best ``k`` (seq, cosine) of the filter's documents (``docs``), in one statement:
    from the narrow rows when they cover the filter, else from ``fallback`` (the same
    query over ``kb_chunks``; the branch not taken is never run)."""
    d = int(dims)
    return (
        f"WITH ok AS MATERIALIZED ({complete_sql(kb_literal, d)} AS covered) "
        "SELECT seq, sim FROM ("
        f"(SELECT seq, 1 - (embedding <=> %(q)s::vector) AS sim FROM {TABLE} WHERE (SELECT covered FROM ok) "
        f"AND kb_id = {kb_literal} AND document_id = ANY(%(docs)s::uuid[]) AND vector_dims(embedding) = {d} "
        f"ORDER BY embedding <=> %(q)s::vector, seq LIMIT {int(k)}) "
        f"UNION ALL (SELECT seq, sim FROM ({fallback}) f WHERE NOT (SELECT covered FROM ok))"
        ") u ORDER BY sim DESC, seq"
    )


def install(conn: PgConnection, path: str) -> None:
    """The table, the triggers keeping it, and the rows of the chunks stored so far;
    idempotent. ``path``: the trigger functions' fixed search_path (kbdesk's schema, then
    pg_temp): they run as the tables' owner."""
    conn.execute(f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        seq         BIGINT PRIMARY KEY,
        kb_id       UUID NOT NULL,
        document_id UUID NOT NULL,
        embedding   vector NOT NULL
    )""")
    # kept in the row up to a page (1,536 dimensions and more), never compressed away from it
    conn.execute(f"ALTER TABLE {TABLE} ALTER COLUMN embedding SET STORAGE MAIN")
    conn.execute(f"CREATE INDEX IF NOT EXISTS idx_{TABLE}_doc ON {TABLE}(document_id)")
    functions = {
        "kbdesk_vectors_added": _fill("kbdesk_vectors_new"),
        "kbdesk_vectors_changed": f"DELETE FROM {TABLE} v USING kbdesk_vectors_old o WHERE v.seq = o.seq; "
        + _fill("kbdesk_vectors_new"),
        "kbdesk_vectors_removed": f"DELETE FROM {TABLE} v USING kbdesk_vectors_old o WHERE v.seq = o.seq",
        "kbdesk_vectors_truncated": f"DELETE FROM {TABLE}",
    }
    for name, body in functions.items():
        conn.execute(f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $f$
            BEGIN
                {body};
                RETURN NULL;
            END $f$""")
        conn.execute(f"REVOKE ALL ON FUNCTION {name}() FROM PUBLIC")
    for statement in (
        "DROP TRIGGER IF EXISTS kbdesk_vectors_ai ON kb_chunks",
        "DROP TRIGGER IF EXISTS kbdesk_vectors_au ON kb_chunks",
        "DROP TRIGGER IF EXISTS kbdesk_vectors_ad ON kb_chunks",
        "DROP TRIGGER IF EXISTS kbdesk_vectors_at ON kb_chunks",
        f"DELETE FROM {TABLE}",
        _fill("kb_chunks"),
        "CREATE TRIGGER kbdesk_vectors_ai AFTER INSERT ON kb_chunks REFERENCING NEW TABLE AS kbdesk_vectors_new "
        "FOR EACH STATEMENT EXECUTE FUNCTION kbdesk_vectors_added()",
        "CREATE TRIGGER kbdesk_vectors_au AFTER UPDATE ON kb_chunks "
        "REFERENCING OLD TABLE AS kbdesk_vectors_old NEW TABLE AS kbdesk_vectors_new "
        "FOR EACH STATEMENT EXECUTE FUNCTION kbdesk_vectors_changed()",
        "CREATE TRIGGER kbdesk_vectors_ad AFTER DELETE ON kb_chunks REFERENCING OLD TABLE AS kbdesk_vectors_old "
        "FOR EACH STATEMENT EXECUTE FUNCTION kbdesk_vectors_removed()",
        "CREATE TRIGGER kbdesk_vectors_at AFTER TRUNCATE ON kb_chunks FOR EACH STATEMENT "
        "EXECUTE FUNCTION kbdesk_vectors_truncated()",
    ):
        conn.execute(statement)
