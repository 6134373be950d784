"""Each chunk's vector also at its KB's own width, for the exact scans.

``kb_chunks.embedding`` is the seed's ``vector(3072)``: a KB of a 384-dimension model
stores 384 real values and 2,688 zeros, 12 KB a row, kept out of line (TOAST). An exact
scan reads every row's whole value to take its first D values: about 8 µs a row, so a
search filtered to 5,000 chunks spent 40 ms on it where the HNSW index answers the whole
KB in 8. ``embedding_real`` holds the first D values (1.5 KB at 384, kept in the row), and
the exact scans order by it.

A trigger fills it on every insert and update of a row, from the KB's recorded dimension
(``knowledge_bases.embedding_config->>'dimensions'``), so every writer's rows get it — a
program that knows only the seed's columns included — and nobody can set it apart from
``embedding``. It is NULL where the dimension is unknown or is the column's full 3,072;
the scans read :func:`order_expression`, which falls back to ``embedding`` for any row
whose ``embedding_real`` is missing or of another width (a KB re-embedded by a program
that does not record the new dimension first), so results never depend on it.
"""

from __future__ import annotations

from typing import Any

from kbdesk.store.postgres.seed import VECTOR_COLUMN_DIMS

COLUMN = "embedding_real"
FUNCTION = "kbdesk_embedding_real"
TRIGGER = "kbdesk_embedding_real"


def order_expression(dims: int) -> str:
    """The chunk's vector at ``dims`` (its own column when it holds that width)."""
    d = int(dims)
    return f"(CASE WHEN vector_dims({COLUMN}) = {d} THEN {COLUMN} ELSE subvector(embedding, 1, {d}) END)"


def install(conn: Any, path: str, *, backfill: bool = True) -> None:
    """The column, its trigger and (``backfill``) the rows already stored; idempotent.
    ``path``: the trigger's fixed search_path (kbdesk's schema, then pg_temp)."""
    conn.execute(f"ALTER TABLE kb_chunks ADD COLUMN IF NOT EXISTS {COLUMN} vector")
    if backfill:
        # (no trigger yet: one UPDATE with the widths read once per KB)
        conn.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON kb_chunks")
        conn.execute(
            f"UPDATE kb_chunks c SET {COLUMN} = subvector(c.embedding, 1, (k.embedding_config->>'dimensions')::int) "
            "FROM knowledge_bases k WHERE k.id = c.kb_id AND c.embedding IS NOT NULL "
            "AND (k.embedding_config->>'dimensions') ~ '^[0-9]{1,5}$' "
            f"AND (k.embedding_config->>'dimensions')::int BETWEEN 1 AND {VECTOR_COLUMN_DIMS - 1}"
        )
    conn.execute(f"""CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger
        LANGUAGE plpgsql SET search_path = {path} AS $f$
        DECLARE
            width text;
        BEGIN
            NEW.{COLUMN} := NULL;
            IF NEW.embedding IS NOT NULL THEN
                SELECT embedding_config->>'dimensions' INTO width FROM knowledge_bases WHERE id = NEW.kb_id;
                IF width ~ '^[0-9]{{1,5}}$' AND width::int BETWEEN 1 AND vector_dims(NEW.embedding) - 1 THEN
                    NEW.{COLUMN} := subvector(NEW.embedding, 1, width::int);
                END IF;
            END IF;
            RETURN NEW;
        END $f$""")
    conn.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON kb_chunks")
    conn.execute(
        f"CREATE TRIGGER {TRIGGER} BEFORE INSERT OR UPDATE ON kb_chunks FOR EACH ROW EXECUTE FUNCTION {FUNCTION}()"
    )
