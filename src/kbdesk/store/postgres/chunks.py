"""How the Postgres engine stores chunks, keyword rows and vectors (its
:class:`~kbdesk.store.core.parts.ChunkStorage`).

Chunks go in by binary COPY with their keyword rows (the generated ``content_tsv``
column and the BM25 statistics its triggers keep, :mod:`.keyword`); vectors are stored
unit-normalised and zero-padded to the seed's 3072 columns (:mod:`.values`). pgvector
builds a KB's HNSW index once it holds enough vectors, after the commit (:mod:`.vectors`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from kbdesk.errors import InvalidInputError
from kbdesk.models import KnowledgeBase
from kbdesk.store.core.compose import Base
from kbdesk.store.core.parts import ChunkBatch, VectorChanges
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.ids import ordered_uuids
from kbdesk.store.postgres.dbapi import PgConnection, as_pg
from kbdesk.store.postgres.locks import NAME_LOCK_WAIT, lock_name
from kbdesk.store.postgres.seed import VECTOR_COLUMN_DIMS
from kbdesk.store.postgres.values import clean_json, clean_text, pad
from kbdesk.store.postgres.vectors import PgVectorIndex

log = logging.getLogger("kbdesk.store")

CHUNK_COLUMNS = "id, kb_id, document_id, chunk_index, content, token_count, embedding, metadata, content_hash"
CHUNK_COPY = f"COPY kb_chunks ({CHUNK_COLUMNS}) FROM STDIN WITH (FORMAT BINARY)"
CHUNK_TYPES = ["uuid", "uuid", "uuid", "int4", "text", "int4", "vector", "jsonb", "text"]
CHUNK_STAGE = "kbdesk_chunk_stage"  # (the same temporary table as an import's, bulk.py)


def copy_chunks(conn: PgConnection, rows: Iterable[Sequence[Any]], table: str = "kb_chunks") -> None:
    """Binary COPY of chunk rows shaped as :data:`CHUNK_TYPES` (ids as ``uuid.UUID``).

    A kbdesk user on a team server is under row-level security, where Postgres refuses
    COPY into the table: their rows go through a temporary table and ``INSERT …
    SELECT``, which the policies check (store/postgres/rls.py).
    """
    if table == "kb_chunks" and conn.execute("SELECT row_security_active('kb_chunks')").fetchone()[0]:
        stage_chunks(conn)
        copy_chunks(as_pg(conn), rows, CHUNK_STAGE)
        conn.execute(f"INSERT INTO kb_chunks ({CHUNK_COLUMNS}) SELECT {CHUNK_COLUMNS} FROM {CHUNK_STAGE} ORDER BY ctid")
        conn.execute(f"DELETE FROM {CHUNK_STAGE}")
        return
    with conn.cursor() as cur, cur.copy(CHUNK_COPY.replace("kb_chunks", table, 1)) as copy:
        copy.set_types(CHUNK_TYPES)
        for row in rows:
            copy.write_row(row)


def stage_chunks(conn: PgConnection) -> None:
    """The session's temporary table shaped as the COPY's rows (emptied at commit)."""
    conn.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {CHUNK_STAGE} (id uuid, kb_id uuid, document_id uuid, "
        "chunk_index int, content text, token_count int, embedding vector, metadata jsonb, "
        "content_hash text) ON COMMIT DELETE ROWS"
    )


class KbReader(Protocol):
    """What the chunk storage asks of the Postgres store: whether a transaction is open,
    and a KB's row (:class:`kbdesk.store.core.records.Records`)."""

    def in_transaction(self) -> bool: ...
    def kb_by_id(self, kb_id: str) -> KnowledgeBase | None: ...


