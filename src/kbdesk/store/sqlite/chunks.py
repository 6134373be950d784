"""How the SQLite engine stores chunks, keyword rows and vectors (its
:class:`~kbdesk.store.core.parts.ChunkStorage`).

Chunks carry an explicit ``seq`` (their rowid, given while the write lock is held) so
the chunks of a whole batch of documents, their FTS5 rows and their vectors go in with
three bulk statements. Vectors live in ``kb_chunks.embedding`` as unit float32 blobs; the derived
index (sqlite-vec or numpy, :mod:`kbdesk.store.sqlite.vectors`) follows each write through
``kb_vector_state``'s version.
"""

from __future__ import annotations

from typing import Any

from kbdesk.errors import InvalidInputError
from kbdesk.models import KnowledgeBase
from kbdesk.store.cjk import keyword_text
from kbdesk.store.core.compose import Base
from kbdesk.store.core.parts import ChunkBatch, VectorChanges
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.ids import ordered_uuids
from kbdesk.store.sqlite.dbapi import as_sqlite
from kbdesk.store.sqlite.vectors import VectorIndex as SqliteIndex


class SqliteChunks:
    """The SQLite :class:`~kbdesk.store.core.parts.ChunkStorage`: chunks with explicit
    seqs, their FTS5 rows, vectors in ``kb_chunks.embedding`` and the derived index
    (``vectors``) following each write."""

    def __init__(self, base: Base, vectors: SqliteIndex) -> None:
        self.base = base
        self.vectors = vectors

    @property
    def db(self) -> Engine:
        return self.base.db

    def check_config(self, config: dict[str, Any]) -> None:
        """SQLite stores vectors of any width."""

    def lock_names(self, conn: Connection, name: str) -> None:
        """SQLite's write lock already serialises every writer."""

    def vectors_committed(self, changes: VectorChanges) -> None:
        """The derived index followed inside the transaction (:meth:`vectors_written`)."""

    def kb_created(self, conn: Connection, kb_id: str, config: dict[str, Any]) -> None:
        if config.get("dimensions"):
            conn.execute(
                "INSERT INTO kb_vector_state(kb_id, dimensions) VALUES (?, ?)", (kb_id, int(config["dimensions"]))
            )

    def learn_dimensions(self, conn: Connection, kb: KnowledgeBase, dims: int) -> None:
        row = conn.execute("SELECT dimensions FROM kb_vector_state WHERE kb_id = ?", (kb.id,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO kb_vector_state(kb_id, dimensions) VALUES (?, ?)", (kb.id, dims))
            conn.execute(
                "UPDATE knowledge_bases SET embedding_config = json_set(embedding_config, "
                "'$.dimensions', ?) WHERE id = ?",
                (dims, kb.id),
            )
        elif row[0] != dims:
            raise InvalidInputError(f"this knowledge base stores {row[0]}-dimensional vectors, got {dims}")

    def insert_many(
        self,
        conn: Connection,
        kb_id: str,
        docs: ChunkBatch,
        now: Any,
        changes: VectorChanges,
    ) -> None:
        # seqs are given explicitly (we hold the write lock), so the chunks of all the
        # documents, their keyword rows and their vectors go in with three bulk statements
        seq = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM kb_chunks").fetchone()[0]
        ids = iter(map(str, ordered_uuids(sum(len(items) for _, items, _ in docs))))
        rows = []
        for doc_id, items, blobs in docs:
            rows += [
                (
                    seq + i,
                    next(ids),
                    kb_id,
                    doc_id,
                    i,
                    item.content,
                    int(item.token_count),
                    blobs[i] if blobs else None,
                    item.metadata_json,
                    item.content_hash,
                    now,
                    keyword_text(item.content),
                )
                for i, item in enumerate(items)
            ]
            seq += len(items)
        first = rows[0][0] if rows else 0
        self.db.executemany(
            conn,
            "INSERT INTO kb_chunks(seq, id, kb_id, document_id, chunk_index, content, "
            "token_count, embedding, metadata, content_hash, created_at, keyword_text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        # the keyword rows from the chunks just written, in one step (their seqs are ours:
        # the write lock is held)
        conn.execute(
            "INSERT INTO kb_chunks_fts(rowid, content) SELECT seq, coalesce(keyword_text, content) FROM kb_chunks "
            "WHERE seq >= ? AND seq < ?",
            (first, seq),
        )
        added = [(r[0], r[7]) for r in rows if r[7] is not None]
        if added:
            conn.execute("UPDATE kb_vector_state SET version = version + 1 WHERE kb_id = ?", (kb_id,))
            changes.added.setdefault(kb_id, []).extend(added)

    def delete_many(self, conn: Connection, kb_id: str, doc_ids: list[str], changes: VectorChanges) -> dict[str, int]:
        counts: dict[str, int] = {}
        removed = changes.removed.setdefault(kb_id, [])
        for start in range(0, len(doc_ids), self.db.list_chunk):
            where, args = self.db.in_list("document_id", doc_ids[start : start + self.db.list_chunk])
            rows = conn.execute(
                f"SELECT seq, embedding IS NOT NULL, document_id FROM kb_chunks WHERE {where}", args
            ).fetchall()
            if rows:
                conn.execute(f"DELETE FROM kb_chunks WHERE {where}", args)
            for seq, has, doc_id in rows:
                counts[doc_id] = counts.get(doc_id, 0) + 1
                if has:
                    removed.append(seq)
        return counts

    def vectors_fresh(self, conn: Connection, kb_id: str) -> bool:
        row = conn.execute("SELECT version = indexed_version FROM kb_vector_state WHERE kb_id = ?", (kb_id,)).fetchone()
        return bool(row and row[0])

    def vectors_touch(self, conn: Connection, kb_id: str, changes: VectorChanges) -> None:
        if kb_id not in changes.fresh:
            changes.fresh[kb_id] = self.vectors_fresh(conn, kb_id)

    def vectors_written(self, conn: Connection, changes: VectorChanges) -> None:
        for kb_id, was_fresh in changes.fresh.items():
            self.vectors.after_write(
                as_sqlite(conn), kb_id, changes.added.get(kb_id, []), changes.removed.get(kb_id, []), was_fresh
            )
