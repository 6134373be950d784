"""The ingestion pipeline: scan → prepare → extract → chunk → embed → store.

Documents are processed in batches by a pool of worker threads (:mod:`.batch`); a
failure (bad file, provider refusal, anything) ends that document in ``error`` with a
readable reason and never stops the others. A document becomes ``ready`` in one
transaction with all its chunks and vectors (see :mod:`kbdesk.store.documents`), so a
kill at any moment leaves either the whole document or a resumable one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbdesk.ingest.batch import EMBED_GROUP, BatchRunner, Job, batches
from kbdesk.ingest.events import EventSink, IngestEvent, ignore
from kbdesk.ingest.folders import scan
from kbdesk.ingest.prepare import Preparer
from kbdesk.models import Document, KnowledgeBase


@dataclass
class IngestReport:
    """What one ``add`` (or resume, or rebuild) did."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)  # left for the next add or resume
    embedded_chunks: int = 0
    cached_chunks: int = 0
    embedding_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added, "updated": self.updated, "unchanged": self.unchanged, "resumed": self.resumed,
            "failed": [{"file": f, "error": e} for f, e in self.failed],
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "removed": self.removed, "cancelled": self.cancelled, "embedded_chunks": self.embedded_chunks,
            "cached_chunks": self.cached_chunks, "embedding_calls": self.embedding_calls,
        }


