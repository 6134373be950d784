"""Documents: reading them and their whole ingestion lifecycle, for both engines.

One row per source path (the rules of identity: :mod:`kbdesk.store.doc_types`). A runner
claims a row for a new version (:meth:`Documents.take_versions`) in the write that
bumps its ``version``; the row moves through ``extracting``, ``chunking`` and
``embedding`` (status moves of many documents share a transaction), and becomes
``ready`` atomically: its older chunks swapped for the new ones with their keyword rows
and vectors, the KB's stats moved — many documents per transaction
(:mod:`kbdesk.store.core.ready`), each complete or not at all. Every write of that
work names the version it belongs to, so a runner that lost its claim can never
overwrite newer work. A crash before the last
commit leaves a row in an in-between status (still serving its older chunks, marked
stale), which the next ``add`` or ``resume`` finishes.

How chunks, keyword rows and vectors are stored is each engine's own (its
:class:`~kbdesk.store.core.parts.ChunkStorage`, ``self.chunks``); the rules above are
written here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError, StoreError, SupersededError
from kbdesk.filters import file_type_of
from kbdesk.models import DOC_STATUSES, ChunkInput, Document, DocumentBrief, KnowledgeBase
from kbdesk.store.claims import claim_alive
from kbdesk.store.core.claiming import DocumentClaims
from kbdesk.store.core.compose import Base
from kbdesk.store.core.parts import BulkStorage, ChunkStorage, KbRecords, VectorChanges
from kbdesk.store.core.ready import READY_SQL, READY_TEXT_SQL, finish_batch, vector_blobs
from kbdesk.store.dbapi import Connection
from kbdesk.store.doc_types import (
    DOC_COLUMNS,
    FACT_COLUMNS,
    IN_FLIGHT,
    PROPERTIES,
    SOURCE,
    TAGS,
    StatusUpdate,
    check_filename,
    facts_values,
    storage_key,
)
from kbdesk.store.ids import ID_PREFIX, new_id


class Documents(DocumentClaims):
    """Documents over the store's ``base``, its KB records (``kbs``: ``kb_row``, ``bump_stats``,
    ``audit``) and the engine's ``chunks`` and ``bulk`` (a file's source key). Claims
    and status moves: :class:`~kbdesk.store.core.claiming.DocumentClaims`."""

    def __init__(self, base: Base, kbs: KbRecords, chunks: ChunkStorage, bulk: BulkStorage) -> None:
        super().__init__(base, kbs, chunks)
        self.bulk = bulk

    def _doc(self, row: Sequence[Any]) -> Document:
        values = list(row)
        for i in (12, 13, 16):
            values[i] = self.db.time_out(values[i])
        values[TAGS] = list(self.db.json_out(values[TAGS]) or [])
        values[PROPERTIES] = dict(self.db.json_out(values[PROPERTIES]) or {})
        values[PROPERTIES - 3] = values[PROPERTIES - 3] or ""  # file_type
        return Document(*values)

    # ── reading ────────────────────────────────────────────────────────────────
    def _get_document(self, conn: Connection, doc_id: str, *, lock: bool = False) -> Document:
        row = None
        if self.db.valid_id(doc_id):
            row = conn.execute(
                self.db.sql(
                    f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE id = ?" + (self.db.for_update if lock else "")
                ),
                (doc_id,),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no document with id '{doc_id}'")
        return self._doc(row)

    def get_document(self, doc_id: str) -> Document:
        return self._get_document(self.base.connection(), doc_id)

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, Document]:
        """The documents among ``doc_ids`` that exist, by id."""
        out: dict[str, Document] = {}
        ids = list(doc_ids)
        step = self.db.list_chunk
        for start in range(0, len(ids), step):
            where, args = self.db.in_list("id", ids[start : start + step], ids=True)
            rows = (
                self.base.connection()
                .execute(self.db.sql(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE {where}"), args)
                .fetchall()
            )
            out.update({r[0]: self._doc(r) for r in rows})
        return out

    def find_document(self, kb_id: str, ref: str) -> Document:
        """A document of a KB by id, unique id prefix, or filename."""
        prefix = ref.lower() + "%" if ID_PREFIX.match(ref) else None
        rows = (
            self.base.connection()
            .execute(
                self.db.sql(
                    f"SELECT {DOC_COLUMNS} FROM kb_documents "
                    f"WHERE kb_id = ? AND ({self.db.id_text('id')} = ? OR filename = ? "
                    f"OR (CAST(? AS TEXT) IS NOT NULL AND {self.db.id_text('id')} LIKE ?)) LIMIT 3"
                ),
                (kb_id, ref.lower(), ref, prefix, prefix),
            )
            .fetchall()
        )
        exact = [r for r in rows if r[0] == ref.lower()]
        if exact:
            return self._doc(exact[0])
        if len(rows) > 1:
            raise InvalidInputError(f"'{ref}' matches more than one document; use its id")
        if not rows:
            raise NotFoundError(f"no document '{ref}' in this knowledge base")
        return self._doc(rows[0])

    def list_documents(self, kb_id: str, status: str | None = None) -> list[Document]:
        if status is not None and status not in DOC_STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(DOC_STATUSES)}")
        sql = f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = ?"
        args: tuple[Any, ...] = (kb_id,)
        if status:
            sql += " AND status = ?"
            args += (status,)
        rows = self.base.connection().execute(self.db.sql(sql + " ORDER BY filename, created_at, id"), args)
        return [self._doc(r) for r in rows]

    def document_briefs(self, kb_id: str) -> list[DocumentBrief]:
        """Every document of a KB as a list shows it, in one snapshot. On SQLite the first
        read is answered by a covering index (schema step ``document_rows``): the columns it
        needs sit after the extracted text in the row, which a large document spills over
        many pages. Errors are read for the failed documents only."""
        with self.base.read() as conn:
            rows = conn.execute(
                self.db.sql(
                    "SELECT id, filename, source_path, size_bytes, chunk_count, status FROM kb_documents "
                    "WHERE kb_id = ?"
                ),
                (kb_id,),
            ).fetchall()
            errors = dict(
                conn.execute(
                    self.db.sql("SELECT id, error FROM kb_documents WHERE kb_id = ? AND status = 'error'"), (kb_id,)
                ).fetchall()
            )
        return [
            DocumentBrief(doc_id, filename, source, size, chunks, status, errors.get(doc_id))
            for doc_id, filename, source, size, chunks, status in rows
        ]

    def document_sections(self, doc_id: str) -> list[tuple[str, dict[str, Any]]] | None:
        """The stored text cut back into its sections (text, metadata), or None without text."""
        row = self._text_row(doc_id, "extracted_text, extracted_sections")
        text, sections = row
        if text is None:
            return None
        if not sections:
            return [(text, {})]
        return [(text[start:end], meta) for start, end, meta in self.db.json_out(sections)]

    def document_text(self, doc_id: str) -> str | None:
        return self._text_row(doc_id, "extracted_text")[0]

    def _text_row(self, doc_id: str, columns: str) -> Sequence[Any]:
        row = None
        if self.db.valid_id(doc_id):
            row = (
                self.base.connection()
                .execute(self.db.sql(f"SELECT {columns} FROM kb_documents WHERE id = ?"), (doc_id,))
                .fetchone()
            )
        if row is None:
            raise NotFoundError(f"no document with id '{doc_id}'")
        return row

    def searchable_counts(self) -> dict[str, int]:
        """Documents that can be found (they hold chunks), per KB."""
        rows = (
            self.base.connection()
            .execute("SELECT kb_id, count(*) FROM kb_documents WHERE chunk_count > 0 GROUP BY kb_id")
            .fetchall()
        )
        return {str(kb_id): int(n) for kb_id, n in rows}

    def source_key(self, path: Path) -> str:
        """The source a file's document is known by in this store: its path (a team
        server keeps hidden paths instead, :func:`kbdesk.ingest.names.hidden_source`)."""
        return self.bulk.source_key(path)

    def failed_counts(self) -> dict[str, int]:
        """Documents whose newest version failed, per KB (KBs with none left out)."""
        rows = (
            self.base.connection()
            .execute("SELECT kb_id, count(*) FROM kb_documents WHERE status = 'error' GROUP BY kb_id")
            .fetchall()
        )
        return {str(kb_id): int(n) for kb_id, n in rows}

    def documents_by_source(self, kb_id: str) -> dict[str, Document]:
        """The document of each source path in a KB (what a folder scan compares to)."""
        rows = (
            self.base.connection()
            .execute(
                self.db.sql(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = ? AND source_path IS NOT NULL"),
                (kb_id,),
            )
            .fetchall()
        )
        return {r[SOURCE]: self._doc(r) for r in rows}

    def unfinished_documents(self, kb_id: str | None = None) -> list[Document]:
        """Documents left in an in-between status whose runner is gone."""
        where, args = self.db.in_list("status", IN_FLIGHT)
        sql = f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE {where}"
        if kb_id:
            sql += " AND kb_id = ?"
            args.append(kb_id)
        rows = self.base.connection().execute(self.db.sql(sql + " ORDER BY created_at, id"), args).fetchall()
        return [d for d in map(self._doc, rows) if not claim_alive(d.claimed_by, d.updated_at)]

    # ── making documents ready ─────────────────────────────────────────────────
    def finish_documents(
        self,
        items: Sequence[tuple[Any, ...]],
        *,
        before: Sequence[StatusUpdate] = (),
        after: Sequence[StatusUpdate] = (),
        rows: bool = True,
    ) -> list[Document | Exception | None]:
        """Make documents ready in one transaction, each completely or not at all.

        An item is ``(doc_id, chunks, vectors)``, ``(doc_id, chunks, vectors, version)``
        or ``(doc_id, chunks, vectors, version, (text, sections))`` — the extracted text
        to store with the row. Each document's older chunks are swapped for the new ones
        with their keyword rows and vectors (which are the embedding cache too: see
        :meth:`cached_vectors`), and the KB's stats move. One that fails — it was
        deleted meanwhile, or another runner has claimed it for a newer version
        (:class:`SupersededError`) — is returned as its error while the others commit.
        ``before`` and ``after`` are status updates written in the same transaction
        (see :meth:`set_statuses`), before and after the documents are made ready.
        ``rows=False``: None stands for each document made ready (its row is not read back).
        """
        now = self.db.now()
        full = [(*item[:3], item[3] if len(item) > 3 else None, item[4] if len(item) > 4 else None) for item in items]
        with self.base.write() as conn:
            self._set_statuses(conn, before)
            changes = VectorChanges()
            try:
                with self.db.savepoint(conn):
                    out = finish_batch(self, conn, full, now, changes, rows)
            except StoreError:
                raise  # the database itself failed (a full disk): nothing of this transaction stays
            except Exception:  # noqa: BLE001 - the database refused part of it: one document at a time
                changes = VectorChanges()
                out = []
                for doc_id, chunks, vectors, version, text in full:
                    try:
                        with self.db.savepoint(conn):
                            out.append(
                                self._finish_one(conn, doc_id, list(chunks), vectors, version, text, now, changes)
                            )
                    except StoreError:
                        raise
                    except Exception as exc:  # noqa: BLE001 - this document alone fails
                        out.append(exc)
            self._set_statuses(conn, after)
            self.chunks.vectors_written(conn, changes)
        self.chunks.vectors_committed(changes)
        return out

    def _finish_one(
        self,
        conn: Connection,
        doc_id: str,
        chunks: list[ChunkInput],
        vectors: Sequence[Any] | None,
        version: int | None,
        text: tuple[str, Any] | None,
        now: Any,
        changes: VectorChanges,
    ) -> Document:
        if not chunks:
            raise InvalidInputError("a ready document needs at least one chunk")
        doc = self._get_document(conn, doc_id, lock=True)
        if version is not None and doc.version != version:
            raise SupersededError(f"{doc.filename} was claimed for a newer version meanwhile")
        kb = self.kbs.kb_row(conn, doc.kb_id)
        blobs = self._vector_blobs(conn, kb, vectors, len(chunks))
        self.chunks.vectors_touch(conn, kb.id, changes)
        gone = self._delete_chunks(conn, kb.id, doc_id, changes)
        self.chunks.insert_many(conn, kb.id, [(doc_id, chunks, blobs)], now, changes)
        if text is None:
            conn.execute(self.db.sql(READY_SQL), (len(chunks), now, now, doc_id))
        else:
            conn.execute(
                self.db.sql(READY_TEXT_SQL),
                (len(chunks), now, now, *self.db.text_and_sections(*text), *facts_values(self.db, text[1]), doc_id),
            )
        self.kbs.bump_stats(conn, kb.id, chunks=len(chunks) - gone)
        return self._get_document(conn, doc_id)

    def finish_document(self, doc_id: str, chunks: Sequence[ChunkInput], vectors: Sequence[Any] | None) -> Document:
        """Make one document ready (see :meth:`finish_documents`); raises its error."""
        result = self.finish_documents([(doc_id, chunks, vectors)])[0]
        if isinstance(result, Exception):
            raise result
        assert result is not None, "rows are read back by default"
        return result

    # ── whole documents in one call (library use, tests, imports) ──────────────
    def add_document(
        self,
        kb_id: str,
        filename: str,
        chunks: Sequence[ChunkInput | str],
        *,
        vectors: Any = None,
        content_type: str = "text/plain",
        size_bytes: int | None = None,
        extracted_text: str | None = None,
        content_hash: str | None = None,
        source_path: str | None = None,
        doc_id: str | None = None,
        source_mtime: float | None = None,
        folder: str | None = None,
        properties: dict[str, Any] | None = None,
    ) -> Document:
        """Store a whole document — row, chunks, keyword rows, vectors, stats — in one transaction.

        ``vectors`` (one per chunk) are required when the KB has an embedding model and
        refused when it has none. What search filters look at besides ``filename`` (its
        path): ``source_mtime`` (the file's modified time, seconds since the epoch),
        ``folder`` (the folder it was added from) and ``properties`` (``title``, ``tags``,
        ``author``, ``created``, ``date``).
        """
        db = self.db
        filename = db.text(check_filename(filename))
        items = [c if isinstance(c, ChunkInput) else ChunkInput(str(c)) for c in chunks]
        if not items:
            raise InvalidInputError(f"{filename}: a document needs at least one chunk")
        doc_id = doc_id or new_id()
        text = extracted_text if extracted_text is not None else "\n\n".join(c.content for c in items)
        size = size_bytes if size_bytes is not None else len(text.encode("utf-8", "surrogatepass"))
        now = db.now()
        changes = VectorChanges()
        with self.base.write() as conn:
            kb = self.kbs.kb_row(conn, kb_id)
            self.base.policy.check_manage(kb)
            blobs = self._vector_blobs(conn, kb, vectors, len(items))
            self.chunks.vectors_touch(conn, kb_id, changes)
            if (
                source_path is not None
                and conn.execute(
                    db.sql("SELECT 1 FROM kb_documents WHERE kb_id = ? AND source_path = ?"),
                    (kb_id, db.text(source_path)),
                ).fetchone()
            ):
                raise ConflictError(f"{source_path} already has a document in '{kb.name}'")
            conn.execute(
                db.sql(
                    "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
                    "extracted_text, chunk_count, status, uploaded_by, content_hash, source_path, created_at, "
                    f"updated_at, version, indexed_at, indexed_hash, file_type, source_mtime, folder, {FACT_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'ready', ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    doc_id,
                    kb_id,
                    filename,
                    db.text(content_type),
                    size,
                    storage_key(kb_id, doc_id, filename),
                    db.text(text),
                    len(items),
                    self.base.local_user_id,
                    content_hash,
                    db.text(source_path),
                    now,
                    now,
                    now,
                    content_hash,
                    file_type_of(filename),
                    source_mtime,
                    db.text(folder),
                    *facts_values(db, [(0, len(text), dict(properties or {}))]),
                ),
            )
            self.chunks.insert_many(conn, kb_id, [(doc_id, items, blobs)], now, changes)
            self.chunks.vectors_written(conn, changes)
            self.kbs.bump_stats(conn, kb_id, docs=1, chunks=len(items), size=size)
            self.kbs.audit(conn, "document.upload", kb_id, filename, {"document_id": doc_id, "chunks": len(items)})
            doc = self._get_document(conn, doc_id)
        self.chunks.vectors_committed(changes)
        return doc

    def delete_document(self, doc_id: str) -> Document:
        """Delete a document with its chunks, keyword rows and vectors."""
        changes = VectorChanges()
        with self.base.write() as conn:
            doc = self._get_document(conn, doc_id)
            self.base.policy.check_manage(self.kbs.kb_row(conn, doc.kb_id))
            self.chunks.vectors_touch(conn, doc.kb_id, changes)
            count = self._delete_chunks(conn, doc.kb_id, doc_id, changes)
            self.db.delete(conn, "kb_documents", "id = ?", (doc_id,))
            self.chunks.vectors_written(conn, changes)
            self.kbs.bump_stats(conn, doc.kb_id, docs=-1, chunks=-count, size=-doc.size_bytes)
            self.kbs.audit(conn, "document.delete", doc.kb_id, doc.filename, {"document_id": doc_id})
        return doc

    def _vector_blobs(self, conn: Connection, kb: KnowledgeBase, vectors: Any, count: int) -> list[bytes] | None:
        return vector_blobs(self.chunks, conn, kb, vectors, count)

    # ── one document's chunks (the engine's ChunkStorage) ──────────────────────
    def _delete_chunks(self, conn: Connection, kb_id: str, doc_id: str, changes: VectorChanges) -> int:
        return self.chunks.delete_many(conn, kb_id, [doc_id], changes).get(doc_id, 0)
