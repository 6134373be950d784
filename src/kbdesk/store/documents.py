"""Documents and their chunks in the SQLite store: the whole ingestion lifecycle.

A document row is created ``pending``, moves through ``extracting``, ``chunking`` and
``embedding`` in small status transactions, and becomes ``ready`` in ONE transaction
that also writes its chunks, keyword rows, vectors, the embedding cache, removes the
older version it replaces and recounts the KB's stats. A crash before that commit
leaves a document without chunks in an in-between status, which a restart resumes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from collections.abc import Iterable, Sequence
from typing import Any

from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.models import DOC_STATUSES, ChunkInput, Document, KnowledgeBase
from kbdesk.store.records import check_name
from kbdesk.store.vectors import normalise

DOC_COLUMNS = ("id, kb_id, filename, content_type, size_bytes, storage_key, chunk_count, status, error, "
               "uploaded_by, content_hash, source_path, created_at, updated_at, source_mtime")
IN_FLIGHT = ("pending", "extracting", "chunking", "embedding")


def _doc(row: Sequence[Any]) -> Document:
    return Document(*row)


def storage_key(kb_id: str, doc_id: str, filename: str) -> str:
    """The seed's object key: ``kb/{kb_id}/{doc_id}_{filename}``."""
    safe = re.sub(r"[\\/\x00]", "_", filename) or "document"
    return f"kb/{kb_id}/{doc_id}_{safe}"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def this_worker() -> str:
    """Who claims a document: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_alive(claim: str | None) -> bool:
    """Whether the process named by a claim still runs (on this host)."""
    if not claim:
        return False
    host, _, pid = claim.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine's worker: not ours to judge
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


class DocumentsMixin:
    """Needs ``write()``, ``connection()``, ``audit()``, ``vectors``, ``_get_kb``,
    ``_recount`` and ``local_user_id`` from the store."""

    # ── reading ────────────────────────────────────────────────────────────────
    def _get_document(self, conn: Any, doc_id: str) -> Document:
        row = conn.execute(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE id = ?", (doc_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no document with id '{doc_id}'")
        return _doc(row)

    def get_document(self, doc_id: str) -> Document:
        return self._get_document(self.connection(), doc_id)

    def find_document(self, kb_id: str, ref: str) -> Document:
        """A document of a KB by id, unique id prefix, or filename."""
        conn = self.connection()
        rows = conn.execute(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = ? AND "
                            "(id = ? OR filename = ? OR id LIKE ? ESCAPE '\\') LIMIT 3",
                            (kb_id, ref, ref, ref.replace("%", "").replace("_", "") + "%" if len(ref) >= 4
                             else ref)).fetchall()
        exact = [r for r in rows if r[0] == ref]
        if exact:
            return _doc(exact[0])
        if len(rows) > 1:
            raise InvalidInputError(f"'{ref}' matches more than one document; use its id")
        if not rows:
            raise NotFoundError(f"no document '{ref}' in this knowledge base")
        return _doc(rows[0])

    def list_documents(self, kb_id: str, status: str | None = None) -> list[Document]:
        if status is not None and status not in DOC_STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(DOC_STATUSES)}")
        sql = f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = ?"
        args: tuple[Any, ...] = (kb_id,)
        if status:
            sql += " AND status = ?"
            args += (status,)
        return [_doc(r) for r in self.connection().execute(sql + " ORDER BY filename, created_at", args)]

    def document_sections(self, doc_id: str) -> list[tuple[str, dict[str, Any]]] | None:
        """The stored text cut back into its sections (text, metadata), or None without text."""
        row = self.connection().execute("SELECT extracted_text, extracted_sections FROM kb_documents WHERE id = ?",
                                        (doc_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no document with id '{doc_id}'")
        text, sections = row
        if text is None:
            return None
        if not sections:
            return [(text, {})]
        return [(text[start:end], meta) for start, end, meta in json.loads(sections)]

    def document_text(self, doc_id: str) -> str | None:
        row = self.connection().execute("SELECT extracted_text FROM kb_documents WHERE id = ?", (doc_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no document with id '{doc_id}'")
        return row[0]

    def documents_by_source(self, kb_id: str) -> dict[str, Document]:
        """The newest document for each source path in a KB (what a folder scan compares to)."""
        rows = self.connection().execute(
            f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = ? AND source_path IS NOT NULL "
            "ORDER BY created_at", (kb_id,)).fetchall()
        return {r[11]: _doc(r) for r in rows}

    def document_with_hash(self, kb_id: str, content_hash: str) -> Document | None:
        row = self.connection().execute(
            f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = ? AND content_hash = ? "
            "ORDER BY status = 'ready' DESC, created_at DESC LIMIT 1", (kb_id, content_hash)).fetchone()
        return _doc(row) if row else None

    def unfinished_documents(self, kb_id: str | None = None) -> list[Document]:
        """Documents left in an in-between status whose worker process is gone."""
        sql = (f"SELECT {DOC_COLUMNS}, claimed_by FROM kb_documents WHERE status IN "
               f"({','.join('?' * len(IN_FLIGHT))})")
        args: list[Any] = list(IN_FLIGHT)
        if kb_id:
            sql += " AND kb_id = ?"
            args.append(kb_id)
        rows = self.connection().execute(sql + " ORDER BY created_at", args).fetchall()
        return [_doc(r[:-1]) for r in rows if not worker_alive(r[-1]) or r[-1] == this_worker()]

    # ── the ingestion lifecycle ────────────────────────────────────────────────
    def create_document(self, kb_id: str, filename: str, *, content_type: str, size_bytes: int,
                        content_hash: str | None, source_path: str | None = None,
                        source_mtime: float | None = None, replaces_id: str | None = None,
                        status: str = "pending", error: str | None = None,
                        doc_id: str | None = None) -> Document:
        """A new document row, claimed by this process (its bytes are stored by the caller)."""
        from kbdesk.store.sqlite import new_id, utcnow

        filename = check_name(filename, "filename")
        doc_id = doc_id or new_id()
        now = utcnow()
        with self.write() as conn:
            self._get_kb(conn, kb_id)
            conn.execute(
                "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, status, error, "
                "uploaded_by, content_hash, source_path, source_mtime, replaces_id, claimed_by, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (doc_id, kb_id, filename, content_type, int(size_bytes), storage_key(kb_id, doc_id, filename),
                 status, error, self.local_user_id, content_hash, source_path, source_mtime, replaces_id,
                 this_worker(), now, now))
            self._recount(conn, kb_id)
            self.audit(conn, "document.upload", kb_id, filename,
                       {"document_id": doc_id, "source_path": source_path, "status": status})
            return self._get_document(conn, doc_id)

    def claim_document(self, doc_id: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE kb_documents SET claimed_by = ? WHERE id = ?", (this_worker(), doc_id))

    def set_document_status(self, doc_id: str, status: str, *, error: str | None = None,
                            extracted_text: str | None = None,
                            sections: list[tuple[int, int, dict[str, Any]]] | None = None) -> None:
        from kbdesk.store.sqlite import utcnow

        if status not in DOC_STATUSES:
            raise InvalidInputError(f"unknown document status {status!r}")
        with self.write() as conn:
            if extracted_text is not None:
                conn.execute("UPDATE kb_documents SET status = ?, error = ?, extracted_text = ?, "
                             "extracted_sections = ?, updated_at = ? WHERE id = ?",
                             (status, error, extracted_text, json.dumps(sections) if sections is not None else None,
                              utcnow(), doc_id))
            else:
                conn.execute("UPDATE kb_documents SET status = ?, error = ?, updated_at = ? WHERE id = ?",
                             (status, error, utcnow(), doc_id))
            if status == "error":
                conn.execute("UPDATE kb_documents SET claimed_by = NULL WHERE id = ?", (doc_id,))

    def finish_document(self, doc_id: str, chunks: Sequence[ChunkInput], vectors: Sequence[Any] | None, *,
                        model_key: str | None = None) -> Document:
        """Make a document ready: chunks, keyword rows, vectors, cache, stats — all or nothing."""
        from kbdesk.store.sqlite import utcnow

        if not chunks:
            raise InvalidInputError("a ready document needs at least one chunk")
        now = utcnow()
        with self.write() as conn:
            doc = self._get_document(conn, doc_id)
            kb = self._get_kb(conn, doc.kb_id)
            blobs = self._vector_blobs(kb, vectors, len(chunks))
            was_fresh = self.vectors_fresh(conn, kb.id)
            removed = self._delete_chunks(conn, doc_id)
            replaced = conn.execute("SELECT replaces_id FROM kb_documents WHERE id = ?", (doc_id,)).fetchone()[0]
            if replaced and replaced != doc_id:
                removed += self._delete_chunks(conn, replaced)
                conn.execute("DELETE FROM kb_documents WHERE id = ?", (replaced,))
            added = self._insert_chunks(conn, kb.id, doc_id, list(chunks), blobs, now)
            if blobs and model_key:
                dims = len(blobs[0]) // 4
                conn.executemany("INSERT OR REPLACE INTO embedding_cache(model, text_hash, dimensions, embedding) "
                                 "VALUES (?, ?, ?, ?)",
                                 [(model_key, text_hash(c.content), dims, b) for c, b in zip(chunks, blobs)])
            conn.execute("UPDATE kb_documents SET status = 'ready', error = NULL, chunk_count = ?, claimed_by = NULL, "
                         "replaces_id = NULL, updated_at = ? WHERE id = ?", (len(chunks), now, doc_id))
            self.vectors.after_write(conn, kb.id, added, removed, was_fresh)
            self._recount(conn, kb.id)
            return self._get_document(conn, doc_id)

    def cached_vectors(self, model_key: str, hashes: Iterable[str]) -> dict[str, bytes]:
        hashes = list(dict.fromkeys(hashes))
        out: dict[str, bytes] = {}
        conn = self.connection()
        for start in range(0, len(hashes), 500):
            part = hashes[start:start + 500]
            rows = conn.execute(f"SELECT text_hash, embedding FROM embedding_cache WHERE model = ? AND text_hash IN "
                                f"({','.join('?' * len(part))})", (model_key, *part)).fetchall()
            out.update({h: b for h, b in rows})
        return out

    def put_cached_vectors(self, model_key: str, items: Sequence[tuple[str, Any]]) -> None:
        """Store (text_hash, vector) pairs in the embedding cache, unit-normalised."""
        rows = []
        for h, vector in items:
            blob = vector if isinstance(vector, bytes) else normalise(vector, what="vector").tobytes()
            rows.append((model_key, h, len(blob) // 4, blob))
        with self.write() as conn:
            conn.executemany("INSERT OR REPLACE INTO embedding_cache(model, text_hash, dimensions, embedding) "
                             "VALUES (?, ?, ?, ?)", rows)

    def chunk_texts(self, kb_id: str) -> list[tuple[str, str]]:
        """Distinct (text_hash, content) of a KB's chunks."""
        rows = self.connection().execute(
            "SELECT content_hash, min(content) FROM kb_chunks WHERE kb_id = ? GROUP BY content_hash",
            (kb_id,)).fetchall()
        return [(h, c) for h, c in rows]

    def swap_embedding_model(self, kb_id: str, provider: str, model_id: str, model_key: str) -> KnowledgeBase:
        """Give every chunk of a KB its vector from ``model_key``'s cache, in one transaction.

        The KB never mixes models: either all its chunks move to the new model (and
        its embedding_config says so) or nothing changes.
        """
        from kbdesk.store.sqlite import utcnow

        with self.write() as conn:
            kb = self._get_kb(conn, kb_id)
            missing = conn.execute(
                "SELECT count(*) FROM kb_chunks c WHERE c.kb_id = ? AND NOT EXISTS (SELECT 1 FROM embedding_cache e "
                "WHERE e.model = ? AND e.text_hash = c.content_hash)", (kb_id, model_key)).fetchone()[0]
            if missing:
                raise InvalidInputError(f"{missing} chunks of '{kb.name}' have no vector from {model_id} yet")
            dims = conn.execute("SELECT min(e.dimensions), max(e.dimensions) FROM kb_chunks c JOIN embedding_cache e "
                                "ON e.model = ? AND e.text_hash = c.content_hash WHERE c.kb_id = ?",
                                (model_key, kb_id)).fetchone()
            if dims[0] != dims[1]:
                raise InvalidInputError(f"{model_id} returned vectors of different sizes ({dims[0]} and {dims[1]})")
            self.vectors.drop(conn, kb_id)
            conn.execute("UPDATE kb_chunks SET embedding = (SELECT e.embedding FROM embedding_cache e WHERE "
                         "e.model = ? AND e.text_hash = kb_chunks.content_hash) WHERE kb_id = ?", (model_key, kb_id))
            new_dims = dims[0]
            if new_dims is not None:
                conn.execute("INSERT INTO kb_vector_state(kb_id, dimensions) VALUES (?, ?) ON CONFLICT(kb_id) DO "
                             "UPDATE SET dimensions = excluded.dimensions, version = version + 1, "
                             "indexed_version = -1", (kb_id, new_dims))
            config = dict(kb.embedding_config, provider=provider, model_id=model_id)
            if new_dims is not None:
                config["dimensions"] = new_dims
            conn.execute("UPDATE knowledge_bases SET embedding_config = ?, updated_at = ? WHERE id = ?",
                         (json.dumps(config), utcnow(), kb_id))
            self.audit(conn, "kb.reembed", kb_id, kb.name,
                       {"from": {"provider": kb.embedding_config.get("provider"), "model_id": kb.model_id},
                        "to": {"provider": provider, "model_id": model_id, "dimensions": new_dims}})
            return self._get_kb(conn, kb_id)

    def log_usage(self, role: str, *, provider: str = "", model: str = "", kb_id: str | None = None,
                  inputs: int = 0, prompt_tokens: int | None = None, completion_tokens: int | None = None,
                  total_tokens: int | None = None) -> None:
        from kbdesk.store.sqlite import utcnow

        with self.write() as conn:
            conn.execute("INSERT INTO usage_log(created_at, user_id, role, provider, model, kb_id, prompt_tokens, "
                         "completion_tokens, total_tokens, inputs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (utcnow(), self.local_user_id, role, provider, model, kb_id, prompt_tokens,
                          completion_tokens, total_tokens, inputs))

    # ── whole documents in one call (library use, tests, imports) ──────────────
    def add_document(self, kb_id: str, filename: str, chunks: Sequence[ChunkInput | str], *,
                     vectors: Any = None, content_type: str = "text/plain", size_bytes: int | None = None,
                     extracted_text: str | None = None, content_hash: str | None = None,
                     source_path: str | None = None, doc_id: str | None = None) -> Document:
        """Store a whole document — row, chunks, keyword rows, vectors, stats — in one transaction.

        ``vectors`` (one per chunk) are required when the KB has an embedding model and
        refused when it has none.
        """
        from kbdesk.store.sqlite import new_id, utcnow

        filename = check_name(filename, "filename")
        items = [c if isinstance(c, ChunkInput) else ChunkInput(str(c)) for c in chunks]
        if not items:
            raise InvalidInputError(f"{filename}: a document needs at least one chunk")
        doc_id = doc_id or new_id()
        text = extracted_text if extracted_text is not None else "\n\n".join(c.content for c in items)
        size = size_bytes if size_bytes is not None else len(text.encode("utf-8"))
        now = utcnow()
        with self.write() as conn:
            kb = self._get_kb(conn, kb_id)
            blobs = self._vector_blobs(kb, vectors, len(items))
            was_fresh = self.vectors_fresh(conn, kb_id)
            conn.execute(
                "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, extracted_text, "
                "chunk_count, status, uploaded_by, content_hash, source_path, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'ready', ?, ?, ?, ?, ?)",
                (doc_id, kb_id, filename, content_type, size, storage_key(kb_id, doc_id, filename), text,
                 len(items), self.local_user_id, content_hash, source_path, now, now),
            )
            added = self._insert_chunks(conn, kb_id, doc_id, items, blobs, now)
            self.vectors.after_write(conn, kb_id, added, [], was_fresh)
            self._recount(conn, kb_id)
            self.audit(conn, "document.upload", kb_id, filename, {"document_id": doc_id, "chunks": len(items)})
            return self._get_document(conn, doc_id)

    def _vector_blobs(self, kb: KnowledgeBase, vectors: Any, count: int) -> list[bytes] | None:
        if vectors is None:
            if kb.model_id:
                raise InvalidInputError(f"knowledge base '{kb.name}' embeds with {kb.model_id}: "
                                        "its documents need one vector per chunk")
            return None
        if not kb.model_id:
            raise InvalidInputError(f"knowledge base '{kb.name}' has no embedding model; it cannot store vectors")
        if len(vectors) != count:
            raise InvalidInputError(f"got {len(vectors)} vectors for {count} chunks")
        dims = kb.dimensions
        blobs = []
        for i, vector in enumerate(vectors):
            if isinstance(vector, bytes):  # already unit float32 (from the cache)
                if dims is not None and len(vector) != dims * 4:
                    raise InvalidInputError(f"vector {i} has {len(vector) // 4} dimensions, expected {dims}")
                blobs.append(vector)
                dims = dims or len(vector) // 4
                continue
            unit = normalise(vector, dims, what=f"vector {i}")
            dims = dims or unit.size
            blobs.append(unit.tobytes())
        return blobs

    def _insert_chunks(self, conn: Any, kb_id: str, doc_id: str, items: list[ChunkInput],
                       blobs: list[bytes] | None, now: str) -> list[tuple[int, bytes]]:
        from kbdesk.store.sqlite import new_id

        if blobs:
            dims = len(blobs[0]) // 4
            row = conn.execute("SELECT dimensions FROM kb_vector_state WHERE kb_id = ?", (kb_id,)).fetchone()
            if row is None:
                conn.execute("INSERT INTO kb_vector_state(kb_id, dimensions) VALUES (?, ?)", (kb_id, dims))
                conn.execute("UPDATE knowledge_bases SET embedding_config = json_set(embedding_config, "
                             "'$.dimensions', ?) WHERE id = ?", (dims, kb_id))
            elif row[0] != dims:
                raise InvalidInputError(f"this knowledge base stores {row[0]}-dimensional vectors, got {dims}")
        added: list[tuple[int, bytes]] = []
        for index, item in enumerate(items):
            blob = blobs[index] if blobs else None
            cur = conn.execute(
                "INSERT INTO kb_chunks(id, kb_id, document_id, chunk_index, content, token_count, embedding, "
                "metadata, content_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id(), kb_id, doc_id, index, item.content, int(item.token_count), blob,
                 json.dumps(item.metadata or {}), text_hash(item.content), now),
            )
            if blob is not None:
                added.append((cur.lastrowid, blob))
        return added

    def _delete_chunks(self, conn: Any, doc_id: str) -> list[int]:
        """Delete a document's chunks; return the seqs of those that had vectors."""
        removed = [r[0] for r in conn.execute(
            "SELECT seq FROM kb_chunks WHERE document_id = ? AND embedding IS NOT NULL", (doc_id,))]
        conn.execute("DELETE FROM kb_chunks WHERE document_id = ?", (doc_id,))
        return removed

    def vectors_fresh(self, conn: Any, kb_id: str) -> bool:
        row = conn.execute("SELECT version = indexed_version FROM kb_vector_state WHERE kb_id = ?",
                           (kb_id,)).fetchone()
        return bool(row and row[0])

    def delete_document(self, doc_id: str) -> Document:
        """Delete a document with its chunks, keyword rows and vectors."""
        with self.write() as conn:
            doc = self._get_document(conn, doc_id)
            was_fresh = self.vectors_fresh(conn, doc.kb_id)
            removed = self._delete_chunks(conn, doc_id)
            conn.execute("DELETE FROM kb_documents WHERE id = ?", (doc_id,))
            self.vectors.after_write(conn, doc.kb_id, [], removed, was_fresh)
            self._recount(conn, doc.kb_id)
            self.audit(conn, "document.delete", doc.kb_id, doc.filename, {"document_id": doc_id})
            return doc
