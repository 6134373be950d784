"""Claiming work and moving statuses: the first half of a document's ingestion lifecycle.

A runner claims a row for a new version in the write that bumps its ``version`` — rows
for new paths many in one statement, a known path's row only while it is still at the
version the runner read — and every later status move names that version, so a runner
that lost its claim never overwrites newer work. Part of
:class:`kbdesk.store.core.documents.Documents`, for both engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kbdesk.errors import ConflictError, InvalidInputError, NameTakenError
from kbdesk.filters import file_type_of
from kbdesk.models import DOC_STATUSES, Document
from kbdesk.store.claims import claim_alive, new_claim
from kbdesk.store.core.compose import Base
from kbdesk.store.core.parts import ChunkStorage, KbRecords
from kbdesk.store.core.ready import rows_by_id
from kbdesk.store.dbapi import Connection
from kbdesk.store.doc_types import (
    FACT_SETS,
    NAME_RULE,
    NewDocument,
    StatusUpdate,
    check_filename,
    facts_values,
    storage_key,
)
from kbdesk.store.engine import Engine
from kbdesk.store.ids import new_ids


class DocumentClaims:
    """The claiming half of :class:`~kbdesk.store.core.documents.Documents` (one repository
    in two files): given the store's ``base``, its KB records (``kbs``) and the engine's
    ``chunks``."""

    def __init__(self, base: Base, kbs: KbRecords, chunks: ChunkStorage) -> None:
        self.base = base
        self.kbs = kbs
        self.chunks = chunks

    @property
    def db(self) -> Engine:
        return self.base.db

    if TYPE_CHECKING:  # the other half's (kbdesk.store.core.documents)

        def _doc(self, row: Sequence[Any]) -> Document: ...
        def _get_document(self, conn: Connection, doc_id: str, *, lock: bool = False) -> Document: ...
        def get_document(self, doc_id: str) -> Document: ...

    # ── claiming work ──────────────────────────────────────────────────────────
    def take_versions(self, specs: Sequence[NewDocument], claim: str) -> list[Document | None]:
        """Record new versions in one transaction, each claimed by ``claim``.

        A spec without ``expected_version`` inserts a row for a new path; one with it
        turns the path's row to the new version only while the row is still at that
        version. Either way ``None`` comes back when another runner got there first
        (the caller reads the row again and decides anew). A spec with status
        ``error`` records a failure without a claim. A row the database refuses because
        its file name is another document's (:data:`~kbdesk.store.doc_types.NAME_RULE`)
        raises :class:`~kbdesk.errors.NameTakenError`, and nothing is recorded.
        """
        try:
            return self._take_versions(specs, claim)
        except Exception as exc:
            if NAME_RULE in str(exc):
                named = f"'{specs[0].filename}'" if len(specs) == 1 else "one of these names"
                raise NameTakenError(
                    f"this knowledge base has another document named {named} (one of the two came by upload)"
                ) from None
            raise

    def _take_versions(self, specs: Sequence[NewDocument], claim: str) -> list[Document | None]:
        with self.base.write() as conn:
            for kb_id in sorted({spec.kb_id for spec in specs}):
                self.base.policy.check_manage(self.kbs.kb_row(conn, kb_id))
            ids: list[str | None] = [None] * len(specs)
            fresh = [n for n, spec in enumerate(specs) if spec.expected_version is None]
            for n, doc_id in zip(fresh, self._insert_new(conn, [specs[n] for n in fresh], claim), strict=True):
                ids[n] = doc_id
            for n, spec in enumerate(specs):
                if spec.expected_version is not None:
                    ids[n] = self._take_one(conn, spec, claim)
            rows = rows_by_id(self, conn, [doc_id for doc_id in ids if doc_id is not None])
        return [None if doc_id is None else rows[doc_id] for doc_id in ids]

    def _insert_new(self, conn: Connection, specs: Sequence[NewDocument], claim: str) -> list[str | None]:
        """Rows for new paths in one statement; the id of each, or None where another
        runner's row for the path came first."""
        if not specs:
            return []
        db = self.db
        now = db.now()
        ids = [spec.doc_id or fresh for spec, fresh in zip(specs, new_ids(len(specs)), strict=True)]
        rows = []
        for doc_id, spec in zip(ids, specs, strict=True):
            filename = db.text(check_filename(spec.filename))
            rows.append(
                (
                    filename,
                    db.text(spec.content_type),
                    int(spec.size_bytes),
                    spec.content_hash,
                    spec.source_mtime,
                    spec.status,
                    db.text(spec.error),
                    spec.error_kind,
                    None if spec.status == "error" else claim,
                    doc_id,
                    spec.kb_id,
                    storage_key(spec.kb_id, doc_id, filename),
                    self.base.local_user_id,
                    db.text(spec.source_path),
                    now,
                    now,
                    db.text(spec.folder),
                    file_type_of(filename),
                )
            )
        db.executemany(
            conn,
            "INSERT INTO kb_documents(filename, content_type, size_bytes, content_hash, source_mtime, "
            "status, error, error_kind, claimed_by, id, kb_id, storage_key, uploaded_by, source_path, "
            "version, created_at, updated_at, folder, file_type) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?) "
            "ON CONFLICT (kb_id, source_path) WHERE source_path IS NOT NULL DO NOTHING",
            rows,
        )
        mine = set(rows_by_id(self, conn, ids))  # the ids are new: a row holding one is the one just inserted
        taken = [doc_id if doc_id in mine else None for doc_id in ids]
        stats: dict[str, tuple[int, int]] = {}
        for taken_id, spec in zip(taken, specs, strict=True):
            if taken_id is not None:
                docs, size = stats.get(spec.kb_id, (0, 0))
                stats[spec.kb_id] = (docs + 1, size + int(spec.size_bytes))
        for kb_id, (docs, size) in stats.items():
            self.kbs.bump_stats(conn, kb_id, docs=docs, size=size)
        self.kbs.audit_many(
            conn,
            [
                (
                    "document.upload",
                    spec.kb_id,
                    row[0],
                    {"document_id": doc_id, "source_path": row[13], "status": spec.status},
                )
                for doc_id, spec, row in zip(taken, specs, rows, strict=True)
                if doc_id is not None
            ],
        )
        return taken

    def _take_one(self, conn: Connection, spec: NewDocument, claim: str) -> str | None:
        """Turn a known path's row to a new version, while it is at ``spec.expected_version``."""
        db, sql = self.db, self.db.sql
        filename = db.text(check_filename(spec.filename))
        source = db.text(spec.source_path)
        row = conn.execute(
            sql(
                "SELECT id, size_bytes FROM kb_documents WHERE kb_id = ? AND source_path = ? "
                "AND version = ?" + db.for_update
            ),
            (spec.kb_id, source, spec.expected_version),
        ).fetchone()
        if row is None:
            return None
        doc_id = str(row[0])
        conn.execute(
            sql(
                "UPDATE kb_documents SET filename = ?, content_type = ?, size_bytes = ?, content_hash = ?, "
                "source_mtime = ?, status = ?, error = ?, error_kind = ?, claimed_by = ?, "
                "version = version + 1, extracted_text = NULL, extracted_sections = NULL, updated_at = ?, "
                "folder = ?, file_type = ? WHERE id = ?"
            ),
            (
                filename,
                db.text(spec.content_type),
                int(spec.size_bytes),
                spec.content_hash,
                spec.source_mtime,
                spec.status,
                db.text(spec.error),
                spec.error_kind,
                None if spec.status == "error" else claim,
                db.now(),
                db.text(spec.folder),
                file_type_of(filename),
                doc_id,
            ),
        )
        self.kbs.bump_stats(conn, spec.kb_id, size=int(spec.size_bytes) - int(row[1]))
        self.kbs.audit(
            conn,
            "document.update",
            spec.kb_id,
            filename,
            {"document_id": doc_id, "source_path": source, "status": spec.status},
        )
        return doc_id

    def create_documents(self, specs: Sequence[NewDocument]) -> list[Document]:
        """New document rows, claimed by this process (library use and tests; the
        ingestion uses :meth:`take_versions`). A path that has a row already is refused."""
        docs = self.take_versions(specs, new_claim())
        for spec, doc in zip(specs, docs, strict=True):
            if doc is None:
                raise ConflictError(f"{spec.source_path} already has a document in this knowledge base")
        return [doc for doc in docs if doc is not None]

    def create_document(self, kb_id: str, filename: str, **fields: Any) -> Document:
        return self.create_documents([NewDocument(kb_id, filename, **fields)])[0]

    def touch_documents(self, items: Sequence[tuple[str, int, float | None]]) -> None:
        """Record a new mtime for files whose bytes did not change (doc id, version, mtime)."""
        with self.base.write() as conn:
            self.db.executemany(
                conn,
                "UPDATE kb_documents SET source_mtime = ? WHERE id = ? AND version = ?",
                [(mtime, doc_id, version) for doc_id, version, mtime in items],
            )

    def claim_documents(self, docs: Sequence[Document], claim: str) -> list[Document]:
        """Take over rows whose runner is gone (or that nobody holds), each only while
        it is still at the version read; returns those taken, at their new version."""
        sql = self.db.sql
        taken: list[Document] = []
        with self.base.write() as conn:
            for doc in docs:
                row = conn.execute(
                    sql(
                        "SELECT claimed_by, updated_at FROM kb_documents WHERE id = ? AND version = ?"
                        + self.db.for_update
                    ),
                    (doc.id, doc.version),
                ).fetchone()
                if row is None or (row[0] not in (None, claim) and claim_alive(row[0], self.db.time_out(row[1]))):
                    continue
                conn.execute(
                    sql("UPDATE kb_documents SET claimed_by = ?, version = version + 1, updated_at = ? WHERE id = ?"),
                    (claim, self.db.now(), doc.id),
                )
                taken.append(self._get_document(conn, doc.id))
        return taken

    def claim_document(self, doc_id: str) -> None:
        """Hold one document for this process (tests and library use)."""
        self.claim_documents([self.get_document(doc_id)], new_claim())

    def release_claims(self, claim: str) -> int:
        """Let go of every row ``claim`` still holds (a run that ended or was cancelled):
        they stay in their status for the next ``add`` or ``resume`` to take."""
        with self.base.write() as conn:
            return conn.execute(
                self.db.sql("UPDATE kb_documents SET claimed_by = NULL WHERE claimed_by = ?"), (claim,)
            ).rowcount

    def set_statuses(self, updates: Sequence[StatusUpdate]) -> None:
        """Move documents to new statuses in one transaction. An update naming a
        version applies only while the row is at it; a vanished document is skipped."""
        with self.base.write() as conn:
            self._set_statuses(conn, updates)

    def _set_statuses(self, conn: Connection, updates: Sequence[StatusUpdate]) -> None:
        """One ``executemany`` per kind of update (with text or not, an error or not,
        naming a version or not)."""
        now = self.db.now()
        groups: dict[tuple[bool, bool, bool], list[tuple[Any, ...]]] = {}
        for u in updates:
            if u.status not in DOC_STATUSES:
                raise InvalidInputError(f"unknown document status {u.status!r}")
            if not self.db.valid_id(u.doc_id):
                continue
            shape = (u.extracted_text is not None, u.status == "error", u.version is not None)
            values: tuple[Any, ...] = (
                u.status,
                self.db.text(u.error),
                u.error_kind if u.status == "error" else None,
                now,
            )
            if shape[0]:
                values += self.db.text_and_sections(u.extracted_text, u.sections)
                values += facts_values(self.db, u.sections)
            values += (u.doc_id, u.version) if shape[2] else (u.doc_id,)
            groups.setdefault(shape, []).append(values)
        for (text, error, versioned), rows in groups.items():
            sets = "status = ?, error = ?, error_kind = ?, updated_at = ?"
            if text:
                sets += f", extracted_text = ?, extracted_sections = ?, {FACT_SETS}"
            if error:
                sets += ", claimed_by = NULL"
            where = "id = ? AND version = ?" if versioned else "id = ?"
            self.db.executemany(conn, f"UPDATE kb_documents SET {sets} WHERE {where}", rows)

    def set_document_status(
        self,
        doc_id: str,
        status: str,
        *,
        error: str | None = None,
        extracted_text: str | None = None,
        sections: list[tuple[int, int, dict[str, Any]]] | None = None,
    ) -> None:
        self.set_statuses([StatusUpdate(doc_id, status, error, extracted_text, sections)])
