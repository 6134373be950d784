"""The Postgres answers of the embedding cache (:class:`kbdesk.store.core.cache.CacheVectors`):
vectors are stored padded to the seed's width and read back unit-length at the KB's own;
a swap copies the cached vectors in by binary COPY. The cache is kept per user."""

from __future__ import annotations

import numpy as np

from kbdesk.store.dbapi import Connection
from kbdesk.store.postgres.dbapi import as_pg
from kbdesk.store.postgres.values import as_unit_bytes, pad

__all__ = ["PgCacheVectors"]


class PgCacheVectors:
    key = "(model, text_hash, user_id)"
    """The cache table's unique key (one cache per user)."""

    def chunk_vectors(self, conn: Connection, model_id: str, hashes: list[str]) -> dict[str, bytes]:
        rows = (
            as_pg(conn)
            .execute(
                "SELECT DISTINCT ON (c.content_hash) c.content_hash, (k.embedding_config->>'dimensions')::int, "
                "c.embedding FROM kb_chunks c JOIN knowledge_bases k ON k.id = c.kb_id "
                "WHERE c.content_hash = ANY(%s) AND c.embedding IS NOT NULL "
                "AND k.embedding_config->>'model_id' = %s AND k.embedding_config ? 'dimensions'",
                (hashes, model_id),
                binary=True,
            )
            .fetchall()
        )
        return {h: as_unit_bytes(v, dims) for h, dims, v in rows}

    def swap_vectors(self, conn: Connection, kb_id: str, model_key: str, dims: int | None) -> None:
        if dims:  # the new width first: the trigger keeping each vector at it reads it (.widths)
            conn.execute(
                "UPDATE knowledge_bases SET embedding_config = jsonb_set(embedding_config, '{dimensions}', "
                "to_jsonb(%s::int)) WHERE id = %s",
                (int(dims), kb_id),
            )
        conn.execute("CREATE TEMP TABLE kbdesk_swap (h text PRIMARY KEY, e vector) ON COMMIT DROP")
        cached = conn.execute(
            "SELECT e.text_hash, e.embedding FROM kbdesk_embedding_cache e WHERE e.model = %s "
            "AND e.text_hash IN (SELECT content_hash FROM kb_chunks WHERE kb_id = %s)",
            (model_key, kb_id),
        ).fetchall()
        with as_pg(conn).cursor() as cur, cur.copy("COPY kbdesk_swap (h, e) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "vector"])
            for h, blob in cached:
                copy.write_row([h, pad(np.frombuffer(bytes(blob), dtype=np.float32))])
        conn.execute(
            "UPDATE kb_chunks c SET embedding = s.e FROM kbdesk_swap s WHERE c.kb_id = %s AND c.content_hash = s.h",
            (kb_id,),
        )
