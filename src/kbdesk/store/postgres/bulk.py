"""How the Postgres engine moves whole documents in and out (its
:class:`~kbdesk.store.core.parts.BulkStorage`): vectors read back unpadded at the KB's
dimension; original bytes kept in ``kbdesk_document_blobs``; chunks in by binary COPY,
straight into ``kb_chunks`` when none of their ids exists (the usual case), else through
a staging table and ``INSERT … ON CONFLICT (id) DO UPDATE``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kbdesk.errors import InvalidInputError
from kbdesk.ingest.names import file_of, hidden_source
from kbdesk.models import KnowledgeBase
from kbdesk.store.core.compose import Base
from kbdesk.store.core.parts import VectorChanges
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.postgres.chunks import copy_chunks
from kbdesk.store.postgres.dbapi import as_pg
from kbdesk.store.postgres.values import as_unit_bytes, clean_json, clean_text, pad

STAGE = "kbdesk_chunk_stage"


class PgBulk:
    """The Postgres :class:`~kbdesk.store.core.parts.BulkStorage`."""

    def __init__(self, base: Base) -> None:
        self.base = base

    @property
    def db(self) -> Engine:
        return self.base.db

    def source_key(self, path: Path) -> str:
        """A file's document on a team server is known by its user's hidden path: the
        same file is the same document, and no one reads where it lives on their disk."""
        return hidden_source(path, self.base.local_user_id)

    def incoming_source(self, source: str | None) -> str | None:
        """A document copied here keeps no local path: a path becomes its exporter's
        hidden path (as their own adds would know it); hidden paths and upload names stay."""
        if not source:
            return None
        if file_of(source) is not None:
            return hidden_source(source, self.base.local_user_id)
        return source

    def export_vectors(self, conn: Connection, sql: str, args: list[Any], dims: int | None) -> list[Sequence[Any]]:
        vector = f"subvector(embedding, 1, {int(dims)})" if dims else "NULL::vector"
        rows = as_pg(conn).execute(self.db.sql(sql.format(vector=vector)), args, binary=True).fetchall()
        return [(*r[:7], None if r[7] is None else as_unit_bytes(r[7], int(dims or 0))) for r in rows]

    def import_chunks(
        self, conn: Connection, kb: KnowledgeBase, docs: Sequence[dict[str, Any]], changes: VectorChanges
    ) -> None:
        self.stage_chunks(conn, kb.id, kb.dimensions, docs)

    def document_blobs(self, conn: Connection, doc_ids: list[str]) -> dict[str, bytes]:
        rows = conn.execute(
            "SELECT document_id, data FROM kbdesk_document_blobs WHERE document_id = ANY(%s::uuid[])", (doc_ids,)
        ).fetchall()
        return {str(d): bytes(b) for d, b in rows}

    def store_blobs(self, conn: Connection, blobs: list[tuple[str, bytes]]) -> None:
        self.db.executemany(
            conn,
            "INSERT INTO kbdesk_document_blobs(document_id, data) VALUES (?, ?) "
            "ON CONFLICT (document_id) DO UPDATE SET data = excluded.data",
            blobs,
        )

    def stage_chunks(self, conn: Connection, kb_id: str, dims: int | None, docs: Sequence[dict[str, Any]]) -> None:
        """Chunks in by binary COPY: straight into ``kb_chunks`` when none of their ids
        exists (the usual case: the batch's documents were just removed), otherwise
        through a staging table and ``INSERT … ON CONFLICT (id) DO UPDATE``."""
        rows = list(self._chunk_rows(kb_id, dims, docs))
        ids = [r[0] for r in rows]
        if not conn.execute("SELECT 1 FROM kb_chunks WHERE id = ANY(%s) LIMIT 1", (ids,)).fetchone():
            copy_chunks(as_pg(conn), rows)
            return
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {STAGE} (id uuid, kb_id uuid, document_id uuid, "
            "chunk_index int, content text, token_count int, embedding vector, metadata jsonb, "
            "content_hash text) ON COMMIT DELETE ROWS"
        )
        copy_chunks(as_pg(conn), rows, table=STAGE)
        conn.execute(
            f"INSERT INTO kb_chunks (id, kb_id, document_id, chunk_index, content, token_count, embedding, "
            f"metadata, content_hash) SELECT id, kb_id, document_id, chunk_index, content, token_count, "
            f"embedding, metadata, content_hash FROM {STAGE} ORDER BY ctid ON CONFLICT (id) DO UPDATE SET "
            "kb_id = excluded.kb_id, document_id = excluded.document_id, chunk_index = excluded.chunk_index, "
            "content = excluded.content, token_count = excluded.token_count, embedding = excluded.embedding, "
            "metadata = excluded.metadata, content_hash = excluded.content_hash"
        )
        conn.execute(f"DELETE FROM {STAGE}")

    @staticmethod
    def _chunk_rows(kb_id: str, dims: int | None, docs: Sequence[dict[str, Any]]) -> Any:
        from psycopg.types.json import Jsonb

        kb_uuid = uuid.UUID(kb_id)
        for d in docs:
            doc_uuid = uuid.UUID(d["id"])
            for c in d["chunks"]:
                vec = c.get("vector")
                if vec is not None:
                    unit = np.frombuffer(vec, dtype=np.float32)
                    if dims and unit.size != dims:
                        raise InvalidInputError(
                            f"a vector of {d['filename']} has {unit.size} dimensions, the knowledge base {dims}"
                        )
                    vec = pad(unit)
                yield (
                    uuid.UUID(c["id"]),
                    kb_uuid,
                    doc_uuid,
                    int(c["chunk_index"]),
                    clean_text(c["content"]),
                    int(c.get("token_count") or 0),
                    vec,
                    Jsonb(clean_json(c.get("metadata") or {})),
                    c.get("content_hash"),
                )

    def document_blob(self, doc_id: str) -> bytes | None:
        row = (
            self.base.connection()
            .execute("SELECT data FROM kbdesk_document_blobs WHERE document_id = %s", (doc_id,))
            .fetchone()
        )
        return bytes(row[0]) if row else None
