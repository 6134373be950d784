"""Documents in the Postgres store: reading them and their small lifecycle steps.

The same semantics as :mod:`kbdesk.store.documents` (SQLite), by the rules of
:mod:`kbdesk.store.doc_types`: one row per source path, claimed for new work in the
write that bumps its ``version``; statuses move in small transactions, each only
while the row is at the version it names; the transaction that makes a document
``ready`` is in :mod:`.chunks`. Text Postgres refuses (NUL bytes, lone surrogates) is
cleaned on the way in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError
from kbdesk.models import DOC_STATUSES, Document
from kbdesk.store.claims import claim_alive, new_claim
from kbdesk.store.doc_types import IN_FLIGHT, NewDocument, StatusUpdate, check_filename, storage_key
from kbdesk.store.postgres.access import check_manage, is_uuid
from kbdesk.store.postgres.values import clean_text, clean_text_and_sections, iso

DOC_COLUMNS = ("id, kb_id, filename, content_type, size_bytes, storage_key, chunk_count, status, error, "
               "uploaded_by, content_hash, source_path, created_at, updated_at, source_mtime, version, indexed_at, "
               "indexed_hash, error_kind, claimed_by")


def _doc(row: Sequence[Any]) -> Document:
    values = list(row)
    values[12], values[13], values[16] = iso(values[12]), iso(values[13]), iso(values[16])
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

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, Document]:
        """The documents among ``doc_ids`` that exist, by id."""
        ids = [d for d in doc_ids if is_uuid(d)]
        rows = self.connection().execute(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE id = ANY(%s::uuid[])",
                                         (ids,)).fetchall() if ids else []
        return {r[0]: _doc(r) for r in rows}

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

    def searchable_counts(self) -> dict[str, int]:
        """Documents that can be found (they hold chunks), per KB."""
        rows = self.connection().execute("SELECT kb_id, count(*) FROM kb_documents WHERE chunk_count > 0 "
                                         "GROUP BY kb_id").fetchall()
        return {str(kb_id): int(n) for kb_id, n in rows}

    def documents_by_source(self, kb_id: str) -> dict[str, Document]:
        """The document of each source path in a KB (what a folder scan compares to)."""
        rows = self.connection().execute(
            f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE kb_id = %s AND source_path IS NOT NULL",
            (kb_id,)).fetchall()
        return {r[11]: _doc(r) for r in rows}

    def unfinished_documents(self, kb_id: str | None = None) -> list[Document]:
        """Documents left in an in-between status whose runner is gone."""
        sql = f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE status = ANY(%s)"
        args: list[Any] = [list(IN_FLIGHT)]
        if kb_id:
            sql += " AND kb_id = %s"
            args.append(kb_id)
        rows = self.connection().execute(sql + " ORDER BY created_at, id", args).fetchall()
        return [d for d in map(_doc, rows) if not claim_alive(d.claimed_by, d.updated_at)]

    # ── claiming work ──────────────────────────────────────────────────────────
    def take_versions(self, specs: Sequence[NewDocument], claim: str) -> list[Document | None]:
        """Record new versions in one transaction, each claimed by ``claim`` (see the
        SQLite store: a new path inserts a row, a known one moves to the new version
        only while it is at ``expected_version``; ``None`` when another runner won)."""
        from kbdesk.store.sqlite import new_id

        out: list[Document | None] = []
        with self.write() as conn:
            for kb_id in sorted({spec.kb_id for spec in specs}):
                check_manage(self.identity, self._get_kb(conn, kb_id))
            for spec in specs:
                filename = clean_text(check_filename(spec.filename))
                owner = None if spec.status == "error" else claim
                source = clean_text(spec.source_path)
                if spec.expected_version is None:
                    doc_id = spec.doc_id or new_id()
                    cur = conn.execute(
                        "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, status, "
                        "error, error_kind, uploaded_by, content_hash, source_path, source_mtime, claimed_by, version) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 1) "
                        "ON CONFLICT (kb_id, source_path) WHERE source_path IS NOT NULL DO NOTHING",
                        (doc_id, spec.kb_id, filename, clean_text(spec.content_type), int(spec.size_bytes),
                         storage_key(spec.kb_id, doc_id, filename), spec.status, clean_text(spec.error),
                         spec.error_kind, self.local_user_id, spec.content_hash, source, spec.source_mtime, owner))
                    if cur.rowcount != 1:
                        out.append(None)
                        continue
                    self._bump(conn, spec.kb_id, docs=1, size=int(spec.size_bytes))
                    self.audit(conn, "document.upload", spec.kb_id, filename,
                               {"document_id": doc_id, "source_path": source, "status": spec.status})
                else:
                    row = conn.execute(
                        "UPDATE kb_documents d SET filename = %s, content_type = %s, size_bytes = %s, "
                        "content_hash = %s, source_mtime = %s, status = %s, error = %s, error_kind = %s, "
                        "claimed_by = %s, version = d.version + 1, extracted_text = NULL, extracted_sections = NULL, "
                        "updated_at = now() FROM (SELECT id, size_bytes FROM kb_documents WHERE kb_id = %s AND "
                        "source_path = %s AND version = %s FOR UPDATE) old WHERE d.id = old.id "
                        "RETURNING d.id, old.size_bytes",
                        (filename, clean_text(spec.content_type), int(spec.size_bytes), spec.content_hash,
                         spec.source_mtime, spec.status, clean_text(spec.error), spec.error_kind, owner,
                         spec.kb_id, source, spec.expected_version)).fetchone()
                    if row is None:
                        out.append(None)
                        continue
                    doc_id = str(row[0])
                    self._bump(conn, spec.kb_id, size=int(spec.size_bytes) - int(row[1]))
                    self.audit(conn, "document.update", spec.kb_id, filename,
                               {"document_id": doc_id, "source_path": source, "status": spec.status})
                out.append(self._get_document(conn, doc_id))
        return out

    def create_documents(self, specs: Sequence[NewDocument]) -> list[Document]:
        """New document rows, claimed by this process (library use and tests; the
        ingestion uses :meth:`take_versions`). A path that has a row already is refused."""
        docs = self.take_versions(specs, new_claim())
        for spec, doc in zip(specs, docs):
            if doc is None:
                raise ConflictError(f"{spec.source_path} already has a document in this knowledge base")
        return docs  # type: ignore[return-value]

    def create_document(self, kb_id: str, filename: str, **fields: Any) -> Document:
        return self.create_documents([NewDocument(kb_id, filename, **fields)])[0]

    def touch_documents(self, items: Sequence[tuple[str, int, float | None]]) -> None:
        """Record a new mtime for files whose bytes did not change (doc id, version, mtime)."""
        with self.write() as conn, conn.cursor() as cur:
            cur.executemany("UPDATE kb_documents SET source_mtime = %s WHERE id = %s AND version = %s",
                            [(mtime, doc_id, version) for doc_id, version, mtime in items])

    def claim_documents(self, docs: Sequence[Document], claim: str) -> list[Document]:
        """Take over rows whose runner is gone (or that nobody holds), each only while
        it is still at the version read; returns those taken, at their new version."""
        taken: list[Document] = []
        with self.write() as conn:
            for doc in docs:
                row = conn.execute("SELECT claimed_by, updated_at FROM kb_documents WHERE id = %s AND version = %s "
                                   "FOR UPDATE", (doc.id, doc.version)).fetchone()
                if row is None or (row[0] not in (None, claim) and claim_alive(row[0], row[1])):
                    continue
                conn.execute("UPDATE kb_documents SET claimed_by = %s, version = version + 1, updated_at = now() "
                             "WHERE id = %s", (claim, doc.id))
                taken.append(self._get_document(conn, doc.id))
        return taken

    def claim_document(self, doc_id: str) -> None:
        """Hold one document for this process (tests and library use)."""
        self.claim_documents([self.get_document(doc_id)], new_claim())

    def release_claims(self, claim: str) -> int:
        """Let go of every row ``claim`` still holds (they stay in their status for the
        next ``add`` or ``resume``)."""
        with self.write() as conn:
            return conn.execute("UPDATE kb_documents SET claimed_by = NULL WHERE claimed_by = %s", (claim,)).rowcount

    def set_statuses(self, updates: Sequence[StatusUpdate]) -> None:
        """Move documents to new statuses in one transaction. An update naming a
        version applies only while the row is at it; a vanished document is skipped."""
        with self.write() as conn:
            for u in updates:
                if u.status not in DOC_STATUSES:
                    raise InvalidInputError(f"unknown document status {u.status!r}")
                if not is_uuid(u.doc_id):
                    continue
                sets = "status = %s, error = %s, error_kind = %s, updated_at = now()"
                values: tuple[Any, ...] = (u.status, clean_text(u.error),
                                           u.error_kind if u.status == "error" else None)
                if u.extracted_text is not None:
                    text, sections = clean_text_and_sections(u.extracted_text,
                                                             [list(s) for s in u.sections] if u.sections else u.sections)
                    sets += ", extracted_text = %s, extracted_sections = %s"
                    values += (text, _jsonb(sections))
                if u.status == "error":
                    sets += ", claimed_by = NULL"
                where, args = ("id = %s AND version = %s", (u.doc_id, u.version)) if u.version is not None \
                    else ("id = %s", (u.doc_id,))
                conn.execute(f"UPDATE kb_documents SET {sets} WHERE {where}", values + args)

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
