"""Ingestion progress gathered from worker threads, handed to the UI in coalesced ticks.

:class:`IngestTracker` is fed :class:`~kbdesk.ingest.events.IngestEvent` objects from
the ingestion threads. It keeps the latest state of each document under a lock and
calls ``notify`` (which posts one small message) at most every ``interval`` seconds;
the UI thread then :meth:`drains <IngestTracker.drain>` what changed since its last
look. No Textual here: the tracker is plain, thread-safe Python.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from kbdesk.ingest.events import IngestEvent

FINAL = ("ready", "error")


@dataclass(frozen=True)
class DocProgress:
    doc_id: str
    filename: str
    status: str
    error: str | None = None
    done: int = 0
    """Chunks embedded so far (embedding), or the chunk count (ready)."""
    total: int = 0
    size: int = 0
    """Bytes of the file, as found when it was queued."""


class IngestTracker:
    """The live state of one ingestion run (add, resume, rebuild or re-embed) of one KB."""

    def __init__(
        self,
        kb_id: str,
        kb_name: str,
        what: str,
        notify: Callable[[], object],
        *,
        expected: int = 0,
        interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kb_id = kb_id
        self.kb_name = kb_name
        self.what = what
        self._notify = notify
        self._expected = expected
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._docs: dict[str, DocProgress] = {}
        self._final = 0  # documents of _docs that are ready or failed (counts() is called on every tick)
        self._dirty: set[str] = set()
        self._last = float("-inf")
        self._chunks: tuple[int, int] | None = None  # re-embedding: chunks done / total
        self.unchanged = 0
        self.skipped: list[tuple[str, str]] = []
        self.failed_unstored: list[tuple[str, str]] = []
        self.known_failures = 0  # failed before, unchanged since: not tried again
        self.waiting: str | None = None  # another kbdesk run holds some of the files
        """Files that failed before they had a document row (unreadable ones)."""
        self.removed: list[str] = []
        self.finished = False

    # ── called from ingestion threads ──────────────────────────────────────────
    def on_event(self, event: IngestEvent) -> None:
        with self._lock:
            self._apply(event)
            now = self._clock()
            due = now - self._last >= self._interval
            if due:
                self._last = now
        if due:
            self._notify()

    def _apply(self, event: IngestEvent) -> None:
        kind, doc_id = event.kind, event.doc_id
        if doc_id == self.kb_id:  # KB-wide progress (re-embedding)
            self._chunks = (event.done, event.total)
            return
        if kind == "unchanged":
            self.unchanged += 1
            return
        if kind == "known-failure":
            self.known_failures += 1
            return
        if kind == "waiting":
            self.waiting = event.detail
            return
        if kind == "skipped":
            self.skipped.append((event.filename, event.detail or ""))
            return
        if kind == "removed":
            self.removed.append(event.filename)
            if doc_id:
                gone = self._docs.pop(doc_id, None)
                self._final -= gone is not None and gone.status in FINAL
                self._dirty.add(doc_id)
            return
        if doc_id is None:
            if kind == "error":
                self.failed_unstored.append((event.filename, event.detail or ""))
            return
        old = self._docs.get(doc_id) or DocProgress(doc_id, event.filename, "pending")
        if kind == "queued":
            new = DocProgress(doc_id, event.filename, event.status or "pending", size=event.size)
        elif kind == "status":
            new = replace(old, status=event.status or old.status, error=None, done=0, total=0)
        elif kind == "embedded":
            new = replace(old, status="embedding", done=event.done, total=event.total)
        elif kind == "ready":
            new = replace(old, status="ready", error=None, done=event.done, total=event.total)
        elif kind == "error":
            new = replace(old, status="error", error=event.detail or old.error)
        else:
            return
        self._final += (new.status in FINAL) - (doc_id in self._docs and self._docs[doc_id].status in FINAL)
        self._docs[doc_id] = new
        self._dirty.add(doc_id)

    def finish(self) -> None:
        """The run is over: mark it and notify once more, whatever the interval."""
        with self._lock:
            self.finished = True
            self._last = self._clock()
        self._notify()

    # ── called from the UI thread ──────────────────────────────────────────────
    def drain(self) -> dict[str, DocProgress | None]:
        """Documents changed since the last drain (None: the document was removed)."""
        with self._lock:
            out = {doc_id: self._docs.get(doc_id) for doc_id in self._dirty}
            self._dirty.clear()
        return out

    def pending(self) -> bool:
        with self._lock:
            return bool(self._dirty)

    def snapshot(self) -> dict[str, DocProgress]:
        with self._lock:
            return dict(self._docs)

    def counts(self) -> tuple[int, int]:
        """(finished, total) for a progress bar: documents, or chunks while re-embedding."""
        with self._lock:
            if self._chunks is not None:
                return self._chunks
            return self._final, max(self._expected, len(self._docs))

    def summary(self) -> str:
        with self._lock:
            docs = list(self._docs.values())
            ready = sum(1 for d in docs if d.status == "ready")
            failed = sum(1 for d in docs if d.status == "error") + len(self.failed_unstored)
            parts = [f"{ready} ready"]
            if failed:
                parts.append(f"{failed} failed")
            if self.unchanged:
                parts.append(f"{self.unchanged} unchanged")
            if self.known_failures:
                parts.append(f"{self.known_failures} failed before and unchanged (not tried again)")
            if self.waiting:
                parts.append("some were indexed by another kbdesk run")
            if self.skipped:
                parts.append(f"{len(self.skipped)} skipped")
            if self.removed:
                parts.append(f"{len(self.removed)} removed")
            if self._chunks is not None:
                parts = [f"{self._chunks[0]} of {self._chunks[1]} chunks embedded"]
        return f"{self.what} '{self.kb_name}': " + ", ".join(parts)