class Ingestor:
    """Runs the pipeline for one desk. Thread-safe; one instance can serve many calls."""

    def __init__(self, desk: Any, *, workers: int | None = None, on_event: EventSink | None = None) -> None:
        self.desk = desk
        self.store = desk.store
        self.config = desk.config
        self.workers = workers or self.config.ingest.workers
        self.on_event = on_event or ignore
        self.max_bytes = int(self.config.storage.max_file_mb * 1024 * 1024)
        self.files_dir = desk.files_dir
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop soon (thread-safe): batches not yet finished stay pending for the next
        ``add`` or ``resume``; nothing half-written is left."""
        self._cancel.set()

    # ── public entry points ────────────────────────────────────────────────────
    def add(self, kb_ref: str, paths: Sequence[str | os.PathLike[str]], *, include: Sequence[str] = (),
            exclude: Sequence[str] = (), hidden: bool = False, sync: bool = False) -> IngestReport:
        """Ingest files and folders into a KB; unchanged files cost nothing."""
        kb = self.desk.kb(kb_ref)
        report = IngestReport()
        self.sweep(kb)
        jobs = [Job(doc, "resumed") for doc in self._claim_unfinished(kb)]
        found = scan(paths, include=include, exclude=exclude, hidden=hidden, protect=self._protected())
        for item in found.skipped:
            report.skipped.append((item.path, item.reason))
            self.on_event(IngestEvent("skipped", item.path, detail=item.reason))
        preparer = Preparer(self.store, self.files_dir, self.max_bytes, self.on_event, report)
        jobs += preparer.prepare(kb, found.files, self.store.documents_by_source(kb.id))
        self._run(kb, jobs, report)
        if sync:
            self._sync(kb, found.roots, {str(f.path) for f in found.files}, report)
        return report

    def resume(self, kb_ref: str | None = None) -> IngestReport:
        """Finish documents a crash or kill left half-way (all KBs, or one)."""
        report = IngestReport()
        kbs = [self.desk.kb(kb_ref)] if kb_ref else self.desk.list_kbs()
        for kb in kbs:
            self.sweep(kb)
            jobs = [Job(doc, "resumed") for doc in self._claim_unfinished(kb)]
            if jobs:
                self._run(kb, jobs, report)
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
        """Re-chunk and re-embed every document with stored text (seed 002 "Rebuild")."""
        kb = self.desk.kb(kb_ref)
        docs = self.store.list_documents(kb.id)
        jobs, skipped = [], 0
        for doc in docs:
            if self.store.document_text(doc.id) is None:
                skipped += 1
                continue
            self.store.claim_document(doc.id)
            jobs.append(Job(doc, "rebuild"))
        report = IngestReport()
        with self.store.write() as conn:
            self.store.audit(conn, "kb.rebuild", kb.id, kb.name,
                             {"total_docs": len(docs), "rebuilding": len(jobs), "skipped": skipped})
        self._run(kb, jobs, report)
        return {"total_docs": len(docs), "rebuilding": len(jobs), "skipped": skipped}, report

    def reembed(self, kb_ref: str, provider: str, model_id: str) -> tuple[KnowledgeBase, IngestReport]:
        """Change a KB's embedding model: embed every chunk anew, then switch in one step."""
        from dataclasses import replace

        kb = self.desk.kb(kb_ref)
        target = replace(kb, embedding_config={**kb.embedding_config, "provider": provider, "model_id": model_id,
                                               "dimensions": None})
        embedder = self.desk.embedders.for_kb(target)
        report = IngestReport()
        texts = self.store.chunk_texts(kb.id)
        cached = self.store.cached_vectors(embedder.model_key, [h for h, _ in texts])
        self.store.put_cached_vectors(embedder.model_key, list(cached.items()))  # stage the known ones too
        todo = [(h, c) for h, c in texts if h not in cached]
        report.cached_chunks = len(texts) - len(todo)
        self.on_event(IngestEvent("embedded", kb.name, kb.id, "embedding", done=report.cached_chunks,
                                  total=len(texts)))
        for start in range(0, len(todo), EMBED_GROUP):
            group = todo[start:start + EMBED_GROUP]
            result = embedder.embed([c for _, c in group])
            report.embedding_calls += result.calls
            self.store.put_cached_vectors(embedder.model_key, [(h, v) for (h, _), v in zip(group, result.vectors)])
            report.embedded_chunks += len(group)
            self.on_event(IngestEvent("embedded", kb.name, kb.id, "embedding",
                                      done=report.cached_chunks + report.embedded_chunks, total=len(texts)))
        return self.store.swap_embedding_model(kb.id, embedder.provider_name, model_id, embedder.model_key), report

    # ── running ────────────────────────────────────────────────────────────────
    def _protected(self) -> list[Path]:
        db = self.desk.db_path
        return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"),
                self.files_dir / "kb", self.desk.paths.data_dir]

    def _claim_unfinished(self, kb: KnowledgeBase) -> list[Document]:
        docs = self.store.unfinished_documents(kb.id)
        for doc in docs:
            self.store.claim_document(doc.id)
        return docs

    def _run(self, kb: KnowledgeBase, jobs: list[Job], report: IngestReport) -> None:
        if not jobs:
            return
        embedder = self.desk.embedders.for_kb(kb) if kb.model_id else None
        runner = BatchRunner(self.store, self.files_dir, self.config, self.max_bytes, self.on_event,
                             cancelled=self._cancel.is_set)
        groups = batches(jobs)
        with ThreadPoolExecutor(max_workers=min(self.workers, len(groups)),
                                thread_name_prefix="kbdesk-ingest") as pool:
            results = list(pool.map(lambda group: runner.run(kb, group, embedder), groups))
        for result in results:
            report.embedded_chunks += result.embedded
            report.cached_chunks += result.cached
            report.embedding_calls += result.calls
            for outcome in result.outcomes:
                if outcome.cancelled:
                    report.cancelled.append(outcome.job.doc.filename)
                elif outcome.error is None:
                    kind = "updated" if outcome.job.kind == "rebuild" else outcome.job.kind
                    getattr(report, kind).append(outcome.job.doc.filename)
                else:
                    report.failed.append((outcome.job.doc.filename, outcome.error))

    # ── --sync ─────────────────────────────────────────────────────────────────
    def _sync(self, kb: KnowledgeBase, roots: list[Path], present: set[str], report: IngestReport) -> None:
        """Remove documents whose file under a scanned folder no longer exists."""
        for source, doc in self.store.documents_by_source(kb.id).items():
            path = Path(source)
            if source in present or not any(root == path or root in path.parents for root in roots):
                continue
            if path.is_file():
                continue  # still there, merely filtered out by this run's globs
            for stale in [d for d in self.store.list_documents(kb.id) if d.source_path == source]:
                self.desk.delete_document(stale.id)
            report.removed.append(doc.filename)
            self.on_event(IngestEvent("removed", doc.filename, doc.id))
