"""Processing documents in batches: the worker threads' part, full provider batches.

A worker takes a batch of documents (many small files, or one large one), moves the
whole batch through extracting → chunking → embedding (one hand-over of status moves
per step), embeds the chunks of all its documents together (cache first, then groups of
up to 100 per provider call), and hands the documents to the run's one writer
(:mod:`.writer`), which makes them ready — each complete or absent — in transactions
shared with other batches. A worker never writes to the store itself. A failure
belongs to its document alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

from kbdesk.errors import KbdeskError
from kbdesk.ingest import chunker
from kbdesk.ingest.copies import write_copy
from kbdesk.ingest.events import EventSink, IngestEvent
from kbdesk.ingest.extract import ExtractionError, extract_bytes, typed_name
from kbdesk.ingest.formats import OWN_PROCESS  # read in child processes of their own (the PDF reader, OCR)
from kbdesk.ingest.helper import Helper
from kbdesk.ingest.jobs import BATCH_BYTES, BATCH_DOCS, BatchResult, Feeder, Job, sha256
from kbdesk.ingest.names import file_of
from kbdesk.ingest.ocr import OcrSetup, setup_for
from kbdesk.ingest.offload import Prepared, chunks_of
from kbdesk.ingest.pdf_text import ExtractionCancelled
from kbdesk.ingest.sections import ResourceLimit, Section
from kbdesk.ingest.writer import Ready, Tally, Writer
from kbdesk.models import ChunkInput, Document, KnowledgeBase
from kbdesk.store.api import Store
from kbdesk.store.doc_types import StatusUpdate

__all__ = [
    "BATCH_BYTES",
    "BATCH_DOCS",
    "EMBED_GROUP",
    "STAGED",
    "BatchRunner",
    "Feeder",
    "Job",
    "chunk_sections",
    "sha256",
]

log = logging.getLogger("kbdesk.ingest")
EMBED_GROUP = 100  # chunks per provider call (the provider splits further when it must)
# the embedding cache's key prefix for vectors embedded by a run whose chunks are not
# stored yet: a run stopped or killed mid-batch does not pay for them twice
STAGED = "staged:"


class BatchRunner:
    """Runs one batch in a worker thread: reads, extracts, chunks and embeds; everything
    to write goes to the run's one :class:`~kbdesk.ingest.writer.Writer`."""

    def __init__(
        self,
        store: Store,
        files_dir: Path,
        config: Any,
        max_bytes: int,
        on_event: EventSink,
        writer: Writer,
        cancelled: Any = None,
        helper: Helper | None = None,
        ocr_cache: Path | None = None,
    ) -> None:
        self.cancelled = cancelled or (lambda: False)
        self._ocr: OcrSetup | None = None
        self._ocr_cache = ocr_cache  # OCR results by content hash (a rename or re-add costs no OCR)
        self.helper = helper or Helper(process=False)  # a run passes its own (and closes it)
        self.store = store
        self.files_dir = files_dir
        self.config = config
        self.max_bytes = max_bytes
        self.on_event = on_event
        self.writer = writer
        # Extraction and chunking are Python work: under the GIL several threads doing it
        # gain nothing, and make the threads that wait on files, the database or a
        # provider wait for the GIL after every call. One runs them at a time; a PDF's
        # extraction (a child process, mostly waiting) does not take the turn.
        self._turn = threading.Lock()

    def run(self, kb: KnowledgeBase, jobs: list[Job], embedder: Any) -> BatchResult:
        result = BatchResult(jobs)
        failed = result.tally
        if self.cancelled():  # left as they are: the next add or resume picks them up
            result.cancelled = True
            return result
        try:
            live = self._extract_all(kb, jobs, failed)
            chunked = self._chunk_all(kb, live, failed)
            vectors = self._embed_all(embedder, chunked, failed, result) if embedder is not None else {}
            if self.cancelled():
                result.cancelled = True
            else:
                self._finish_all(chunked, vectors, failed, embedder)
        except KbdeskError as exc:  # the store itself failed: every unfinished document fails with it
            for job in jobs:
                failed.fail(job.doc.id, str(exc), "store")
        except Exception as exc:  # a bug: fail these documents, keep the others going
            log.exception("an ingestion batch failed")
            for job in jobs:
                failed.fail(job.doc.id, f"internal error: {type(exc).__name__}: {exc}", "internal")
        self._record_failures(jobs, failed)
        return result

    # ── steps ──────────────────────────────────────────────────────────────────
    def _statuses(self, updates: list[StatusUpdate], names: dict[str, str]) -> None:
        if not updates:
            return
        self.writer.statuses(updates)
        for u in updates:
            self.on_event(IngestEvent("status", names[u.doc_id], u.doc_id, u.status))

    def _extract_all(self, kb: KnowledgeBase, jobs: list[Job], failed: Tally) -> list[tuple[Job, Any]]:
        """The documents still going, each with its sections, or with its chunks when
        the helper process made them (:meth:`_prepare_in_helper`)."""
        names = {j.doc.id: j.doc.filename for j in jobs}
        fresh = [j for j in jobs if j.kind != "rebuild"]
        self._statuses([StatusUpdate(j.doc.id, "extracting", version=j.doc.version) for j in fresh], names)
        live: list[tuple[Job, Any]] = []
        updates: list[StatusUpdate] = []
        prepared = self._prepare_in_helper(kb, jobs, failed)
        self._store_copies(jobs, failed)
        for job in jobs:
            if job.doc.id in failed.failed:
                continue
            if self.cancelled():
                break  # the rest stay as they are for the next add or resume
            try:
                if job.doc.id in prepared:
                    chunks, update = prepared[job.doc.id]
                    live.append((job, chunks))
                    updates.append(update)
                    continue
                if job.kind == "rebuild":
                    sections = [Section(t, m) for t, m in self.store.document_sections(job.doc.id) or []]
                    updates.append(StatusUpdate(job.doc.id, "chunking", version=job.doc.version))
                else:
                    sections, update = self._extract(job)
                    updates.append(update)
                live.append((job, sections))
            except ExtractionCancelled:  # stopped, not failed: left for the next add or resume
                failed.interrupted.add(job.doc.id)
            except (_Changed, _NotStored) as exc:
                failed.fail(job.doc.id, str(exc), "store")
            except ResourceLimit as exc:  # out of time: tried again by the next add
                failed.fail(job.doc.id, str(exc), "resource")
            except KbdeskError as exc:
                failed.fail(job.doc.id, str(exc), "file")
            except Exception as exc:  # an unforeseen input: this document alone
                log.exception("extracting %s failed", job.doc.filename)
                failed.fail(job.doc.id, f"internal error: {type(exc).__name__}: {exc}", "internal")
        self._statuses(updates, names)
        return live

    def _extract(self, job: Job) -> tuple[list[Any], StatusUpdate]:
        doc = job.doc
        data = self._stored_bytes(job)  # file work, done without the turn (it holds no interpreter lock)
        with self._turn if job.doc.content_type not in OWN_PROCESS else contextlib.nullcontext():
            extracted = extract_bytes(
                data,
                typed_name(doc.filename, doc.content_type),
                max_bytes=self.max_bytes,
                pdf_timeout=self.config.ingest.pdf_timeout,
                pdf_memory_mb=self.config.ingest.pdf_memory_mb,
                cancelled=self.cancelled,
                ocr=self._ocr_setup() if job.doc.content_type in OWN_PROCESS else None,
            )
        return extracted.sections, StatusUpdate(
            doc.id, "chunking", extracted_text=extracted.text, sections=extracted.spans, version=doc.version
        )

    def _ocr_setup(self) -> OcrSetup:
        """Tesseract as this run uses it, found once (the first scan or image asks)."""
        if self._ocr is None:
            self._ocr = setup_for(self.config.ingest, self._ocr_cache)
        return self._ocr

    def _prepare_in_helper(
        self, kb: KnowledgeBase, jobs: list[Job], failed: Tally
    ) -> dict[str, tuple[Prepared, StatusUpdate]]:
        """Copy, extract and chunk the batch's files whose bytes the run holds in the
        helper process, on another core (:mod:`kbdesk.ingest.offload`): by document id,
        its chunks and its status update. Empty when the batch is small or the helper
        cannot take it: then the run does the work itself."""
        held = [
            j
            for j in jobs
            if j.data is not None and not j.copied and j.kind != "rebuild" and j.doc.content_type not in OWN_PROCESS
        ]
        if not held or self.cancelled():
            return {}
        results = self.helper.prepare(
            [(*self._copy_of(j), typed_name(j.doc.filename, j.doc.content_type)) for j in held],
            kb.chunk_size,
            kb.chunk_overlap,
            self.max_bytes,
        )
        if results is None:
            return {}
        out: dict[str, tuple[Prepared, StatusUpdate]] = {}
        for job, result in zip(held, results, strict=True):
            doc = job.doc
            job.copied, job.data = result[0] != "copy", None  # done with, whatever became of it
            if result[0] == "ok":
                _, text, spans, rows = result
                out[doc.id] = (
                    Prepared(chunks_of(rows)),
                    StatusUpdate(doc.id, "chunking", extracted_text=text, sections=spans, version=doc.version),
                )
            elif result[0] == "copy":
                failed.fail(doc.id, f"cannot store a copy of the file ({result[2]})", "store")
            elif result[0] in ("file", "resource"):
                failed.fail(doc.id, result[1], result[0])
            else:
                log.error("extracting %s failed: %s", doc.filename, result[1])
                failed.fail(doc.id, f"internal error: {result[1]}", "internal")
        return out

    def _store_copies(self, jobs: list[Job], failed: Tally) -> None:
        """Store the copies of the batch's files whose bytes the run holds, all at once
        (:class:`~kbdesk.ingest.helper.Helper`); a copy that cannot be written fails its
        document alone."""
        held = [j for j in jobs if j.data is not None and not j.copied]
        if not held or self.cancelled():
            return
        errors = self.helper.write([self._copy_of(j) for j in held])
        for job, exc in zip(held, errors, strict=True):
            if exc is None:
                job.copied = True
            else:  # the disk is full or read-only
                failed.fail(job.doc.id, f"cannot store a copy of the file ({exc.strerror or exc})", "store")

    def _copy_of(self, job: Job) -> tuple[str, bytes, bool]:
        """The job's stored copy to write: its path, the bytes, and whether it is a new document's."""
        return os.path.join(str(self.files_dir), job.doc.storage_key), job.data or b"", job.kind == "added"

    def _stored_bytes(self, job: Job) -> bytes:
        """The file's bytes: stored now from those the run holds (so a ready document
        always has its copy), else read back from the stored copy."""
        data, job.data = job.data, None
        if data is not None and job.copied:
            return data
        doc = job.doc
        path = self.files_dir / doc.storage_key
        if data is not None:
            try:
                write_copy(path, data, fresh=job.kind == "added")
            except OSError as exc:  # the disk is full or read-only: this document fails alone
                raise _NotStored(f"cannot store a copy of the file ({exc.strerror or exc})") from None
            return data
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return self._recover_bytes(doc, path)
        if doc.content_hash and sha256(data) != doc.content_hash:
            return self._recover_bytes(doc, path)  # a kill came between the claim and the copy
        return data

    def _recover_bytes(self, doc: Document, path: Path) -> bytes:
        """The stored copy is missing or older than the row (a kill before it was
        written): re-read the source, which must still hold the bytes the row names."""
        source = file_of(doc.source_path)
        if source is not None:
            try:
                data = source.read_bytes()
            except OSError:
                data = None
            if data is not None and (not doc.content_hash or sha256(data) == doc.content_hash):
                write_copy(path, data)
                return data
            if data is not None:
                raise _Changed("the file changed while it was being indexed; the next add takes the new version")
        raise ExtractionError("the stored copy of this file is missing and its source is gone")

    def _chunk_all(
        self, kb: KnowledgeBase, live: list[tuple[Job, Any]], failed: Tally
    ) -> list[tuple[Job, list[ChunkInput]]]:
        out = []
        for job, sections in live:
            if isinstance(sections, Prepared):
                chunks = sections.chunks
            else:
                try:
                    with self._turn:
                        chunks = chunk_sections(kb, sections)
                except Exception as exc:  # an unforeseen input: this document alone
                    log.exception("chunking %s failed", job.doc.filename)
                    failed.fail(job.doc.id, f"internal error: {type(exc).__name__}: {exc}", "internal")
                    continue
            if chunks:
                out.append((job, chunks))
            else:
                failed.fail(job.doc.id, "no text to index", "file")
        return out

    def _embed_all(
        self, embedder: Any, chunked: list[tuple[Job, list[ChunkInput]]], failed: Tally, result: BatchResult
    ) -> dict[str, list[Any]]:
        names = {j.doc.id: j.doc.filename for j, _ in chunked}
        self._statuses([StatusUpdate(j.doc.id, "embedding", version=j.doc.version) for j, _ in chunked], names)
        texts: dict[str, str] = {}
        for _, chunks in chunked:
            for c in chunks:
                texts.setdefault(c.content_hash, c.content)
        vectors: dict[str, Any] = dict(self.store.cached_vectors(embedder.model_key, texts))
        staged = [h for h in texts if h not in vectors]
        if staged:  # vectors a stopped or killed run paid for, kept until their chunks are stored
            vectors.update(self.store.cached_vectors(STAGED + embedder.model_key, staged))
        result.cached += sum(1 for _, chunks in chunked for c in chunks if c.content_hash in vectors)
        missing = [h for h in texts if h not in vectors]
        bad: dict[str, str] = {}
        total = sum(len(c) for _, c in chunked)
        done = total - len(missing)
        for start in range(0, len(missing), EMBED_GROUP):
            if self.cancelled():
                break  # what is embedded so far stays staged for the next run
            group = missing[start : start + EMBED_GROUP]
            response = embedder.embed([texts[h] for h in group], collect=True)
            result.calls += response.calls
            for failure in response.failures:
                bad[group[failure.index]] = str(failure.error)
            fresh = [(h, vector) for h, vector in zip(group, response.vectors, strict=True) if vector is not None]
            vectors.update(fresh)
            self.writer.stage(STAGED + embedder.model_key, fresh)
            result.embedded += len(group) - len(response.failures)
            done += len(group)
            for job, _ in chunked:
                self.on_event(
                    IngestEvent(
                        "embedded", job.doc.filename, job.doc.id, "embedding", done=min(done, total), total=total
                    )
                )
        out: dict[str, list[Any]] = {}
        for job, chunks in chunked:
            hashes = [c.content_hash for c in chunks]
            broken = next((i for i, h in enumerate(hashes) if h in bad), None)
            if broken is not None:
                failed.fail(
                    job.doc.id,
                    f"chunk {broken + 1} of {len(chunks)} could not be embedded: {bad[hashes[broken]]}",
                    "provider",
                )
                continue
            if any(h not in vectors for h in hashes):
                continue  # cancelled before all were embedded: left for the next run
            out[job.doc.id] = [vectors[h] for h in hashes]
        return out

    def _finish_all(
        self, chunked: list[tuple[Job, list[ChunkInput]]], vectors: dict[str, list[Any]], failed: Tally, embedder: Any
    ) -> None:
        items = [
            Ready(
                job.doc.id,
                job.doc.filename,
                chunks,
                vectors.get(job.doc.id) if embedder is not None else None,
                job.doc.version,
                failed,
                [c.content_hash for c in chunks] if embedder is not None else [],
            )
            for job, chunks in chunked
            if job.doc.id not in failed.failed
        ]
        self.writer.ready(items, STAGED + embedder.model_key if embedder is not None else None)

    def _record_failures(self, jobs: list[Job], failed: Tally) -> None:
        self.writer.fail(
            [
                (
                    StatusUpdate(
                        j.doc.id,
                        "error",
                        error=failed.failed[j.doc.id][0],
                        version=j.doc.version,
                        error_kind=failed.failed[j.doc.id][1],
                    ),
                    j.doc.filename,
                )
                for j in jobs
                if j.doc.id in failed.failed
            ]
        )


def chunk_sections(kb: KnowledgeBase, sections: list[Any]) -> list[ChunkInput]:
    """A document's chunks at the KB's chunk size, offsets into its whole text."""
    return [
        ChunkInput(c.content, c.token_count, c.metadata)
        for c in chunker.chunk_sections(sections, kb.chunk_size, kb.chunk_overlap)
    ]


class _Changed(ExtractionError):
    """The file moved on while its older version was being indexed (retried by the next add)."""


class _NotStored(ExtractionError):
    """The copy of the file could not be stored (retried by the next add)."""
