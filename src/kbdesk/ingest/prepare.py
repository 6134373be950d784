"""Deciding what each found file needs, and claiming the work in bulk.

A file is known by its source path: one document row per path (see
:mod:`kbdesk.store.doc_types`). Against that row a file is

* **unchanged** — size and mtime match a ready row, or its bytes hash to the row's
  (the new mtime is recorded, so the next run decides by ``stat`` alone); with
  ``checksum`` every file's bytes are hashed, so an edit that kept the size and had
  its mtime put back (``touch -r``, ``rsync -t``) is found too;
* a **known failure** — it failed for a reason of its own (broken, binary, empty,
  too big) and has not changed since: not tried again unless ``retry_failed``;
  failures of a provider or of kbdesk itself are always tried again;
* **in progress elsewhere** — another live runner holds its row: this run waits for
  it (:mod:`.pipeline`) instead of doing the same work twice (an upload is answered
  "try again" instead, :mod:`kbdesk.serve.uploads`);
* **new work** — a new path, or a new version of a known one: claimed in a write that
  bumps the row's version; its bytes go to the worker with the job, which stores the
  copy (atomically) before extracting it.

A file name that came by upload has one document in a KB, whichever way the file
comes next: the database refuses a second row of that name (:data:`kbdesk.store.doc_types.NAME_RULE`), and the
refused writer reads the rows again and becomes a new version of the one that came first.

Content hashes feed change detection and the embedding cache, never identity: a copy
of another file is its own document, and its vectors come from the cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbdesk.errors import KbdeskError, NameTakenError, StoreError
from kbdesk.ingest.batch import Job, sha256
from kbdesk.ingest.copies import read_at_most, write_copy
from kbdesk.ingest.events import EventSink, IngestEvent
from kbdesk.ingest.extract import content_type_for
from kbdesk.ingest.folders import FoundFile
from kbdesk.ingest.names import HIDDEN, UPLOAD, file_of
from kbdesk.ingest.ocr import NOT_INSTALLED_MARK, now_available
from kbdesk.models import Document, KnowledgeBase
from kbdesk.store.api import Store
from kbdesk.store.claims import claim_alive, describe
from kbdesk.store.doc_types import IN_FLIGHT, NewDocument

ROWS_PER_TRANSACTION = 256
# failures not tried again until the file changes: the file's own (too large, damaged,
# unsupported). The others — out of time, provider, store, internal — are tried again.
REMEMBERED = ("file",)


@dataclass
class Prepared:
    jobs: list[Job] = field(default_factory=list)
    elsewhere: list[Document] = field(default_factory=list)  # held by another live runner


@dataclass
class _Pending:
    file: FoundFile
    spec: NewDocument
    data: bytes | None  # None for a failure recorded without bytes
    kind: str  # "added", "updated" or "failed"


def failure_remembered(doc: Document, tesseract: str | None = None) -> bool:
    """A failure not worth trying again until the file changes — or, for a file that
    needed OCR on a machine without Tesseract, until Tesseract is there."""
    if doc.status != "error" or not (doc.error_kind in REMEMBERED or doc.error_kind is None):
        return False
    return not (doc.error and NOT_INSTALLED_MARK in doc.error and now_available(tesseract))


class Preparer:
    def __init__(
        self,
        store: Store,
        files_dir: Path,
        max_bytes: int,
        on_event: EventSink,
        report: Any,
        claim: str,
        *,
        retry_failed: bool = False,
        checksum: bool = False,
        tesseract: str | None = None,
    ) -> None:
        self.store = store
        self.files_dir = files_dir
        self.max_bytes = max_bytes
        self.on_event = on_event
        self.report = report
        self.claim = claim
        self.retry_failed = retry_failed
        self.checksum = checksum  # compare contents even when size and mtime match
        self.tesseract = tesseract  # ingest.tesseract: a failure for its absence is tried again once it is there
        self.on_jobs: Callable[[list[Job]], None] | None = None
        self.first: Callable[[], AbstractContextManager[Any]] = nullcontext

    def prepare(
        self,
        kb: KnowledgeBase,
        files: list[FoundFile],
        held: dict[str, Document],
        on_jobs: Callable[[list[Job]], None] | None = None,
        first: Callable[[], AbstractContextManager[Any]] = nullcontext,
    ) -> Prepared:
        """Jobs for ``files``; ``held`` are rows this run has claimed to resume (by id):
        a held row whose file changed since is turned to the new version instead.
        ``on_jobs`` takes the jobs as they are claimed (so work starts before the scan
        is through); without it they are all in the result. ``first`` wraps each claim
        (the run's writer lets claims go before its next round)."""
        out = Prepared()
        self.on_jobs = on_jobs
        self.first = first
        resumed = {doc.id: doc for doc in held.values()}
        todo = list(files)
        for _attempt in range(4):  # a row another runner took meanwhile is read again
            by_source = self.store.documents_by_source(kb.id)
            lost = self._prepare_round(kb, todo, by_source, resumed, out)
            if not lost:
                break
            todo = lost
        else:
            for file in todo:
                self.report.failed.append((file.name, "another kbdesk run kept changing this document; try again"))
                self._busy(file, "another kbdesk run kept changing this document")
        resumed_jobs = [Job(doc, "resumed") for doc in resumed.values()]
        if on_jobs is not None:
            on_jobs(resumed_jobs)
        else:
            out.jobs[:0] = resumed_jobs
        return out

    def _prepare_round(
        self,
        kb: KnowledgeBase,
        files: list[FoundFile],
        by_source: dict[str, Document],
        resumed: dict[str, Document],
        out: Prepared,
    ) -> list[FoundFile]:
        pending: list[_Pending] = []
        touches: list[tuple[str, int, float]] = []
        lost: list[FoundFile] = []
        by_name: dict[str, list[tuple[str, Document]]] = {}
        for source, doc in by_source.items():
            by_name.setdefault(doc.filename, []).append((source, doc))
        for file in files:
            prev = by_source.get(file.source)
            if prev is None:
                file, prev, problem = _adopt(file, by_name)
                if problem:
                    self._fail(file, problem)
                    continue
            held = prev is not None and prev.id in resumed
            if prev is not None and held:
                prev = resumed[prev.id]  # ours, at the version we claimed it
                if _same_stat(prev, file) and file_of(prev.source_path) is not None:
                    continue  # resumed as it is (a missing copy is read again from its source)
            elif prev is not None and prev.status in IN_FLIGHT:
                if prev.claimed_by == self.claim:  # claimed in an earlier round of this run: for another file
                    self._fail(file, f"another file of this run is the document named '{prev.filename}' already")
                    continue
                if claim_alive(prev.claimed_by, prev.updated_at):
                    out.elsewhere.append(prev)
                    self._busy(file, f"'{prev.filename}' is being indexed by {describe(prev.claimed_by)}")
                    continue
                # left by a runner that is gone: taken over as a new version below
            elif prev is not None and not self.checksum and _same_stat(prev, file) and self._settled(file, prev):
                continue
            if file.size > self.max_bytes:
                reason = f"file is {file.size / 1048576:.1f} MB, over the {self.max_bytes / 1048576:g} MB limit"
                self._queue_failure(kb, file, prev, reason, pending, resumed)
                continue
            try:
                data = read_at_most(file.path, file.size, self.max_bytes + 1)
            except OSError as exc:
                self._queue_failure(kb, file, prev, f"cannot read file ({exc.strerror or exc})", pending, resumed)
                continue
            digest = sha256(data)
            if (prev is not None and digest == prev.content_hash) and (
                held or prev.status == "ready" or (failure_remembered(prev, self.tesseract) and not self.retry_failed)
            ):
                touches.append((prev.id, prev.version, file.mtime))  # the same bytes, a new mtime
                if held:
                    self._keep_copy(prev, data)
                else:
                    self._settled(file, prev)
                continue
            if prev is not None:
                resumed.pop(prev.id, None)
            kind = "updated" if prev is not None and prev.indexed_hash is not None else "added"
            pending.append(_Pending(file, self._spec(kb, file, prev, digest), data, kind))
            if len(pending) >= ROWS_PER_TRANSACTION:
                lost += self._flush(pending, out)
        lost += self._flush(pending, out)
        if touches:
            self.store.touch_documents(touches)
        return lost

    def _keep_copy(self, doc: Document, data: bytes) -> None:
        """The stored copy of a resumed document, written from the file now when it is
        missing or wrong: a source kept hidden (a team server) cannot be read again later."""
        path = self.files_dir / doc.storage_key
        try:
            if sha256(path.read_bytes()) == doc.content_hash:
                return
        except OSError:
            pass  # missing: written below
        with suppress(OSError):  # the disk is full: the document fails later with the reason
            write_copy(path, data)

    # ── what a file is, against its row ───────────────────────────────────────
    def _settled(self, file: FoundFile, prev: Document) -> bool:
        """Report a file that needs no work (unchanged, or a remembered failure)."""
        if prev.status == "ready":
            self.report.unchanged.append(file.name)
            self.on_event(IngestEvent("unchanged", file.name, prev.id, "ready"))
            return True
        if failure_remembered(prev, self.tesseract) and not self.retry_failed:
            self.report.known_failures.append((file.name, prev.error or "failed"))
            self.on_event(IngestEvent("known-failure", file.name, prev.id, "error", prev.error))
            return True
        return False

    def _spec(
        self,
        kb: KnowledgeBase,
        file: FoundFile,
        prev: Document | None,
        digest: str | None,
        status: str = "pending",
        error: str | None = None,
    ) -> NewDocument:
        return NewDocument(
            kb.id,
            file.name,
            content_type=file.content_type or content_type_for(file.name) or "application/octet-stream",
            size_bytes=file.size,
            content_hash=digest,
            source_path=file.source,
            source_mtime=file.mtime,
            status=status,
            error=error,
            error_kind="file" if status == "error" else None,
            expected_version=prev.version if prev is not None else None,
            # where the file was added from; not on a team server, which keeps no paths
            folder=None if file.source.startswith(HIDDEN) else file.root,
        )

    def _queue_failure(
        self,
        kb: KnowledgeBase,
        file: FoundFile,
        prev: Document | None,
        reason: str,
        pending: list[_Pending],
        resumed: dict[str, Document],
    ) -> None:
        if prev is not None:
            resumed.pop(prev.id, None)
            if prev.status == "error" and prev.error == reason and _same_stat(prev, file) and not self.retry_failed:
                self._settled(file, prev)
                return
        pending.append(_Pending(file, self._spec(kb, file, prev, None, "error", reason), None, "failed"))

    def _fail(self, file: FoundFile, reason: str) -> None:
        self.report.failed.append((file.name, reason))
        self.on_event(IngestEvent("error", file.name, detail=reason))

    def _busy(self, file: FoundFile, reason: str) -> None:
        """Another run holds the document of ``file`` now: said as ``busy`` (an upload
        answers "try again"; a run from disk waits for it, :mod:`.pipeline`)."""
        self.on_event(IngestEvent("busy", file.name, detail=reason))

    # ── claiming and storing ───────────────────────────────────────────────────
    def _take(self, pending: list[_Pending]) -> list[Document | Exception | None]:
        """Claim the rows in one transaction; if that fails, one by one, so a row the
        database refuses fails alone."""
        try:
            with self.first():
                return list(self.store.take_versions([p.spec for p in pending], self.claim))
        except StoreError:
            raise  # the database itself (locked, read-only, gone): nothing can be added
        except Exception:  # noqa: BLE001 - retried row by row below, each failure kept
            pass
        out: list[Document | Exception | None] = []
        for item in pending:
            try:
                out.extend(self.store.take_versions([item.spec], self.claim))
            except StoreError:
                raise
            except NameTakenError:  # another run's row of this name came first: read it again
                out.append(None)
            except Exception as exc:  # noqa: BLE001 - this file alone fails
                out.append(exc)
        return out

    def _flush(self, pending: list[_Pending], out: Prepared) -> list[FoundFile]:
        if not pending:
            return []
        docs = self._take(pending)
        lost: list[FoundFile] = []
        jobs: list[Job] = []
        for item, doc in zip(pending, docs, strict=True):
            if isinstance(doc, Exception):  # this row alone could not be written
                self._fail(
                    item.file,
                    str(doc) if isinstance(doc, KbdeskError) else f"internal error: {type(doc).__name__}: {doc}",
                )
                continue
            if doc is None:
                lost.append(item.file)
                continue
            if item.kind == "failed":
                self.report.failed.append((doc.filename, doc.error or "failed"))
                self.on_event(IngestEvent("queued", doc.filename, doc.id, "error", size=doc.size_bytes))
                self.on_event(IngestEvent("error", doc.filename, doc.id, "error", doc.error))
                continue
            self.on_event(IngestEvent("queued", doc.filename, doc.id, "pending", size=doc.size_bytes))
            jobs.append(Job(doc, item.kind, item.data))  # the worker stores the copy from them
        pending.clear()
        if self.on_jobs is not None:
            self.on_jobs(jobs)
        else:
            out.jobs += jobs
        return lost


def _same_stat(doc: Document, file: FoundFile) -> bool:
    return doc.size_bytes == file.size and doc.source_mtime == file.mtime


def _adopt(
    file: FoundFile, by_name: dict[str, list[tuple[str, Document]]]
) -> tuple[FoundFile, Document | None, str | None]:
    """One document per file name, whether it came by ``kbdesk add`` or over HTTP: an
    upload becomes a new version of the document of its name (however it came); a file
    added from disk takes over the document an upload of its name made. Returns the file
    (with the source it is known by), the document it becomes a version of (or None),
    and why it cannot be added (the name is ambiguous)."""
    same = by_name.get(file.name, [])
    if not file.source.startswith(UPLOAD):
        same = [(source, doc) for source, doc in same if source.startswith(UPLOAD)]
    elif len(same) > 1:
        return (
            file,
            None,
            f"{len(same)} documents of this knowledge base are named '{file.name}' (added from different "
            "folders): delete one, or upload under another name",
        )
    if len(same) != 1:
        return file, None, None
    source, doc = same[0]
    by_name.pop(file.name, None)  # taken: a second file of that name is a document of its own
    return dataclasses.replace(file, source=source), doc, None
