"""Documents and their chunks in the SQLite store: the whole ingestion lifecycle.

One row per source path (see :mod:`kbdesk.store.doc_types` for the rules of identity).
A runner claims a row for a new version (:meth:`DocumentsMixin.take_versions`) in a
write that bumps its ``version``; the row moves through ``extracting``, ``chunking`` and
``embedding`` in small status transactions, and becomes ``ready`` in ONE transaction
that swaps the older chunks for the new ones with their keyword rows and vectors and
moves the KB's stats. Every write of that work names the version it belongs to, so a
runner that lost its claim can never overwrite newer work. A crash before the last
commit leaves a row in an in-between status (still serving its older chunks, marked
stale), which the next ``add`` or ``resume`` finishes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError, SupersededError
from kbdesk.models import DOC_STATUSES, ChunkInput, Document, KnowledgeBase
from kbdesk.store.claims import claim_alive
from kbdesk.store.doc_cache import CacheMixin
from kbdesk.store.doc_types import IN_FLIGHT, NewDocument, StatusUpdate, check_filename, storage_key, text_hash
from kbdesk.store.vectors import normalise_rows

__all__ = ["DOC_COLUMNS", "IN_FLIGHT", "DocumentsMixin", "NewDocument", "StatusUpdate", "storage_key",
           "text_hash"]

DOC_COLUMNS = ("id, kb_id, filename, content_type, size_bytes, storage_key, chunk_count, status, error, "
               "uploaded_by, content_hash, source_path, created_at, updated_at, source_mtime, version, indexed_at, "
               "indexed_hash, error_kind, claimed_by")


def _doc(row: Sequence[Any]) -> Document:
    return Document(*row)


class DocumentsMixin(CacheMixin):
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

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, Document]:
        """The documents among ``doc_ids`` that exist, by id."""
        out: dict[str, Document] = {}
        ids = list(doc_ids)
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            rows = self.connection().execute(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE id IN "
                                             f"({','.join('?' * len(part))})", part).fetchall()
            out.update({r[0]: _doc(r) for r in rows})
        return out

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

    def searchable_counts(self) -> dict[str, int]:
        """Documents that can be found (they hold chunks), per KB."""
        rows = self.connection().execute("SELECT kb_id, count(*) FROM kb_documents WHERE chunk_count > 0 "
                                         "GROUP BY kb_id").fetchall()
        return {kb_id: int(n) for kb_id, n in rows}

    def documents_by_source(self, kb_id: str) -> dict[str, Document]:
        """The document of each source path in a KB (what a folder scan compares to)."""
        rows = self.connection().execute(
            f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = ? AND source_path IS NOT NULL", (kb_id,)).fetchall()
        return {r[11]: _doc(r) for r in rows}

    def unfinished_documents(self, kb_id: str | None = None) -> list[Document]:
        """Documents left in an in-between status whose runner is gone."""
        sql = f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE status IN ({','.join('?' * len(IN_FLIGHT))})"
        args: list[Any] = list(IN_FLIGHT)
        if kb_id:
            sql += " AND kb_id = ?"
            args.append(kb_id)
        rows = self.connection().execute(sql + " ORDER BY created_at", args).fetchall()
        return [d for d in map(_doc, rows) if not claim_alive(d.claimed_by, d.updated_at)]

    # ── claiming work ──────────────────────────────────────────────────────────
    def take_versions(self, specs: Sequence[NewDocument], claim: str) -> list[Document | None]:
        """Record new versions in one transaction, each claimed by ``claim``.

        A spec without ``expected_version`` inserts a row for a new path; one with it
        turns the path's row to the new version only while the row is still at that
        version. Either way ``None`` comes back when another runner got there first
        (the caller reads the row again and decides anew). A spec with status
        ``error`` records a failure without a claim.
        """
        from kbdesk.store.sqlite import new_id, utcnow

        now = utcnow()
        out: list[Document | None] = []
        with self.write() as conn:
            for kb_id in {spec.kb_id for spec in specs}:
                self._get_kb(conn, kb_id)
            for spec in specs:
                filename = check_filename(spec.filename)
                owner = None if spec.status == "error" else claim
                if spec.expected_version is None:
                    doc_id = spec.doc_id or new_id()
                    cur = conn.execute(
                        "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, status, "
                        "error, error_kind, uploaded_by, content_hash, source_path, source_mtime, claimed_by, version, "
                        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) "
                        "ON CONFLICT (kb_id, source_path) WHERE source_path IS NOT NULL DO NOTHING",
                        (doc_id, spec.kb_id, filename, spec.content_type, int(spec.size_bytes),
                         storage_key(spec.kb_id, doc_id, filename), spec.status, spec.error, spec.error_kind,
                         self.local_user_id, spec.content_hash, spec.source_path, spec.source_mtime, owner, now, now))
                    if cur.rowcount != 1:
                        out.append(None)
                        continue
                    self._bump(conn, spec.kb_id, docs=1, size=int(spec.size_bytes))
                    self.audit(conn, "document.upload", spec.kb_id, filename,
                               {"document_id": doc_id, "source_path": spec.source_path, "status": spec.status})
                else:
                    row = conn.execute("SELECT id, size_bytes FROM kb_documents WHERE kb_id = ? AND source_path = ? "
                                       "AND version = ?", (spec.kb_id, spec.source_path,
                                                           spec.expected_version)).fetchone()
                    if row is None:
                        out.append(None)
                        continue
                    doc_id = row[0]
                    conn.execute(
                        "UPDATE kb_documents SET filename = ?, content_type = ?, size_bytes = ?, content_hash = ?, "
                        "source_mtime = ?, status = ?, error = ?, error_kind = ?, claimed_by = ?, "
                        "version = version + 1, extracted_text = NULL, extracted_sections = NULL, updated_at = ? "
                        "WHERE id = ?",
                        (filename, spec.content_type, int(spec.size_bytes), spec.content_hash, spec.source_mtime,
                         spec.status, spec.error, spec.error_kind, owner, now, doc_id))
                    self._bump(conn, spec.kb_id, size=int(spec.size_bytes) - int(row[1]))
                    self.audit(conn, "document.update", spec.kb_id, filename,
                               {"document_id": doc_id, "source_path": spec.source_path, "status": spec.status})
                out.append(self._get_document(conn, doc_id))
        return out

    def create_documents(self, specs: Sequence[NewDocument]) -> list[Document]:
        """New document rows, claimed by this process (library use and tests; the
        ingestion uses :meth:`take_versions`). A path that has a row already is refused."""
        from kbdesk.store.claims import new_claim

        docs = self.take_versions(specs, new_claim())
        for spec, doc in zip(specs, docs):
            if doc is None:
                raise ConflictError(f"{spec.source_path} already has a document in this knowledge base")
        return docs  # type: ignore[return-value]

    def create_document(self, kb_id: str, filename: str, **fields: Any) -> Document:
        return self.create_documents([NewDocument(kb_id, filename, **fields)])[0]

    def touch_documents(self, items: Sequence[tuple[str, int, float | None]]) -> None:
        """Record a new mtime for files whose bytes did not change (doc id, version, mtime)."""
        with self.write() as conn:
            conn.executemany("UPDATE kb_documents SET source_mtime = ? WHERE id = ? AND version = ?",
                             [(mtime, doc_id, version) for doc_id, version, mtime in items])

    def claim_documents(self, docs: Sequence[Document], claim: str) -> list[Document]:
        """Take over rows whose runner is gone (or that nobody holds), each only while
        it is still at the version read; returns those taken, at their new version."""
        from kbdesk.store.sqlite import utcnow

        taken: list[Document] = []
        with self.write() as conn:
            for doc in docs:
                row = conn.execute("SELECT claimed_by, updated_at FROM kb_documents WHERE id = ? AND version = ?",
                                   (doc.id, doc.version)).fetchone()
                if row is None or (row[0] not in (None, claim) and claim_alive(row[0], row[1])):
                    continue
                conn.execute("UPDATE kb_documents SET claimed_by = ?, version = version + 1, updated_at = ? "
                             "WHERE id = ?", (claim, utcnow(), doc.id))
                taken.append(self._get_document(conn, doc.id))
        return taken

    def claim_document(self, doc_id: str) -> None:
        """Hold one document for this process (tests and library use)."""
        from kbdesk.store.claims import new_claim

        self.claim_documents([self.get_document(doc_id)], new_claim())

    def release_claims(self, claim: str) -> int:
        """Let go of every row ``claim`` still holds (a run that ended or was cancelled):
        they stay in their status for the next ``add`` or ``resume`` to take."""
        with self.write() as conn:
            return conn.execute("UPDATE kb_documents SET claimed_by = NULL WHERE claimed_by = ?", (claim,)).rowcount

    def set_statuses(self, updates: Sequence[StatusUpdate]) -> None:
        """Move documents to new statuses in one transaction. An update naming a
        version applies only while the row is at it; a vanished document is skipped."""
        from kbdesk.store.sqlite import utcnow

        now = utcnow()
        with self.write() as conn:
            for u in updates:
                if u.status not in DOC_STATUSES:
                    raise InvalidInputError(f"unknown document status {u.status!r}")
                where, args = ("id = ? AND version = ?", (u.doc_id, u.version)) if u.version is not None \
                    else ("id = ?", (u.doc_id,))
                sets = "status = ?, error = ?, error_kind = ?, updated_at = ?"
                values: tuple[Any, ...] = (u.status, u.error, u.error_kind if u.status == "error" else None, now)
                if u.extracted_text is not None:
                    sets += ", extracted_text = ?, extracted_sections = ?"
                    values += (u.extracted_text, json.dumps(u.sections) if u.sections is not None else None)
                if u.status == "error":
                    sets += ", claimed_by = NULL"
                conn.execute(f"UPDATE kb_documents SET {sets} WHERE {where}", values + args)

    def set_document_status(self, doc_id: str, status: str, *, error: str | None = None,
                            extracted_text: str | None = None,
                            sections: list[tuple[int, int, dict[str, Any]]] | None = None) -> None:
        self.set_statuses([StatusUpdate(doc_id, status, error, extracted_text, sections)])

    # ── making documents ready ─────────────────────────────────────────────────
    def finish_documents(self, items: Sequence[tuple[Any, ...]]) -> list[Document | Exception]:
        """Make documents ready in one transaction, each completely or not at all.

        An item is ``(doc_id, chunks, vectors)`` or ``(doc_id, chunks, vectors,
        version)``. Each document's older chunks are swapped for the new ones with
        their keyword rows and vectors (which are the embedding cache too: see
        :meth:`cached_vectors`), and the KB's stats move. One that fails — it was
        deleted meanwhile, or another runner has claimed it for a newer version
        (:class:`SupersededError`) — is rolled back to its savepoint and returned as
        its error while the others commit.
        """
        from kbdesk.store.sqlite import utcnow

        now = utcnow()
        out: list[Document | Exception] = []
        with self.write() as conn:
            fresh: dict[str, bool] = {}
            added: dict[str, list[tuple[int, bytes]]] = {}
            removed: dict[str, list[int]] = {}
            for item in items:
                doc_id, chunks, vectors = item[:3]
                version = item[3] if len(item) > 3 else None
                conn.execute("SAVEPOINT finish_doc")
                try:
                    out.append(self._finish_one(conn, doc_id, list(chunks), vectors, version, now, fresh, added,
                                                removed))
                except Exception as exc:  # noqa: BLE001 - this document alone fails
                    conn.execute("ROLLBACK TO finish_doc")
                    out.append(exc)
                conn.execute("RELEASE finish_doc")
            for kb_id, was_fresh in fresh.items():
                self.vectors.after_write(conn, kb_id, added.get(kb_id, []), removed.get(kb_id, []), was_fresh)
        return out

    def _finish_one(self, conn: Any, doc_id: str, chunks: list[ChunkInput], vectors: Sequence[Any] | None,
                    version: int | None, now: str, fresh: dict[str, bool],
                    added: dict[str, list[tuple[int, bytes]]], removed: dict[str, list[int]]) -> Document:
        if not chunks:
            raise InvalidInputError("a ready document needs at least one chunk")
        doc = self._get_document(conn, doc_id)
        if version is not None and doc.version != version:
            raise SupersededError(f"{doc.filename} was claimed for a newer version meanwhile")
        kb = self._get_kb(conn, doc.kb_id)
        blobs = self._vector_blobs(kb, vectors, len(chunks))
        if kb.id not in fresh:
            fresh[kb.id] = self.vectors_fresh(conn, kb.id)
        gone_vecs, gone = self._delete_chunks(conn, doc_id)
        new_rows = self._insert_chunks(conn, kb.id, doc_id, chunks, blobs, now)
        conn.execute("UPDATE kb_documents SET status = 'ready', error = NULL, error_kind = NULL, chunk_count = ?, "
                     "claimed_by = NULL, indexed_at = ?, indexed_hash = content_hash, updated_at = ? WHERE id = ?",
                     (len(chunks), now, now, doc_id))
        self._bump(conn, kb.id, chunks=len(chunks) - gone)
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

        filename = check_filename(filename)
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
            if source_path is not None and conn.execute(
                    "SELECT 1 FROM kb_documents WHERE kb_id = ? AND source_path = ?", (kb_id, source_path)).fetchone():
                raise ConflictError(f"{source_path} already has a document in '{kb.name}'")
            conn.execute(
                "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, extracted_text, "
                "chunk_count, status, uploaded_by, content_hash, source_path, created_at, updated_at, version, "
                "indexed_at, indexed_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'ready', ?, ?, ?, ?, ?, 1, ?, ?)",
                (doc_id, kb_id, filename, content_type, size, storage_key(kb_id, doc_id, filename), text,
                 len(items), self.local_user_id, content_hash, source_path, now, now, now, content_hash),
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
