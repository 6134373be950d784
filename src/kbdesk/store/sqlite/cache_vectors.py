"""The SQLite answers of the embedding cache (:class:`kbdesk.store.core.cache.CacheVectors`):
chunks keep their vectors in ``kb_chunks.embedding``; a swap moves the KB's vector state
along so its derived index is rebuilt."""

from __future__ import annotations

from kbdesk.store.dbapi import Connection

__all__ = ["SqliteCacheVectors"]


class SqliteCacheVectors:
    key = "(model, text_hash)"
    """The cache table's unique key."""

    def chunk_vectors(self, conn: Connection, model_id: str, hashes: list[str]) -> dict[str, bytes]:
        rows = conn.execute(
            f"SELECT c.content_hash, c.embedding FROM kb_chunks c JOIN knowledge_bases k ON k.id = c.kb_id "
            f"WHERE c.content_hash IN ({','.join('?' * len(hashes))}) AND c.embedding IS NOT NULL "
            f"AND json_extract(k.embedding_config, '$.model_id') = ?",
            (*hashes, model_id),
        ).fetchall()
        return dict(rows)

    def swap_vectors(self, conn: Connection, kb_id: str, model_key: str, dims: int | None) -> None:
        conn.execute(
            "UPDATE kb_chunks SET embedding = (SELECT e.embedding FROM embedding_cache e WHERE "
            "e.model = ? AND e.text_hash = kb_chunks.content_hash) WHERE kb_id = ?",
            (model_key, kb_id),
        )
        if dims is not None:
            conn.execute(
                "INSERT INTO kb_vector_state(kb_id, dimensions) VALUES (?, ?) ON CONFLICT(kb_id) DO "
                "UPDATE SET dimensions = excluded.dimensions, version = version + 1, "
                "indexed_version = -1",
                (kb_id, dims),
            )
