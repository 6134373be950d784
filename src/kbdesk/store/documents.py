"""Documents and their chunks in the SQLite store: the whole ingestion lifecycle.

A document row is created ``pending``, moves through ``extracting``, ``chunking`` and
``embedding`` in small status transactions, and becomes ``ready`` in ONE transaction
that also writes its chunks, keyword rows, vectors, the embedding cache, removes the
older version it replaces and recounts the KB's stats. A crash before that commit
leaves a document without chunks in an in-between status, which a restart resumes.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.models import DOC_STATUSES, ChunkInput, Document, KnowledgeBase
from kbdesk.store.records import check_name
from kbdesk.store.vectors import normalise, normalise_rows

DOC_COLUMNS = ("id, kb_id, filename, content_type, size_bytes, storage_key, chunk_count, status, error, "
               "uploaded_by, content_hash, source_path, created_at, updated_at, source_mtime")
IN_FLIGHT = ("pending", "extracting", "chunking", "embedding")


@dataclass
class NewDocument:
    """A document row to create (see :meth:`DocumentsMixin.create_documents`)."""

    kb_id: str
    filename: str
    content_type: str = "text/plain"
    size_bytes: int = 0
    content_hash: str | None = None
    source_path: str | None = None
    source_mtime: float | None = None
    replaces_id: str | None = None
    status: str = "pending"
    error: str | None = None
    doc_id: str | None = None


@dataclass
class StatusUpdate:
    doc_id: str
    status: str
    error: str | None = None
    extracted_text: str | None = None
    sections: list[tuple[int, int, dict[str, Any]]] | None = None


def _doc(row: Sequence[Any]) -> Document:
    return Document(*row)


def storage_key(kb_id: str, doc_id: str, filename: str) -> str:
    """The seed's object key: ``kb/{kb_id}/{doc_id}_{filename}``."""
    safe = re.sub(r"[\\/\x00]", "_", filename) or "document"
    return f"kb/{kb_id}/{doc_id}_{safe}"


