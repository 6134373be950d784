"""The ingestion pipeline: extract → chunk → embed → store, in worker threads.

Each document is processed on its own by one worker; a failure (bad file, provider
refusal, anything) ends that document in ``error`` with a readable reason and never
stops the others. The document becomes ``ready`` in one transaction with all its
chunks and vectors (see :mod:`kbdesk.store.documents`), so a kill at any moment leaves
either the whole document or a resumable one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbdesk.errors import KbdeskError
from kbdesk.ingest.chunker import split_text
from kbdesk.ingest.events import EventSink, IngestEvent, ignore
from kbdesk.ingest.extract import ExtractionError, content_type_for, extract_bytes
from kbdesk.ingest.folders import FoundFile, scan
from kbdesk.models import ChunkInput, Document, KnowledgeBase
from kbdesk.store.documents import IN_FLIGHT, text_hash

log = logging.getLogger("kbdesk.ingest")
EMBED_GROUP = 100  # chunks per provider call (the provider splits further when it must)


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
    embedded_chunks: int = 0
    cached_chunks: int = 0
    embedding_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added, "updated": self.updated, "unchanged": self.unchanged, "resumed": self.resumed,
            "failed": [{"file": f, "error": e} for f, e in self.failed],
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "removed": self.removed, "embedded_chunks": self.embedded_chunks,
            "cached_chunks": self.cached_chunks, "embedding_calls": self.embedding_calls,
        }


@dataclass
class _Job:
    doc: Document
    kind: str  # "added", "updated", "resumed", "rebuild"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Ingestor:
    """Runs the pipeline for one desk. Thread-safe; one instance can serve many calls."""

    def __init__(self, desk: Any, *, workers: int | None = None, on_event: EventSink | None = None) -> None:
        self.desk = desk
        self.store = desk.store
        self.config = desk.config
        self.workers = workers or self.config.ingest.workers
        self.on_event = on_event or ignore
        self.max_bytes = int(self.config.storage.max_file_mb * 1024 * 1024)

    # ── public entry points ────────────────────────────────────────────────────
    def add(self, kb_ref: str, paths: Sequence[str | os.PathLike[str]], *, include: Sequence[str] = (),
            exclude: Sequence[str] = (), hidden: bool = False, sync: bool = False) -> IngestReport:
        """Ingest files and folders into a KB; unchanged files cost nothing."""
        kb = self.desk.kb(kb_ref)
        report = IngestReport()
        self.sweep(kb)
        jobs = [_Job(doc, "resumed") for doc in self._claim_unfinished(kb)]
        found = scan(paths, include=include, exclude=exclude, hidden=hidden, protect=self._protected())
        for item in found.skipped:
            report.skipped.append((item.path, item.reason))
            self.on_event(IngestEvent("skipped", item.path, detail=item.reason))
        by_source = self.store.documents_by_source(kb.id)
        for file in found.files:
            job = self._prepare(kb, file, by_source.get(str(file.path)), report)
            if job:
                jobs.append(job)
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
            jobs = [_Job(doc, "resumed") for doc in self._claim_unfinished(kb)]
            if jobs:
                self._run(kb, jobs, report)
        return report

    def sweep(self, kb: KnowledgeBase, min_age: float = 600.0) -> int:
        """Delete stored files no document owns (left by a kill between file and row).

        Only files older than ``min_age`` seconds go, so a file another live process has
        just written (and is about to record) is never taken.
        """
        import time

        folder = self.desk.files_dir / "kb" / kb.id
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
            jobs.append(_Job(doc, "rebuild"))
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

    # ── preparing documents ────────────────────────────────────────────────────
    def _protected(self) -> list[Path]:
        db = self.desk.db_path
        return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"),
                self.desk.files_dir / "kb", self.desk.paths.data_dir]

    def _claim_unfinished(self, kb: KnowledgeBase) -> list[Document]:
        docs = self.store.unfinished_documents(kb.id)
        for doc in docs:
            self.store.claim_document(doc.id)
        return docs

    def _prepare(self, kb: KnowledgeBase, file: FoundFile, previous: Document | None,
                 report: IngestReport) -> _Job | None:
        """Decide what a found file needs; store its bytes and a pending row when new."""
        if previous and previous.size_bytes == file.size and previous.source_mtime == file.mtime \
                and previous.status in ("ready", "error"):
            if previous.status == "ready":
                report.unchanged.append(file.name)
                self.on_event(IngestEvent("unchanged", file.name, previous.id, "ready"))
                return None
        if file.size > self.max_bytes:
            return self._failed_upfront(kb, file, previous, report,
                                        f"file is {file.size / 1048576:.1f} MB, over the "
                                        f"{self.max_bytes / 1048576:g} MB limit")
        try:
            with open(file.path, "rb") as handle:
                data = handle.read(self.max_bytes + 1)
        except OSError as exc:
            report.failed.append((file.name, f"cannot read file ({exc.strerror})"))
            self.on_event(IngestEvent("error", file.name, detail=f"cannot read file ({exc.strerror})"))
            return None
        digest = _sha256(data)
        same = self.store.document_with_hash(kb.id, digest)
        if same and same.status == "ready":
            report.unchanged.append(file.name)
            self.on_event(IngestEvent("unchanged", file.name, same.id, "ready"))
            return None
        if same and same.status in IN_FLIGHT:  # being processed (resumed by this run, or by a live worker)
            return None
        if same and same.status == "error":  # the same bytes failed before: try again
            self._store_bytes(same, data)
            self.store.set_document_status(same.id, "pending")
            self.store.claim_document(same.id)
            return _Job(same, "added")
        ctype = content_type_for(file.name) or "application/octet-stream"
        doc = self._new_document(kb, file, data, digest, ctype, previous)
        return _Job(doc, "updated" if previous else "added")

    def _new_document(self, kb: KnowledgeBase, file: FoundFile, data: bytes | None, digest: str, ctype: str,
                      previous: Document | None, status: str = "pending", error: str | None = None) -> Document:
        from kbdesk.store.sqlite import new_id
        from kbdesk.store.documents import storage_key

        doc_id = new_id()
        if data is not None:
            # the bytes first: a crash before the row leaves an orphan file, swept later
            self._write_file(self.desk.files_dir / storage_key(kb.id, doc_id, file.name), data)
        doc = self.store.create_document(
            kb.id, file.name, content_type=ctype, size_bytes=file.size, content_hash=digest,
            source_path=str(file.path), source_mtime=file.mtime,
            replaces_id=previous.id if previous else None, status=status, error=error, doc_id=doc_id)
        self.on_event(IngestEvent("queued", file.name, doc.id, status))
        return doc

    def _failed_upfront(self, kb: KnowledgeBase, file: FoundFile, previous: Document | None,
                        report: IngestReport, reason: str) -> None:
        if previous and previous.status == "error" and previous.error == reason:
            report.failed.append((file.name, reason))
            return None
        doc = self._new_document(kb, file, None, "", content_type_for(file.name) or "application/octet-stream",
                                 None, status="error", error=reason)
        if previous and previous.status == "error":
            self.store.delete_document(previous.id)
        report.failed.append((file.name, reason))
        self.on_event(IngestEvent("error", file.name, doc.id, "error", reason))
        return None

    def _store_bytes(self, doc: Document, data: bytes) -> None:
        path = self.desk.files_dir / doc.storage_key
        if not path.exists():
            self._write_file(path, data)

    @staticmethod
    def _write_file(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # ── running ────────────────────────────────────────────────────────────────
    def _run(self, kb: KnowledgeBase, jobs: list[_Job], report: IngestReport) -> None:
        if not jobs:
            return
        embedder = self.desk.embedders.for_kb(kb) if kb.model_id else None
        with ThreadPoolExecutor(max_workers=min(self.workers, len(jobs)), thread_name_prefix="kbdesk-ingest") as pool:
            outcomes = list(pool.map(lambda job: self._process(kb, job, embedder), jobs))
        for job, (ok, reason, embedded, cached, calls) in zip(jobs, outcomes):
            report.embedded_chunks += embedded
            report.cached_chunks += cached
            report.embedding_calls += calls
            if ok:
                getattr(report, job.kind if job.kind != "rebuild" else "updated").append(job.doc.filename)
            else:
                report.failed.append((job.doc.filename, reason))

    def _process(self, kb: KnowledgeBase, job: _Job, embedder: Any) -> tuple[bool, str, int, int, int]:
        doc = job.doc
        counts = [0, 0, 0]  # embedded, cached, calls
        try:
            if job.kind == "rebuild":
                sections = [_TextSection(t, m) for t, m in self.store.document_sections(doc.id) or []]
            else:
                sections = self._extract(doc)
            self._status(doc, "chunking")
            chunks = self._chunk(kb, sections)
            if not chunks:
                raise ExtractionError("no text to index")
            vectors = None
            if embedder is not None:
                self._status(doc, "embedding")
                vectors = self._embed(doc, embedder, [c.content for c in chunks], counts)
            self.store.finish_document(doc.id, chunks, vectors,
                                       model_key=embedder.model_key if embedder else None)
            self.on_event(IngestEvent("ready", doc.filename, doc.id, "ready", done=len(chunks), total=len(chunks)))
            return True, "", *counts
        except KbdeskError as exc:
            reason = str(exc)
        except Exception as exc:  # a bug or an unforeseen input: fail this document alone
            log.exception("ingesting %s failed", doc.filename)
            reason = f"internal error: {type(exc).__name__}: {exc}"
        try:
            self.store.set_document_status(doc.id, "error", error=reason)
        except KbdeskError:  # the document vanished meanwhile (deleted by the user)
            pass
        self.on_event(IngestEvent("error", doc.filename, doc.id, "error", reason))
        return False, reason, *counts

    def _status(self, doc: Document, status: str, **kwargs: Any) -> None:
        self.store.set_document_status(doc.id, status, **kwargs)
        self.on_event(IngestEvent("status", doc.filename, doc.id, status))

    def _extract(self, doc: Document) -> list[Any]:
        self._status(doc, "extracting")
        path = self.desk.files_dir / doc.storage_key
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = self._recover_bytes(doc, path)
        extracted = extract_bytes(data, doc.filename, max_bytes=self.max_bytes,
                                  pdf_timeout=self.config.ingest.pdf_timeout,
                                  pdf_memory_mb=self.config.ingest.pdf_memory_mb)
        spans, base = [], 0
        for section in extracted.sections:
            spans.append((base, base + len(section.text), section.metadata))
            base += len(section.text) + 2  # extract joins sections with a blank line
        self.store.set_document_status(doc.id, "chunking", extracted_text=extracted.text, sections=spans)
        return extracted.sections

    def _recover_bytes(self, doc: Document, path: Path) -> bytes:
        """The stored copy is missing (a crash before it was written): re-read the source."""
        if doc.source_path:
            try:
                data = Path(doc.source_path).read_bytes()
            except OSError:
                data = b""
            if data and (not doc.content_hash or _sha256(data) == doc.content_hash):
                self._write_file(path, data)
                return data
        raise ExtractionError("the stored copy of this file is missing and its source changed or is gone")

    def _chunk(self, kb: KnowledgeBase, sections: list[Any]) -> list[ChunkInput]:
        """Chunks with metadata; start/end are offsets into the whole extracted text."""
        out: list[ChunkInput] = []
        base = 0
        for section in sections:
            for piece in split_text(section.text, kb.chunk_size, kb.chunk_overlap):
                meta = dict(section.metadata or {})
                meta["start"] = base + piece.metadata["start"]
                meta["end"] = base + piece.metadata["end"]
                out.append(ChunkInput(piece.content, piece.token_count, meta))
            base += len(section.text) + 2  # sections are joined with a blank line
        return out

    def _embed(self, doc: Document, embedder: Any, texts: list[str], counts: list[int]) -> list[Any]:
        hashes = [text_hash(t) for t in texts]
        cached = self.store.cached_vectors(embedder.model_key, hashes)
        vectors: list[Any] = [cached.get(h) for h in hashes]
        missing = [i for i, v in enumerate(vectors) if v is None]
        counts[1] += len(texts) - len(missing)
        done = len(texts) - len(missing)
        self.on_event(IngestEvent("embedded", doc.filename, doc.id, "embedding", done=done, total=len(texts)))
        for start in range(0, len(missing), EMBED_GROUP):
            group = missing[start:start + EMBED_GROUP]
            result = embedder.embed([texts[i] for i in group], collect=True)
            counts[2] += result.calls
            if result.failures:
                first = result.failures[0]
                raise ExtractionError(f"chunk {group[first.index] + 1} of {len(texts)} could not be embedded: "
                                      f"{first.error}")
            for i, vector in zip(group, result.vectors):
                vectors[i] = vector
            counts[0] += len(group)
            done += len(group)
            self.on_event(IngestEvent("embedded", doc.filename, doc.id, "embedding", done=done, total=len(texts)))
        return vectors

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


@dataclass
class _TextSection:
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
