"""How the SQLite engine moves whole documents in and out (its
:class:`~kbdesk.store.core.parts.BulkStorage`): vectors read back as stored; chunks
in through :class:`~kbdesk.store.sqlite.chunks.SqliteChunks`, then given their exported
ids; original files stay in the desk's files directory, not in the database."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbdesk.ingest import names
from kbdesk.models import ChunkInput, KnowledgeBase
from kbdesk.store.core.bulk import local_incoming_source
from kbdesk.store.core.compose import Base
from kbdesk.store.core.parts import VectorChanges
from kbdesk.store.core.ready import vector_blobs
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.sqlite.chunks import SqliteChunks

__all__ = ["SqliteBulk"]


class SqliteBulk:
    def __init__(self, base: Base, chunks: SqliteChunks) -> None:
        self.base = base
        self.chunks = chunks

    @property
    def db(self) -> Engine:
        return self.base.db

    def source_key(self, path: Path) -> str:
        """A file's document is known by its path."""
        return names.source_key(path)

    def incoming_source(self, source: str | None) -> str | None:
        return local_incoming_source(source)

    def document_blobs(self, conn: Connection, doc_ids: list[str]) -> dict[str, bytes]:
        """None: a local store keeps original files in the desk's files directory."""
        return {}

    def store_blobs(self, conn: Connection, blobs: list[tuple[str, bytes]]) -> None:
        """Nothing: the caller keeps original files in the desk's files directory."""

    def export_vectors(self, conn: Connection, sql: str, args: list[Any], dims: int | None) -> list[Sequence[Any]]:
        rows = conn.execute(sql.format(vector="embedding"), args).fetchall()
        return [(*r[:7], None if r[7] is None else bytes(r[7])) for r in rows]

    def import_chunks(
        self, conn: Connection, kb: KnowledgeBase, docs: Sequence[dict[str, Any]], changes: VectorChanges
    ) -> None:
        now = self.db.now()
        for doc in docs:
            chunks = doc["chunks"]
            if not chunks:
                continue
            items = [ChunkInput(c["content"], int(c.get("token_count") or 0), c.get("metadata") or {}) for c in chunks]
            vectors = [c["vector"] for c in chunks] if kb.model_id else None
            blobs = vector_blobs(self.chunks, conn, kb, vectors, len(items))
            self.chunks.insert_many(conn, kb.id, [(doc["id"], items, blobs)], now, changes)
            self.db.executemany(
                conn,
                "UPDATE kb_chunks SET id = ?, content_hash = ? WHERE document_id = ? AND chunk_index = ?",
                [(c["id"], c["content_hash"], doc["id"], i) for i, c in enumerate(chunks)],
            )