class PgChunks:
    """The Postgres :class:`~kbdesk.store.core.parts.ChunkStorage`: chunks by binary COPY
    with their keyword rows, vectors padded to the seed's column, pgvector's index built
    after the commit once a KB holds enough vectors."""

    def __init__(self, base: Base, vectors: PgVectorIndex, kbs: KbReader) -> None:
        self.base = base
        self.vectors = vectors
        self.kbs = kbs

    @property
    def db(self) -> Engine:
        return self.base.db

    def kb_created(self, conn: Connection, kb_id: str, config: dict[str, Any]) -> None:
        """Nothing: a KB's dimension lives in its ``embedding_config``."""

    def vectors_touch(self, conn: Connection, kb_id: str, changes: VectorChanges) -> None:
        changes.kbs.add(kb_id)

    def vectors_written(self, conn: Connection, changes: VectorChanges) -> None:
        """Nothing inside the transaction: pgvector keeps its index itself."""

    def check_config(self, config: dict[str, Any]) -> None:
        if (config.get("dimensions") or 0) > VECTOR_COLUMN_DIMS:
            raise InvalidInputError(
                f"Postgres stores vectors of at most {VECTOR_COLUMN_DIMS} dimensions (kb_chunks.embedding "
                f"is a vector({VECTOR_COLUMN_DIMS}) column), not {config['dimensions']}"
            )

    def lock_names(self, conn: Connection, name: str) -> None:
        if not lock_name(conn, name):  # someone holds this name's lock: go on (the database's name rule holds)
            log.warning("the lock of the name %r was held for %gs; creating without it", name, NAME_LOCK_WAIT)

    def learn_dimensions(self, conn: Connection, kb: KnowledgeBase, dims: int) -> None:
        if kb.dimensions is not None:
            return
        pad(np.zeros(dims, dtype=np.float32))  # refuses what the column cannot hold
        row = conn.execute(
            "SELECT embedding_config->>'dimensions' FROM knowledge_bases WHERE id = %s FOR UPDATE", (kb.id,)
        ).fetchone()
        if row[0] is not None and int(row[0]) != dims:
            raise InvalidInputError(f"this knowledge base stores {row[0]}-dimensional vectors, got {dims}")
        conn.execute(
            "UPDATE knowledge_bases SET embedding_config = jsonb_set(embedding_config, '{dimensions}', "
            "to_jsonb(%s::int)) WHERE id = %s",
            (dims, kb.id),
        )

    def insert_many(
        self,
        conn: Connection,
        kb_id: str,
        docs: ChunkBatch,
        now: Any,
        changes: VectorChanges,
    ) -> None:
        import uuid

        from psycopg.types.json import Jsonb

        kb_uuid = uuid.UUID(kb_id)
        ids = iter(ordered_uuids(sum(len(items) for _, items, _ in docs)))
        rows = (
            (
                next(ids),
                kb_uuid,
                uuid.UUID(doc_id),
                i,
                clean_text(item.content),
                int(item.token_count),
                pad(np.frombuffer(blobs[i], dtype=np.float32)) if blobs else None,
                Jsonb(clean_json(item.metadata or {})),
                item.content_hash,
            )
            for doc_id, items, blobs in docs
            for i, item in enumerate(items)
        )
        copy_chunks(as_pg(conn), rows)

    def delete_many(self, conn: Connection, kb_id: str, doc_ids: list[str], changes: VectorChanges) -> dict[str, int]:
        if not getattr(self.db, "through_functions", False):
            rows = conn.execute(
                "WITH gone AS (DELETE FROM kb_chunks WHERE document_id = ANY(%s::uuid[]) "
                "RETURNING document_id) SELECT document_id::text, count(*) FROM gone GROUP BY 1",
                (list(doc_ids),),
            ).fetchall()
            return {str(doc_id): int(n) for doc_id, n in rows}
        # a kbdesk user: counted, then deleted through kbdesk_delete (no DELETE privilege)
        rows = conn.execute(
            "SELECT document_id::text, count(*) FROM kb_chunks WHERE document_id = ANY(%s::uuid[]) GROUP BY 1",
            (list(doc_ids),),
        ).fetchall()
        self.db.delete(conn, "kb_chunks", "document_id = ANY(?::uuid[])", (list(doc_ids),))
        return {str(doc_id): int(n) for doc_id, n in rows}

    def vectors_committed(self, changes: VectorChanges) -> None:
        """Once a KB holds enough vectors, build its index (outside the transaction)."""
        if self.kbs.in_transaction():
            return
        for kb_id in changes.kbs:
            kb = self.kbs.kb_by_id(kb_id)
            if kb is None:  # deleted meanwhile: nothing to index
                continue
            if kb.dimensions and kb.chunk_count >= self.vectors.min_rows:
                self.vectors.ensure(kb.id, kb.dimensions, kb.chunk_count, wait=False)
