"""Chunks and vectors in the Postgres store: the transaction that makes documents ready.

As on SQLite, a document becomes ``ready`` in ONE transaction with all its chunks,
keyword rows (the generated ``content_tsv`` column) and vectors swapped in for the
older version's, and the move of the KB's stats. Vectors are validated by
the same code as SQLite (dimension, NaN, all-zero), stored unit-normalised and
zero-padded to 3072 (:mod:`.values`); chunks go in by binary COPY.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kbdesk.errors import ConflictError, InvalidInputError, SupersededError
from kbdesk.models import ChunkInput, Document, KnowledgeBase
from kbdesk.store.documents import DocumentsMixin as _SqliteDocuments
from kbdesk.store.doc_types import check_filename, storage_key
from kbdesk.store.postgres.access import check_manage
from kbdesk.store.postgres.values import as_unit_bytes, clean_json, clean_text, pad

CHUNK_COLUMNS = "id, kb_id, document_id, chunk_index, content, token_count, embedding, metadata, content_hash"
CHUNK_COPY = f"COPY kb_chunks ({CHUNK_COLUMNS}) FROM STDIN WITH (FORMAT BINARY)"
CHUNK_TYPES = ["uuid", "uuid", "uuid", "int4", "text", "int4", "vector", "jsonb", "text"]
CHUNK_STAGE = "kbdesk_chunk_stage"  # (the same temporary table as an import's, bulk.py)


def copy_chunks(conn: Any, rows: Iterable[Sequence[Any]], table: str = "kb_chunks") -> None:
    """Binary COPY of chunk rows shaped as :data:`CHUNK_TYPES` (ids as ``uuid.UUID``).

    A kbdesk user on a team server is under row-level security, where Postgres refuses
    COPY into the table: their rows go through a temporary table and ``INSERT …
    SELECT``, which the policies check (store/postgres/rls.py).
    """
    if table == "kb_chunks" and conn.execute("SELECT row_security_active('kb_chunks')").fetchone()[0]:
        stage_chunks(conn)
        copy_chunks(conn, rows, CHUNK_STAGE)
        conn.execute(f"INSERT INTO kb_chunks ({CHUNK_COLUMNS}) SELECT {CHUNK_COLUMNS} FROM {CHUNK_STAGE} ORDER BY ctid")
        conn.execute(f"DELETE FROM {CHUNK_STAGE}")
        return
    with conn.cursor() as cur, cur.copy(CHUNK_COPY.replace("kb_chunks", table, 1)) as copy:
        copy.set_types(CHUNK_TYPES)
        for row in rows:
            copy.write_row(row)


def stage_chunks(conn: Any) -> None:
    """The session's temporary table shaped as the COPY's rows (emptied at commit)."""
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {CHUNK_STAGE} (id uuid, kb_id uuid, document_id uuid, "
                 "chunk_index int, content text, token_count int, embedding vector, metadata jsonb, "
                 "content_hash text) ON COMMIT DELETE ROWS")


class ChunksMixin:
    """Needs ``write()``, ``connection()``, ``audit()``, ``vectors``, ``identity``, ``_get_kb``,
    ``_get_document`` and ``_bump`` from the store."""

    # ── making documents ready ─────────────────────────────────────────────────
    def finish_documents(self, items: Sequence[tuple[Any, ...]]) -> list[Document | Exception]:
        """Make documents ready in one transaction, each completely or not at all (a
        failing one rolls back to its savepoint and is returned as its error). An item
        is ``(doc_id, chunks, vectors)`` or ``(doc_id, chunks, vectors, version)``; a
        document claimed for a newer version meanwhile fails with
        :class:`SupersededError`."""
        out: list[Document | Exception] = []
        touched: dict[str, KnowledgeBase] = {}
        with self.write() as conn:
            for item in items:
                doc_id, chunks, vectors = item[:3]
                version = item[3] if len(item) > 3 else None
                try:
                    with conn.transaction():
                        doc, kb = self._finish_one(conn, doc_id, list(chunks), vectors, version)
                    out.append(doc)
                    touched[kb.id] = kb
                except Exception as exc:  # noqa: BLE001 - this document alone fails
                    out.append(exc)
        self._after_vectors(touched)
        return out

    def _finish_one(self, conn: Any, doc_id: str, chunks: list[ChunkInput], vectors: Sequence[Any] | None,
                    version: int | None) -> tuple[Document, KnowledgeBase]:
        if not chunks:
            raise InvalidInputError("a ready document needs at least one chunk")
        doc = self._get_document(conn, doc_id)
        if version is not None:
            row = conn.execute("SELECT version FROM kb_documents WHERE id = %s FOR UPDATE", (doc_id,)).fetchone()
            if row is None or row[0] != version:
                raise SupersededError(f"{doc.filename} was claimed for a newer version meanwhile")
        kb = self._get_kb(conn, doc.kb_id)
        units = self._units(conn, kb, vectors, len(chunks))
        gone = self._delete_chunks(conn, doc_id)
        self._insert_chunks(conn, kb.id, doc_id, chunks, units)
        conn.execute("UPDATE kb_documents SET status = 'ready', error = NULL, error_kind = NULL, chunk_count = %s, "
                     "claimed_by = NULL, indexed_at = now(), indexed_hash = content_hash, updated_at = now() "
                     "WHERE id = %s", (len(chunks), doc_id))
        self._bump(conn, kb.id, chunks=len(chunks) - gone)
        return self._get_document(conn, doc_id), kb

    def finish_document(self, doc_id: str, chunks: Sequence[ChunkInput], vectors: Sequence[Any] | None
                        ) -> Document:
        """Make one document ready (see :meth:`finish_documents`); raises its error."""
        result = self.finish_documents([(doc_id, chunks, vectors)])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def add_document(self, kb_id: str, filename: str, chunks: Sequence[ChunkInput | str], *,
                     vectors: Any = None, content_type: str = "text/plain", size_bytes: int | None = None,
                     extracted_text: str | None = None, content_hash: str | None = None,
                     source_path: str | None = None, doc_id: str | None = None) -> Document:
        """Store a whole document — row, chunks, keyword rows, vectors, stats — in one transaction."""
        from kbdesk.store.sqlite import new_id

        filename = clean_text(check_filename(filename))
        items = [c if isinstance(c, ChunkInput) else ChunkInput(str(c)) for c in chunks]
        if not items:
            raise InvalidInputError(f"{filename}: a document needs at least one chunk")
        doc_id = doc_id or new_id()
        text = extracted_text if extracted_text is not None else "\n\n".join(c.content for c in items)
        size = size_bytes if size_bytes is not None else len(text.encode("utf-8", "surrogatepass"))
        with self.write() as conn:
            kb = self._get_kb(conn, kb_id)
            check_manage(self.identity, kb)
            units = self._units(conn, kb, vectors, len(items))
            if source_path is not None and conn.execute(
                    "SELECT 1 FROM kb_documents WHERE kb_id = %s AND source_path = %s",
                    (kb_id, clean_text(source_path))).fetchone():
                raise ConflictError(f"{source_path} already has a document in '{kb.name}'")
            conn.execute(
                "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, extracted_text, "
                "chunk_count, status, uploaded_by, content_hash, source_path, version, indexed_at, indexed_hash) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'ready', %s, %s, %s, 1, now(), %s)",
                (doc_id, kb_id, filename, clean_text(content_type), size, storage_key(kb_id, doc_id, filename),
                 clean_text(text), len(items), self.local_user_id, content_hash, clean_text(source_path),
                 content_hash))
            self._insert_chunks(conn, kb_id, doc_id, items, units)
            self._bump(conn, kb_id, docs=1, chunks=len(items), size=size)
            self.audit(conn, "document.upload", kb_id, filename, {"document_id": doc_id, "chunks": len(items)})
            doc = self._get_document(conn, doc_id)
            kb = self._get_kb(conn, kb_id)
        self._after_vectors({kb.id: kb})
        return doc

    def _units(self, conn: Any, kb: KnowledgeBase, vectors: Any, count: int) -> list[bytes] | None:
        """Validated unit float32 vectors (bytes at the KB's dimension), or None; a KB
        that has not stored vectors yet learns its dimension here."""
        blobs = _SqliteDocuments._vector_blobs(self, kb, vectors, count)  # the same checks as SQLite
        if blobs and kb.dimensions is None:
            dims = len(blobs[0]) // 4
            pad(np.zeros(dims, dtype=np.float32))  # refuses what the column cannot hold
            row = conn.execute("SELECT embedding_config->>'dimensions' FROM knowledge_bases WHERE id = %s FOR UPDATE",
                               (kb.id,)).fetchone()
            if row[0] is not None and int(row[0]) != dims:
                raise InvalidInputError(f"this knowledge base stores {row[0]}-dimensional vectors, got {dims}")
            conn.execute("UPDATE knowledge_bases SET embedding_config = jsonb_set(embedding_config, '{dimensions}', "
                         "to_jsonb(%s::int)) WHERE id = %s", (dims, kb.id))
        return blobs

    def _insert_chunks(self, conn: Any, kb_id: str, doc_id: str, items: list[ChunkInput],
                       units: list[bytes] | None) -> None:
        import uuid

        from psycopg.types.json import Jsonb

        kb_uuid, doc_uuid = uuid.UUID(kb_id), uuid.UUID(doc_id)
        rows = ((uuid.uuid4(), kb_uuid, doc_uuid, i, clean_text(item.content), int(item.token_count),
                 pad(np.frombuffer(units[i], dtype=np.float32)) if units else None,
                 Jsonb(clean_json(item.metadata or {})), item.content_hash)
                for i, item in enumerate(items))
        copy_chunks(conn, rows)

    def _delete_chunks(self, conn: Any, doc_id: str) -> int:
        return conn.execute("DELETE FROM kb_chunks WHERE document_id = %s", (doc_id,)).rowcount

    def _after_vectors(self, kbs: dict[str, KnowledgeBase]) -> None:
        """Once a KB holds enough vectors, build its index (outside the transaction)."""
        if self.in_transaction():
            return
        for kb in kbs.values():
            if kb.dimensions and kb.chunk_count >= self.vectors.min_rows:
                self.vectors.ensure(kb.id, kb.dimensions, kb.chunk_count, wait=False)

    # ── the embedding cache ────────────────────────────────────────────────────
    def cached_vectors(self, model_id: str, hashes: Iterable[str]) -> dict[str, bytes]:
        """Known vectors of ``model_id`` for these text hashes: from any KB's chunks
        embedded with that model, then from the staging cache."""
        hashes = list(dict.fromkeys(hashes))
        out: dict[str, bytes] = {}
        conn = self.connection()
        for start in range(0, len(hashes), 1000):
            part = hashes[start:start + 1000]
            rows = conn.execute(
                "SELECT DISTINCT ON (c.content_hash) c.content_hash, (k.embedding_config->>'dimensions')::int, "
                "c.embedding FROM kb_chunks c JOIN knowledge_bases k ON k.id = c.kb_id "
                "WHERE c.content_hash = ANY(%s) AND c.embedding IS NOT NULL "
                "AND k.embedding_config->>'model_id' = %s AND k.embedding_config ? 'dimensions'",
                (part, model_id), binary=True).fetchall()
            out.update({h: as_unit_bytes(v, dims) for h, dims, v in rows})
            rest = [h for h in part if h not in out]
            if rest:
                rows = conn.execute("SELECT text_hash, embedding FROM kbdesk_embedding_cache WHERE model = %s "
                                    "AND text_hash = ANY(%s)", (model_id, rest)).fetchall()
                out.update({h: bytes(b) for h, b in rows})
        return out

    def put_cached_vectors(self, model_key: str, items: Sequence[tuple[str, Any]]) -> None:
        """Store (text_hash, vector) pairs in the embedding cache, unit-normalised."""
        from kbdesk.store.vectors import normalise

        rows = []
        for h, vector in items:
            blob = vector if isinstance(vector, bytes) else normalise(vector, what="vector").tobytes()
            rows.append((model_key, h, len(blob) // 4, blob))
        with self.write() as conn, conn.cursor() as cur:
            cur.executemany("INSERT INTO kbdesk_embedding_cache(model, text_hash, dimensions, embedding) "
                            "VALUES (%s, %s, %s, %s) ON CONFLICT (model, text_hash, user_id) DO UPDATE "
                            "SET dimensions = excluded.dimensions, embedding = excluded.embedding", rows)

    def drop_cached_vectors(self, model_key: str, hashes: Iterable[str]) -> None:
        """Forget cached vectors of ``model_key`` for these text hashes."""
        todo = list(hashes)
        if todo:
            with self.write() as conn:
                conn.execute("DELETE FROM kbdesk_embedding_cache WHERE model = %s AND text_hash = ANY(%s)",
                             (model_key, todo))

    def prune_cached_vectors(self, prefix: str, days: int) -> int:
        """Forget cached vectors under keys starting with ``prefix`` older than ``days``."""
        with self.write() as conn:
            return conn.execute("DELETE FROM kbdesk_embedding_cache WHERE left(model, %s) = %s AND "
                                "created_at < now() - make_interval(days => %s)",
                                (len(prefix), prefix, int(days))).rowcount

    def chunk_texts(self, kb_id: str) -> list[tuple[str, str]]:
        """Distinct (text_hash, content) of a KB's chunks."""
        rows = self.connection().execute(
            "SELECT content_hash, min(content) FROM kb_chunks WHERE kb_id = %s GROUP BY content_hash",
            (kb_id,)).fetchall()
        return [(h, c) for h, c in rows]

    def swap_embedding_model(self, kb_id: str, provider: str, model_id: str, model_key: str) -> KnowledgeBase:
        """Give every chunk of a KB its vector from ``model_key``'s cache, in one transaction."""
        from psycopg.types.json import Jsonb

        with self.write() as conn:
            kb = self._get_kb(conn, kb_id)
            check_manage(self.identity, kb)
            missing = conn.execute(
                "SELECT count(*) FROM kb_chunks c WHERE c.kb_id = %s AND NOT EXISTS (SELECT 1 FROM "
                "kbdesk_embedding_cache e WHERE e.model = %s AND e.text_hash = c.content_hash)",
                (kb_id, model_key)).fetchone()[0]
            if missing:
                raise InvalidInputError(f"{missing} chunks of '{kb.name}' have no vector from {model_id} yet")
            cached = conn.execute(
                "SELECT e.text_hash, e.dimensions, e.embedding FROM kbdesk_embedding_cache e WHERE e.model = %s "
                "AND e.text_hash IN (SELECT content_hash FROM kb_chunks WHERE kb_id = %s)",
                (model_key, kb_id)).fetchall()
            dims = {d for _, d, _ in cached}
            if len(dims) > 1:
                raise InvalidInputError(f"{model_id} returned vectors of different sizes ({min(dims)} and {max(dims)})")
            new_dims = dims.pop() if dims else None
            self.vectors.drop(conn, kb_id)
            conn.execute("CREATE TEMP TABLE kbdesk_swap (h text PRIMARY KEY, e vector) ON COMMIT DROP")
            with conn.cursor() as cur, cur.copy("COPY kbdesk_swap (h, e) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["text", "vector"])
                for h, _, blob in cached:
                    copy.write_row([h, pad(np.frombuffer(bytes(blob), dtype=np.float32))])
            conn.execute("UPDATE kb_chunks c SET embedding = s.e FROM kbdesk_swap s "
                         "WHERE c.kb_id = %s AND c.content_hash = s.h", (kb_id,))
            config = dict(kb.embedding_config, provider=provider, model_id=model_id)
            if new_dims is not None:
                config["dimensions"] = new_dims
            conn.execute("UPDATE knowledge_bases SET embedding_config = %s, updated_at = now() WHERE id = %s",
                         (Jsonb(config), kb_id))
            conn.execute("DELETE FROM kbdesk_embedding_cache WHERE model = %s", (model_key,))  # now in kb_chunks
            self.audit(conn, "kb.reembed", kb_id, kb.name,
                       {"from": {"provider": kb.embedding_config.get("provider"), "model_id": kb.model_id},
                        "to": {"provider": provider, "model_id": model_id, "dimensions": new_dims}})
            return self._get_kb(conn, kb_id)
