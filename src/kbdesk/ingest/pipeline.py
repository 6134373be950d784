"""The ingestion pipeline: scan → prepare → extract → chunk → embed → store.

The scan claims files as it goes (:mod:`.prepare`) and hands them in batches to a pool
of worker threads (:mod:`.batch`) that extract, chunk and embed; one writer thread
(:mod:`.writer`) writes what they produce, many files per transaction. A failure (bad
file, provider refusal, anything) ends that document in ``error`` with a readable
reason and never stops the others. A document becomes ``ready`` atomically with all
its chunks and vectors (see :mod:`kbdesk.store.core.documents`), so a kill at any
moment leaves either the whole document or a resumable one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

from kbdesk.desk_api import DeskApi
from kbdesk.errors import InvalidInputError, StoreError
from kbdesk.ingest.batch import EMBED_GROUP, STAGED, BatchRunner, Feeder, Job
from kbdesk.ingest.events import EventSink, IngestEvent, ignore
from kbdesk.ingest.folders import FoundFile, scan
from kbdesk.ingest.helper import Helper
from kbdesk.ingest.ignore_rules import IgnoredUnder
from kbdesk.ingest.names import upload_source
from kbdesk.ingest.prepare import Preparer
from kbdesk.ingest.report import IngestReport
from kbdesk.ingest.switches import SWITCH_INTERVAL, short_switches
from kbdesk.ingest.sync import found_file, remove_gone
from kbdesk.ingest.writer import Writer
from kbdesk.models import Document, KnowledgeBase
from kbdesk.store.api import Store
from kbdesk.store.claims import claim_alive, describe, end_claim, new_claim

WAIT_POLL = 0.25  # seconds between looks at documents another run is indexing
__all__ = ["SWITCH_INTERVAL", "IngestReport", "Ingestor", "short_switches"]

STAGED_DAYS = 7  # staged vectors (see batch.STAGED) older than this are forgotten


def rebuildable(store: Store, docs: Sequence[Document]) -> list[Document]:
    """What a rebuild takes of ``docs``: the settled documents whose text is kept (one
    another live run is indexing is left to it)."""
    return [
        d
        for d in docs
        if d.status in ("ready", "error")
        and not claim_alive(d.claimed_by, d.updated_at)
        and store.document_text(d.id) is not None
    ]


class Ingestor:
    """Runs the pipeline for one desk. Thread-safe; one instance can serve many calls."""

    def __init__(self, desk: DeskApi, *, workers: int | None = None, on_event: EventSink | None = None) -> None:
        self.desk = desk
        self.store: Store = desk.store
        self.config = desk.config
        self.workers = workers or self.config.ingest.workers
        self.on_event = on_event or ignore
        self.max_bytes = int(self.config.storage.max_file_mb * 1024 * 1024)
        self.files_dir = desk.files_dir
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Stop soon (thread-safe): batches not yet finished stay pending for the next
        ``add`` or ``resume``; nothing half-written is left."""
        self._cancel.set()

    # ── public entry points ────────────────────────────────────────────────────
    def add(
        self,
        kb_ref: str,
        paths: Sequence[str | os.PathLike[str]],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        hidden: bool = False,
        sync: bool = False,
        retry_failed: bool = False,
        checksum: bool = False,
        uploads: Mapping[Path, str] | None = None,
        no_ignore: bool = False,
        depth: int = 0,
        max_pages: int | None = None,
    ) -> IngestReport:
        """Ingest files and folders into a KB; unchanged files cost nothing, files that
        failed for a reason of their own are not tried again until they change (or
        ``retry_failed``). ``checksum``: compare every file's contents, not only its size
        and mtime. Files another live kbdesk run is indexing are waited for.

        ``uploads``: the files (staged copies) came over HTTP, each under the name given
        for it, and are known by that name (a new version of the document of that name,
        however it came); otherwise a file is known by its path (as the store keeps it:
        ``store.source_key``), and takes over the document an upload of its name made.

        ``no_ignore``: also the files a folder's ``.gitignore``/``.ignore`` files name
        (left out otherwise, and removed by ``sync`` once named there).

        A path that is a URL (``https://…``) is a web page, fetched and known by its URL
        (:mod:`kbdesk.web`): ``depth`` follows its links on the same site, ``max_pages``
        bounds the pages of the run, ``include``/``exclude`` match URLs, ``sync`` removes
        pages that are gone."""
        from kbdesk.web.urls import is_url

        urls = [str(p) for p in paths if isinstance(p, str) and is_url(p)]
        paths = [p for p in paths if not (isinstance(p, str) and is_url(p))]
        kb = self.desk.kb(kb_ref)
        report = IngestReport()
        self.sweep(kb)
        found = scan(
            paths, include=include, exclude=exclude, hidden=hidden, protect=self._protected(), no_ignore=no_ignore
        )
        found.files = [self._known_by(f, uploads) for f in found.files]
        report.missing = list(found.missing)
        for item in found.skipped:
            report.skipped.append((item.path, item.reason))
            self.on_event(IngestEvent("skipped", item.path, detail=item.reason))
        self.add_found(
            kb, found.files, report, retry_failed=retry_failed, checksum=checksum, uploaded=uploads is not None
        )
        if sync and not self._cancel.is_set():
            every = lambda: self._all_sources(paths, hidden, no_ignore)  # noqa: E731
            unfiltered = every if include or exclude else (lambda: set[str]())
            ignored_now = None if no_ignore else IgnoredUnder(found.roots)
            remove_gone(
                self.desk,
                kb,
                found.roots,
                {f.source for f in found.files},
                unfiltered,
                report,
                self.on_event,
                ignored_now,
            )
        if urls and not self._cancel.is_set():
            from kbdesk.web.crawl import WebLimits
            from kbdesk.web.source import add_urls

            limits = WebLimits(depth=depth, **({"max_pages": max_pages} if max_pages else {}))
            add_urls(
                self,
                kb_ref,
                urls,
                report,
                limits=limits,
                include=include,
                exclude=exclude,
                sync=sync,
                retry_failed=retry_failed,
            )
        if not self._cancel.is_set():  # staged vectors whose documents moved on long ago
            self.store.prune_cached_vectors(STAGED, STAGED_DAYS)
        return report

    def add_found(
        self,
        kb: KnowledgeBase,
        files: Sequence[FoundFile],
        report: IngestReport,
        *,
        retry_failed: bool = False,
        checksum: bool = False,
        uploaded: bool = False,
    ) -> None:
        """Index files already found and known by their source (a scan's, or web pages
        :mod:`kbdesk.web` fetched and staged), with what they did in ``report``.
        ``uploaded``: files that came over HTTP, which do not wait for files another run is
        indexing (the upload answers "busy" and is tried again)."""
        claim = new_claim()
        try:
            held = {doc.id: doc for doc in self.store.claim_documents(self.store.unfinished_documents(kb.id), claim)}
            preparer = Preparer(
                self.store,
                self.files_dir,
                self.max_bytes,
                self.on_event,
                report,
                claim,
                retry_failed=retry_failed,
                checksum=checksum,
                tesseract=self.config.ingest.tesseract,
            )
            prepared = self._run(
                kb, [], report, lambda on_jobs, first: preparer.prepare(kb, list(files), held, on_jobs, first)
            )
            if prepared.elsewhere and not uploaded:  # an upload says "busy" and is tried again instead
                self._wait_for_others(kb, prepared.elsewhere, claim, report)
        finally:
            self._let_go(claim)
            end_claim(claim)

    def resume(self, kb_ref: str | None = None) -> IngestReport:
        """Finish documents a crash or kill left half-way (all KBs, or one)."""
        report = IngestReport()
        kbs = [self.desk.kb(kb_ref)] if kb_ref else self.desk.list_kbs()
        for kb in kbs:
            self.sweep(kb)
            claim = new_claim()
            try:
                held = self.store.claim_documents(self.store.unfinished_documents(kb.id), claim)
                if held:
                    # a file that moved on since is taken at its newest version
                    files = [f for f in (found_file(doc) for doc in held) if f is not None]
                    preparer = Preparer(self.store, self.files_dir, self.max_bytes, self.on_event, report, claim)
                    self._run(
                        kb,
                        [],
                        report,
                        functools.partial(preparer.prepare, kb, files, {doc.id: doc for doc in held}),
                    )
            finally:
                self._let_go(claim)
                end_claim(claim)
        return report

    def sweep(self, kb: KnowledgeBase, min_age: float = 600.0) -> int:
        """Delete stored files no document owns (left by a kill between file and row).

        Only files older than ``min_age`` seconds go, so a file another live process has
        just written (and is about to record) is never taken.
        """
        import time

        folder = self.files_dir / "kb" / kb.id
        if not folder.is_dir():
            return 0
        owned = {d.storage_key.rsplit("/", 1)[-1] for d in self.store.list_documents(kb.id)}
        removed = 0
        now = time.time()
        for path in folder.iterdir():
            try:
                if path.name in owned or now - path.stat().st_mtime < min_age:
                    continue
                path.unlink()
                removed += 1
            except OSError:
                continue
        return removed

    def rebuild(self, kb_ref: str) -> tuple[dict[str, int], IngestReport]:
        """Re-chunk and re-embed every document with stored text (seed 002 "Rebuild").
        A document another live run is working on is left to it (counted as skipped)."""
        kb = self.desk.kb(kb_ref)
        docs = self.store.list_documents(kb.id)
        report = IngestReport()
        claim = new_claim()
        try:
            jobs = [Job(doc, "rebuild") for doc in self.store.claim_documents(rebuildable(self.store, docs), claim)]
            skipped = len(docs) - len(jobs)
            with self.store.write() as conn:
                self.store.audit(
                    conn,
                    "kb.rebuild",
                    kb.id,
                    kb.name,
                    {"total_docs": len(docs), "rebuilding": len(jobs), "skipped": skipped},
                )
            self._run(kb, jobs, report)
        finally:
            self._let_go(claim)
            end_claim(claim)
        return {"total_docs": len(docs), "rebuilding": len(jobs), "skipped": skipped}, report

    def reembed(self, kb_ref: str, provider: str, model_id: str) -> tuple[KnowledgeBase, IngestReport]:
        """Change a KB's embedding model: embed every chunk anew, then switch in one step."""
        from dataclasses import replace

        kb = self.desk.kb(kb_ref)
        target = replace(
            kb, embedding_config={**kb.embedding_config, "provider": provider, "model_id": model_id, "dimensions": None}
        )
        embedder = self.desk.embedders.for_kb(target)
        if embedder is None:
            raise InvalidInputError("name a model to embed the knowledge base with")
        report = IngestReport()
        texts = self.store.chunk_texts(kb.id)
        cached = self.store.cached_vectors(embedder.model_key, [h for h, _ in texts])
        self.store.put_cached_vectors(embedder.model_key, list(cached.items()))  # stage the known ones too
        todo = [(h, c) for h, c in texts if h not in cached]
        report.cached_chunks = len(texts) - len(todo)
        self.on_event(IngestEvent("embedded", kb.name, kb.id, "embedding", done=report.cached_chunks, total=len(texts)))
        for start in range(0, len(todo), EMBED_GROUP):
            group = todo[start : start + EMBED_GROUP]
            result = embedder.embed([c for _, c in group])
            report.embedding_calls += result.calls
            self.store.put_cached_vectors(
                embedder.model_key, [(h, v) for (h, _), v in zip(group, result.vectors, strict=True)]
            )
            report.embedded_chunks += len(group)
            self.on_event(
                IngestEvent(
                    "embedded",
                    kb.name,
                    kb.id,
                    "embedding",
                    done=report.cached_chunks + report.embedded_chunks,
                    total=len(texts),
                )
            )
        return self.store.swap_embedding_model(kb.id, embedder.provider_name, model_id, embedder.model_key), report

    # ── running ────────────────────────────────────────────────────────────────
    def _protected(self) -> list[Path]:
        db = self.desk.db_path
        return [
            db,
            db.with_name(db.name + "-wal"),
            db.with_name(db.name + "-shm"),
            self.files_dir / "kb",
            self.desk.paths.data_dir,
        ]

    def _run(
        self,
        kb: KnowledgeBase,
        jobs: list[Job],
        report: IngestReport,
        prepare: Callable[[Callable[[list[Job]], None], Any], Any] | None = None,
    ) -> Any:
        """Run ``jobs``, and those ``prepare`` hands over as it claims them (while it is
        still scanning; it gets the hand-over and the writer's :meth:`Writer.first`);
        returns what ``prepare`` returned."""
        embedder: list[Any] = []  # resolved when the first batch starts (none may)

        def start(group: list[Job]) -> Any:
            if not embedder:
                embedder.append(self.desk.embedders.for_kb(kb) if kb.model_id else None)
            return pool.submit(runner.run, kb, group, embedder[0])

        results: list[Any] = []
        prepared = None
        with (
            short_switches(),
            closing(Helper()) as helper,
            Writer(self.store, self.on_event) as writer,
            ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kbdesk-ingest") as pool,
        ):
            runner = BatchRunner(
                self.store,
                self.files_dir,
                self.config,
                self.max_bytes,
                self.on_event,
                writer,
                cancelled=lambda: self._cancel.is_set() or writer.failure is not None,
                helper=helper,
                ocr_cache=self.desk.paths.cache_dir / "ocr",
            )
            feeder = Feeder(start, ahead=2 * self.workers)
            feeder.add(jobs)
            try:
                if prepare is not None:
                    prepared = prepare(feeder.add, writer.first)
                feeder.add([], last=True)
            finally:
                results = [future.result() for future in feeder.futures]
        if writer.failure is not None:  # the database could not be written: the run ends with it
            raise writer.failure
        for result in results:  # the writer is done: every outcome is known
            report.embedded_chunks += result.embedded
            report.cached_chunks += result.cached
            report.embedding_calls += result.calls
            for outcome in result.outcomes():
                if outcome.cancelled:
                    report.cancelled.append(outcome.job.doc.filename)
                elif outcome.superseded:
                    report.by_other.append(outcome.job.doc.filename)
                elif outcome.error is None:
                    kind = "updated" if outcome.job.kind == "rebuild" else outcome.job.kind
                    getattr(report, kind).append(outcome.job.doc.filename)
                else:
                    report.failed.append((outcome.job.doc.filename, outcome.error))
        return prepared

    def _let_go(self, claim: str) -> None:
        """Release the rows ``claim`` holds; when the database cannot be written (the run
        is ending with that error) they are let go anyway: a claim is dead once ended."""
        with contextlib.suppress(StoreError):
            self.store.release_claims(claim)

    # ── sharing a KB with other runs ───────────────────────────────────────────
    def _wait_for_others(self, kb: KnowledgeBase, docs: list[Document], claim: str, report: IngestReport) -> None:
        """Wait until documents other live runs hold are done (what they made of them
        goes into the report); one whose runner dies meanwhile is taken over."""
        waiting = {doc.id: doc for doc in docs}
        holders = sorted({describe(doc.claimed_by) for doc in docs})
        self.on_event(
            IngestEvent(
                "waiting",
                kb.name,
                detail=f"{len(waiting)} documents are being indexed by {', '.join(holders)}; waiting for them",
                total=len(waiting),
            )
        )
        while waiting and not self._cancel.is_set():
            current = self.store.get_documents(list(waiting))
            orphaned = []
            for doc_id in list(waiting):
                now = current.get(doc_id)
                if now is None:  # removed meanwhile
                    del waiting[doc_id]
                elif now.status == "ready":
                    report.by_other.append(now.filename)
                    del waiting[doc_id]
                elif now.status == "error":
                    report.failed.append((now.filename, now.error or "failed"))
                    del waiting[doc_id]
                elif not claim_alive(now.claimed_by, now.updated_at):
                    orphaned.append(now)
            if orphaned:
                taken = self.store.claim_documents(orphaned, claim)
                for doc in taken:
                    waiting.pop(doc.id, None)
                self._run(kb, [Job(doc, "resumed") for doc in taken], report)
            if waiting:
                self._cancel.wait(WAIT_POLL)
        for doc in waiting.values():
            report.cancelled.append(doc.filename)

    def _known_by(self, file: FoundFile, uploads: Mapping[Path, str] | None) -> FoundFile:
        """``file`` with the source its document is known by (see :meth:`add`)."""
        if uploads is not None and file.path in uploads:
            name = uploads[file.path]
            return dataclasses.replace(file, name=name, source=upload_source(name))
        return dataclasses.replace(file, source=self.store.source_key(file.path))

    # ── --sync ─────────────────────────────────────────────────────────────────
    def _all_sources(self, paths: Sequence[str | os.PathLike[str]], hidden: bool, no_ignore: bool) -> set[str]:
        """The sources of every file under ``paths``, globs or not (what a sync keeps)."""
        found = scan(paths, hidden=hidden, protect=self._protected(), no_ignore=no_ignore)
        return {self.store.source_key(f.path) for f in found.files}
