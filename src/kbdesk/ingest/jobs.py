"""A run's jobs (a document and what to do with it), how they are cut into batches for
the worker threads (:class:`Feeder`), and what became of a batch (:class:`BatchResult`)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

from kbdesk.ingest.writer import Tally
from kbdesk.models import Document

BATCH_DOCS = 64
BATCH_BYTES = 4 * 1024 * 1024


@dataclass
class Job:
    doc: Document
    kind: str  # "added", "updated", "resumed", "rebuild"
    data: bytes | None = None  # the file's bytes when the run still holds them (else read from the stored copy)
    copied: bool = False  # ``data`` is in the stored copy already


@dataclass
class Outcome:
    job: Job
    error: str | None = None
    cancelled: bool = False
    superseded: bool = False  # another runner claimed the document for newer work


@dataclass
class BatchResult:
    jobs: list[Job]
    tally: Tally = field(default_factory=Tally)
    cancelled: bool = False  # stopped before anything was done
    embedded: int = 0
    cached: int = 0
    calls: int = 0

    def outcomes(self) -> list[Outcome]:
        """What became of each job (once the writer is done with the batch)."""
        t = self.tally
        if self.cancelled:
            return [Outcome(job, t.reason(job.doc.id), cancelled=job.doc.id not in t.failed) for job in self.jobs]
        return [
            Outcome(
                job, t.reason(job.doc.id), superseded=job.doc.id in t.superseded, cancelled=job.doc.id in t.interrupted
            )
            for job in self.jobs
        ]


class Feeder:
    """Cuts jobs into batches of at most BATCH_DOCS documents or about BATCH_BYTES as they
    come, and starts each full one;
    with ``ahead`` batches started and unfinished, the caller waits (which bounds the
    file bytes the jobs carry)."""

    def __init__(self, start: Any, ahead: int) -> None:
        self.start = start
        self.futures: list[Any] = []
        self._slots = threading.Semaphore(ahead)
        self._current: list[Job] = []
        self._size = 0

    def add(self, jobs: list[Job], last: bool = False) -> None:
        for job in jobs:
            if self._current and (len(self._current) >= BATCH_DOCS or self._size + job.doc.size_bytes > BATCH_BYTES):
                self._submit()
            self._current.append(job)
            self._size += job.doc.size_bytes
        if last and self._current:
            self._submit()

    def _submit(self) -> None:
        group, self._current, self._size = self._current, [], 0
        self._slots.acquire()
        try:
            future = self.start(group)
        except BaseException:
            self._slots.release()
            raise
        future.add_done_callback(lambda _f: self._slots.release())
        self.futures.append(future)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
