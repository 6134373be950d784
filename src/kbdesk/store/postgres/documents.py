"""Documents in the Postgres store: reading them and their small lifecycle steps.

The same semantics as :mod:`kbdesk.store.documents` (SQLite): rows are created
``pending`` and claimed by ``host:pid``; statuses move in small transactions; the
transaction that makes a document ``ready`` is in :mod:`.chunks`. Text Postgres
refuses (NUL bytes, lone surrogates) is cleaned on the way in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.models import DOC_STATUSES, Document
from kbdesk.store.documents import IN_FLIGHT, NewDocument, StatusUpdate, storage_key, this_worker, worker_alive
from kbdesk.store.postgres.access import check_manage, is_uuid
from kbdesk.store.postgres.values import clean_text, clean_text_and_sections, iso
from kbdesk.store.records import check_name

DOC_COLUMNS = ("id, kb_id, filename, content_type, size_bytes, storage_key, chunk_count, status, error, "
               "uploaded_by, content_hash, source_path, created_at, updated_at, source_mtime")


def _doc(row: Sequence[Any]) -> Document:
    values = list(row)
    values[12], values[13] = iso(values[12]), iso(values[13])
    return Document(*values)


def _jsonb(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return None if value is None else Jsonb(value)


class DocumentsMixin:
    """Needs ``write()``, ``connection()``, ``audit()``, ``_get_kb``, ``_bump``, ``identity``."""

    # ── reading ────────────────────────────────────────────────────────────────
    def _get_document(self, conn: Any, doc_id: str) -> Document:
        row = None
        if is_uuid(doc_id):
            row = conn.execute(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE id = %s", (doc_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no document with id '{doc_id}'")
        return _doc(row)

    def get_document(self, doc_id: str) -> Document:
        return self._get_document(self.connection(), doc_id)

    def find_document(self, kb_id: str, ref: str) -> Document:
        """A document of a KB by id, unique id prefix, or filename."""
        prefix = ref.lower() + "%" if len(ref) >= 4 and all(c in "0123456789abcdefABCDEF-" for c in ref) else None
        rows = self.connection().execute(
            f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = %s AND (id::text = lower(%s) OR filename = %s "
            "OR (%s::text IS NOT NULL AND id::text LIKE %s)) LIMIT 3", (kb_id, ref, ref, prefix, prefix)).fetchall()
        exact = [r for r in rows if r[0] == ref.lower()]
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
        sql = f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = %s"
        args: tuple[Any, ...] = (kb_id,)
        if status:
            sql += " AND status = %s"
            args += (status,)
        return [_doc(r) for r in self.connection().execute(sql + " ORDER BY filename, created_at, id", args)]

    def document_sections(self, doc_id: str) -> list[tuple[str, dict[str, Any]]] | None:
        """The stored text cut back into its sections (text, metadata), or None without text."""
        row = self.connection().execute("SELECT extracted_text, extracted_sections FROM kb_documents WHERE id = %s",
                                        (doc_id,)).fetchone() if is_uuid(doc_id) else None
        if row is None:
            raise NotFoundError(f"no document with id '{doc_id}'")
        text, sections = row
        if text is None:
            return None
        if not sections:
            return [(text, {})]
        return [(text[start:end], meta) for start, end, meta in sections]

    def document_text(self, doc_id: str) -> str | None:
        row = self.connection().execute("SELECT extracted_text FROM kb_documents WHERE id = %s",
                                        (doc_id,)).fetchone() if is_uuid(doc_id) else None
        if row is None:
            raise NotFoundError(f"no document with id '{doc_id}'")
        return row[0]

    def documents_by_source(self, kb_id: str) -> dict[str, Document]:
        """The newest document for each source path in a KB (what a folder scan compares to)."""
        rows = self.connection().execute(
            f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = %s AND source_path IS NOT NULL "
            "ORDER BY created_at, id", (kb_id,)).fetchall()
        return {r[11]: _doc(r) for r in rows}

    def document_with_hash(self, kb_id: str, content_hash: str) -> Document | None:
        row = self.connection().execute(
            f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = %s AND content_hash = %s "
            "ORDER BY status = 'ready' DESC, created_at DESC LIMIT 1", (kb_id, content_hash)).fetchone()
        return _doc(row) if row else None

    def unfinished_documents(self, kb_id: str | None = None) -> list[Document]:
        """Documents left in an in-between status whose worker process is gone."""
        sql = f"SELECT {DOC_COLUMNS}, claimed_by FROM kb_documents WHERE status = ANY(%s)"
        args: list[Any] = [list(IN_FLIGHT)]
        if kb_id:
            sql += " AND kb_id = %s"
            args.append(kb_id)
        rows = self.connection().execute(sql + " ORDER BY created_at, id", args).fetchall()
        return [_doc(r[:-1]) for r in rows if not worker_alive(r[-1]) or r[-1] == this_worker()]

    # ── the lifecycle's small steps ────────────────────────────────────────────
    def create_documents(self, specs: Sequence[NewDocument]) -> list[Document]:
        """New document rows, claimed by this process, in one transaction (the caller
        has stored their bytes first)."""
        from kbdesk.store.sqlite import new_id

        if not specs:
            return []
        worker = this_worker()
        ids: list[str] = []
        with self.write() as conn:
            for kb_id in sorted({spec.kb_id for spec in specs}):
                check_manage(self.identity, self._get_kb(conn, kb_id))
            for spec in specs:
                filename = clean_text(check_name(spec.filename, "filename"))
                doc_id = spec.doc_id or new_id()
                conn.execute(
                    "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, status, "
                    "error, uploaded_by, content_hash, source_path, source_mtime, replaces_id, claimed_by) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (doc_id, spec.kb_id, filename, clean_text(spec.content_type), int(spec.size_bytes),
                     storage_key(spec.kb_id, doc_id, filename), spec.status, clean_text(spec.error),
                     self.local_user_id, spec.content_hash, clean_text(spec.source_path), spec.source_mtime,
                     spec.replaces_id, None if spec.status == "error" else worker))
                self._bump(conn, spec.kb_id, docs=1, size=int(spec.size_bytes))
                self.audit(conn, "document.upload", spec.kb_id, filename,
                           {"document_id": doc_id, "source_path": spec.source_path, "status": spec.status})
                ids.append(doc_id)
            rows = conn.execute(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE id = ANY(%s::uuid[])",
                                (ids,)).fetchall()
        by_id = {r[0]: _doc(r) for r in rows}
        return [by_id[doc_id] for doc_id in ids]

    def create_document(self, kb_id: str, filename: str, **fields: Any) -> Document:
        return self.create_documents([NewDocument(kb_id, filename, **fields)])[0]

    def claim_document(self, doc_id: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE kb_documents SET claimed_by = %s WHERE id = %s", (this_worker(), doc_id))

    def set_statuses(self, updates: Sequence[StatusUpdate]) -> None:
        """Move documents to new statuses in one transaction (a vanished document is skipped)."""
        with self.write() as conn:
            for u in updates:
                if u.status not in DOC_STATUSES:
                    raise InvalidInputError(f"unknown document status {u.status!r}")
                if u.extracted_text is not None:
                    text, sections = clean_text_and_sections(u.extracted_text,
                                                             [list(s) for s in u.sections] if u.sections else u.sections)
                    conn.execute("UPDATE kb_documents SET status = %s, error = %s, extracted_text = %s, "
                                 "extracted_sections = %s, updated_at = now() WHERE id = %s",
                                 (u.status, clean_text(u.error), text, _jsonb(sections), u.doc_id))
                else:
                    conn.execute("UPDATE kb_documents SET status = %s, error = %s, updated_at = now() WHERE id = %s",
                                 (u.status, clean_text(u.error), u.doc_id))
                if u.status == "error":
                    conn.execute("UPDATE kb_documents SET claimed_by = NULL WHERE id = %s", (u.doc_id,))

    def set_document_status(self, doc_id: str, status: str, *, error: str | None = None,
                            extracted_text: str | None = None,
                            sections: list[tuple[int, int, dict[str, Any]]] | None = None) -> None:
        self.set_statuses([StatusUpdate(doc_id, status, error, extracted_text, sections)])

    def delete_document(self, doc_id: str) -> Document:
        """Delete a document with its chunks, keyword rows and vectors (by cascade)."""
        with self.write() as conn:
            doc = self._get_document(conn, doc_id)
            check_manage(self.identity, self._get_kb(conn, doc.kb_id))
            count = conn.execute("SELECT count(*) FROM kb_chunks WHERE document_id = %s", (doc_id,)).fetchone()[0]
            conn.execute("DELETE FROM kb_documents WHERE id = %s", (doc_id,))
            self._bump(conn, doc.kb_id, docs=-1, chunks=-count, size=-doc.size_bytes)
            self.audit(conn, "document.delete", doc.kb_id, doc.filename, {"document_id": doc_id})
            return doc

    def log_usage(self, role: str, *, provider: str = "", model: str = "", kb_id: str | None = None,
                  inputs: int = 0, prompt_tokens: int | None = None, completion_tokens: int | None = None,
                  total_tokens: int | None = None) -> None:
        with self.write() as conn:
            conn.execute("INSERT INTO kbdesk_usage_log(user_id, role, provider, model, kb_id, prompt_tokens, "
                         "completion_tokens, total_tokens, inputs) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                         (self.local_user_id, role, provider, model, kb_id, prompt_tokens, completion_tokens,
                          total_tokens, inputs))