def text_hash(text: str) -> str:
    """The embedding cache's key for a text (the same as ``ChunkInput.content_hash``)."""
    return ChunkInput(text).content_hash


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
    ``_bump`` and ``local_user_id`` from the store."""

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
    def create_documents(self, specs: Sequence[NewDocument]) -> list[Document]:
        """New document rows, claimed by this process, in one transaction (the caller
        has stored their bytes first)."""
        from kbdesk.store.sqlite import new_id, utcnow

        if not specs:
            return []
        now = utcnow()
        worker = this_worker()
        ids: list[str] = []
        with self.write() as conn:
            for kb_id in {spec.kb_id for spec in specs}:
                self._get_kb(conn, kb_id)
            for spec in specs:
                filename = check_name(spec.filename, "filename")
                doc_id = spec.doc_id or new_id()
                conn.execute(
                    "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, status, "
                    "error, uploaded_by, content_hash, source_path, source_mtime, replaces_id, claimed_by, "
                    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (doc_id, spec.kb_id, filename, spec.content_type, int(spec.size_bytes),
                     storage_key(spec.kb_id, doc_id, filename), spec.status, spec.error, self.local_user_id,
                     spec.content_hash, spec.source_path, spec.source_mtime, spec.replaces_id,
                     None if spec.status == "error" else worker, now, now))
                self._bump(conn, spec.kb_id, docs=1, size=int(spec.size_bytes))
                self.audit(conn, "document.upload", spec.kb_id, filename,
                           {"document_id": doc_id, "source_path": spec.source_path, "status": spec.status})
                ids.append(doc_id)
            return [self._get_document(conn, doc_id) for doc_id in ids]

    def create_document(self, kb_id: str, filename: str, **fields: Any) -> Document:
        return self.create_documents([NewDocument(kb_id, filename, **fields)])[0]

    def claim_document(self, doc_id: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE kb_documents SET claimed_by = ? WHERE id = ?", (this_worker(), doc_id))

    def set_statuses(self, updates: Sequence[StatusUpdate]) -> None:
        """Move documents to new statuses in one transaction (a vanished document is skipped)."""
        from kbdesk.store.sqlite import utcnow

        now = utcnow()
        with self.write() as conn:
            for u in updates:
                if u.status not in DOC_STATUSES:
                    raise InvalidInputError(f"unknown document status {u.status!r}")
                if u.extracted_text is not None:
                    conn.execute("UPDATE kb_documents SET status = ?, error = ?, extracted_text = ?, "
                                 "extracted_sections = ?, updated_at = ? WHERE id = ?",
                                 (u.status, u.error, u.extracted_text,
                                  json.dumps(u.sections) if u.sections is not None else None, now, u.doc_id))
                else:
                    conn.execute("UPDATE kb_documents SET status = ?, error = ?, updated_at = ? WHERE id = ?",
                                 (u.status, u.error, now, u.doc_id))
                if u.status == "error":
                    conn.execute("UPDATE kb_documents SET claimed_by = NULL WHERE id = ?", (u.doc_id,))

    def set_document_status(self, doc_id: str, status: str, *, error: str | None = None,
                            extracted_text: str | None = None,
                            sections: list[tuple[int, int, dict[str, Any]]] | None = None) -> None:
        self.set_statuses([StatusUpdate(doc_id, status, error, extracted_text, sections)])

    def finish_documents(self, items: Sequence[tuple[str, Sequence[ChunkInput], Sequence[Any] | None]]
                         ) -> list[Document | Exception]:
        """Make documents ready in one transaction, each completely or not at all.

        Every document gets its chunks, keyword rows and vectors (which are the embedding
        cache too: see :meth:`cached_vectors`), drops
        the older version it replaces, and moves the KB's stats; one that fails (say, it
        was deleted meanwhile) is rolled back to its savepoint and returned as an error
        while the others commit.
        """
        from kbdesk.store.sqlite import utcnow

        now = utcnow()
        out: list[Document | Exception] = []
        with self.write() as conn:
            fresh: dict[str, bool] = {}
            added: dict[str, list[tuple[int, bytes]]] = {}
            removed: dict[str, list[int]] = {}
            for doc_id, chunks, vectors in items:
                conn.execute("SAVEPOINT finish_doc")
                try:
                            out.append(self._finish_one(conn, doc_id, list(chunks), vectors, now, fresh, added, removed))
                except Exception as exc:  # noqa: BLE001 - this document alone fails
                    conn.execute("ROLLBACK TO finish_doc")
                    out.append(exc)
                conn.execute("RELEASE finish_doc")
            for kb_id, was_fresh in fresh.items():
                self.vectors.after_write(conn, kb_id, added.get(kb_id, []), removed.get(kb_id, []), was_fresh)
        return out

    def _finish_one(self, conn: Any, doc_id: str, chunks: list[ChunkInput], vectors: Sequence[Any] | None,
                    now: str, fresh: dict[str, bool],
                    added: dict[str, list[tuple[int, bytes]]], removed: dict[str, list[int]]) -> Document:
        if not chunks:
            raise InvalidInputError("a ready document needs at least one chunk")
        doc = self._get_document(conn, doc_id)
        kb = self._get_kb(conn, doc.kb_id)
        blobs = self._vector_blobs(kb, vectors, len(chunks))
        if kb.id not in fresh:
            fresh[kb.id] = self.vectors_fresh(conn, kb.id)
        gone_vecs, gone = self._delete_chunks(conn, doc_id)
        replaced = conn.execute("SELECT replaces_id FROM kb_documents WHERE id = ?", (doc_id,)).fetchone()[0]
        docs_delta, size_delta = 0, 0
        if replaced and replaced != doc_id:
            old = conn.execute("SELECT size_bytes FROM kb_documents WHERE id = ?", (replaced,)).fetchone()
            if old is not None:
                more_vecs, more = self._delete_chunks(conn, replaced)
                gone_vecs += more_vecs
                gone += more
                conn.execute("DELETE FROM kb_documents WHERE id = ?", (replaced,))
                docs_delta, size_delta = -1, -old[0]
        new_rows = self._insert_chunks(conn, kb.id, doc_id, chunks, blobs, now)
        conn.execute("UPDATE kb_documents SET status = 'ready', error = NULL, chunk_count = ?, claimed_by = NULL, "
                     "replaces_id = NULL, updated_at = ? WHERE id = ?", (len(chunks), now, doc_id))
        self._bump(conn, kb.id, docs=docs_delta, chunks=len(chunks) - gone, size=size_delta)
        added.setdefault(kb.id, []).extend(new_rows)
        removed.setdefault(kb.id, []).extend(gone_vecs)
        return self._get_document(conn, doc_id)

    def finish_document(self, doc_id: str, chunks: Sequence[ChunkInput], vectors: Sequence[Any] | None
                        ) -> Document:
        """Make one document ready (see :meth:`finish_documents`); raises its error."""
        result = self.finish_documents([(doc_id, chunks, vectors)])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def cached_vectors(self, model_id: str, hashes: Iterable[str]) -> dict[str, bytes]:
        """Known vectors of ``model_id`` for these text hashes: from any KB's chunks
        embedded with that model, then from the staging cache."""
        hashes = list(dict.fromkeys(hashes))
        out: dict[str, bytes] = {}
        conn = self.connection()
        for start in range(0, len(hashes), 500):
            part = hashes[start:start + 500]
            marks = ",".join("?" * len(part))
            rows = conn.execute(
                f"SELECT c.content_hash, c.embedding FROM kb_chunks c JOIN knowledge_bases k ON k.id = c.kb_id "
                f"WHERE c.content_hash IN ({marks}) AND c.embedding IS NOT NULL "
                f"AND json_extract(k.embedding_config, '$.model_id') = ?", (*part, model_id)).fetchall()
            out.update({h: b for h, b in rows})
            rest = [h for h in part if h not in out]
            if rest:
                rows = conn.execute(f"SELECT text_hash, embedding FROM embedding_cache WHERE model = ? AND text_hash IN "
                                    f"({','.join('?' * len(rest))})", (model_id, *rest)).fetchall()
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
            conn.execute("DELETE FROM embedding_cache WHERE model = ?", (model_key,))  # now in kb_chunks
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
            self._bump(conn, kb_id, docs=1, chunks=len(items), size=size)
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
        blobs: list[bytes | None] = [None] * count
        todo: list[int] = []
        for i, vector in enumerate(vectors):
            if isinstance(vector, bytes):  # already unit float32 (from the cache)
                if dims is not None and len(vector) != dims * 4:
                    raise InvalidInputError(f"vector {i} has {len(vector) // 4} dimensions, expected {dims}")
                dims = dims or len(vector) // 4
                blobs[i] = vector
            else:
                todo.append(i)
        if todo:
            for i, unit in zip(todo, normalise_rows([vectors[i] for i in todo], dims, first=todo[0])):
                blobs[i] = unit.tobytes()
        return blobs  # type: ignore[return-value]

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
        # seqs are given explicitly (we hold the write lock), so the chunks, their
        # keyword rows and their vectors go in with three bulk statements
        first = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM kb_chunks").fetchone()[0]
        rows = [(first + i, new_id(), kb_id, doc_id, i, item.content, int(item.token_count),
                 blobs[i] if blobs else None, json.dumps(item.metadata or {}), item.content_hash, now)
                for i, item in enumerate(items)]
        conn.executemany("INSERT INTO kb_chunks(seq, id, kb_id, document_id, chunk_index, content, token_count, "
                         "embedding, metadata, content_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         rows)
        conn.executemany("INSERT INTO kb_chunks_fts(rowid, content) VALUES (?, ?)", [(r[0], r[5]) for r in rows])
        if not blobs:
            return []
        conn.execute("UPDATE kb_vector_state SET version = version + 1 WHERE kb_id = ?", (kb_id,))
        return [(r[0], r[7]) for r in rows]

    def _delete_chunks(self, conn: Any, doc_id: str) -> tuple[list[int], int]:
        """Delete a document's chunks; return (seqs of those that had vectors, how many went)."""
        rows = conn.execute("SELECT seq, embedding IS NOT NULL FROM kb_chunks WHERE document_id = ?",
                            (doc_id,)).fetchall()
        if rows:
            conn.execute("DELETE FROM kb_chunks WHERE document_id = ?", (doc_id,))
        return [seq for seq, has in rows if has], len(rows)

    def vectors_fresh(self, conn: Any, kb_id: str) -> bool:
        row = conn.execute("SELECT version = indexed_version FROM kb_vector_state WHERE kb_id = ?",
                           (kb_id,)).fetchone()
        return bool(row and row[0])

    def delete_document(self, doc_id: str) -> Document:
        """Delete a document with its chunks, keyword rows and vectors."""
        with self.write() as conn:
            doc = self._get_document(conn, doc_id)
            was_fresh = self.vectors_fresh(conn, doc.kb_id)
            removed, count = self._delete_chunks(conn, doc_id)
            conn.execute("DELETE FROM kb_documents WHERE id = ?", (doc_id,))
            self.vectors.after_write(conn, doc.kb_id, [], removed, was_fresh)
            self._bump(conn, doc.kb_id, docs=-1, chunks=-count, size=-doc.size_bytes)
            self.audit(conn, "document.delete", doc.kb_id, doc.filename, {"document_id": doc_id})
            return doc
