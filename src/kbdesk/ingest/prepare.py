"""Deciding what each found file needs, and recording new documents in bulk.

A file whose size and mtime match its ready document is unchanged without being read;
otherwise its SHA-256 decides: the same bytes already ready (under any name) are not
added again, bytes that failed before are retried, anything else becomes a new
document (replacing the older version of the same path when it is ready). Bytes are
stored before their row is written, and rows are written many per transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbdesk.ingest.batch import Job, sha256, write_file
from kbdesk.ingest.events import EventSink, IngestEvent
from kbdesk.ingest.extract import content_type_for
from kbdesk.ingest.folders import FoundFile
from kbdesk.models import Document, KnowledgeBase
from kbdesk.store.documents import IN_FLIGHT, NewDocument, storage_key

ROWS_PER_TRANSACTION = 256


@dataclass
class _Pending:
    spec: NewDocument
    kind: str  # "added" or "updated"


class Preparer:
    def __init__(self, store: Any, files_dir: Path, max_bytes: int, on_event: EventSink, report: Any) -> None:
        self.store = store
        self.files_dir = files_dir
        self.max_bytes = max_bytes
        self.on_event = on_event
        self.report = report
        self._made_dirs: set[Path] = set()

    def prepare(self, kb: KnowledgeBase, files: list[FoundFile], by_source: dict[str, Document]) -> list[Job]:
        from kbdesk.store.sqlite import new_id

        jobs: list[Job] = []
        pending: list[_Pending] = []
        seen: dict[str, str] = {}  # content hash -> filename, within this run
        for file in files:
            previous = by_source.get(str(file.path))
            if previous and previous.status == "ready" and previous.size_bytes == file.size \
                    and previous.source_mtime == file.mtime:
                self._unchanged(file, previous)
                continue
            if file.size > self.max_bytes:
                self._too_big(kb, file, previous, pending)
                continue
            try:
                with open(file.path, "rb") as handle:
                    data = handle.read(self.max_bytes + 1)
            except OSError as exc:
                reason = f"cannot read file ({exc.strerror})"
                self.report.failed.append((file.name, reason))
                self.on_event(IngestEvent("error", file.name, detail=reason))
                continue
            digest = sha256(data)
            if digest in seen:
                self._unchanged(file, None)  # the same bytes under another name in this run
                continue
            seen[digest] = file.name
            same = self.store.document_with_hash(kb.id, digest)
            if same and same.status == "ready":
                self._unchanged(file, same)
                continue
            if same and same.status in IN_FLIGHT:
                continue  # being processed (resumed by this run, or by a live worker)
            if same and same.status == "error":  # the same bytes failed before: try again
                path = self.files_dir / same.storage_key
                if not path.exists():
                    write_file(path, data)
                self.store.set_document_status(same.id, "pending")
                self.store.claim_document(same.id)
                jobs.append(Job(same, "added"))
                continue
            doc_id = new_id()
            self._store(kb, doc_id, file.name, data)
            spec = NewDocument(kb.id, file.name, content_type=content_type_for(file.name) or "application/octet-stream",
                               size_bytes=file.size, content_hash=digest, source_path=str(file.path),
                               source_mtime=file.mtime, replaces_id=previous.id if previous else None,
                               doc_id=doc_id)
            pending.append(_Pending(spec, "updated" if previous else "added"))
            if len(pending) >= ROWS_PER_TRANSACTION:
                jobs.extend(self._flush(pending))
        jobs.extend(self._flush(pending))
        return jobs

    def _unchanged(self, file: FoundFile, doc: Document | None) -> None:
        self.report.unchanged.append(file.name)
        self.on_event(IngestEvent("unchanged", file.name, doc.id if doc else None, "ready"))

    def _too_big(self, kb: KnowledgeBase, file: FoundFile, previous: Document | None,
                 pending: list[_Pending]) -> None:
        reason = f"file is {file.size / 1048576:.1f} MB, over the {self.max_bytes / 1048576:g} MB limit"
        self.report.failed.append((file.name, reason))
        if previous and previous.status == "error" and previous.error == reason:
            return  # already recorded as failed for this reason
        spec = NewDocument(kb.id, file.name, content_type=content_type_for(file.name) or "application/octet-stream",
                           size_bytes=file.size, content_hash=None, source_path=str(file.path),
                           source_mtime=file.mtime, status="error", error=reason,
                           replaces_id=previous.id if previous and previous.status == "error" else None)
        pending.append(_Pending(spec, "failed"))

    def _store(self, kb: KnowledgeBase, doc_id: str, filename: str, data: bytes) -> None:
        path = self.files_dir / storage_key(kb.id, doc_id, filename)
        if path.parent not in self._made_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._made_dirs.add(path.parent)
        write_file(path, data)

    def _flush(self, pending: list[_Pending]) -> list[Job]:
        if not pending:
            return []
        docs = self.store.create_documents([p.spec for p in pending])
        jobs = []
        for item, doc in zip(pending, docs):
            if item.kind == "failed":
                if item.spec.replaces_id:
                    self.store.delete_document(item.spec.replaces_id)
                self.on_event(IngestEvent("queued", doc.filename, doc.id, "error", size=doc.size_bytes))
                self.on_event(IngestEvent("error", doc.filename, doc.id, "error", doc.error))
                continue
            self.on_event(IngestEvent("queued", doc.filename, doc.id, "pending", size=doc.size_bytes))
            jobs.append(Job(doc, item.kind))
        pending.clear()
        return jobs
