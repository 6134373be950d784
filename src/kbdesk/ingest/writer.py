"""The one writer of an ingestion run: statuses, ready documents and failures, batched across files.

The worker threads read, extract, chunk and embed; everything they have to write goes
to this thread through a bounded queue, so they never wait on the store's write lock
(a full queue slows them down instead). Each round the writer takes whatever has
arrived and writes it in ONE transaction
(:meth:`kbdesk.store.core.documents.Documents.finish_documents` with its ``before``
and ``after`` status updates):

* status moves are coalesced — a document's latest status wins, its extracted text is
  kept — and a document made ready in the same round needs none (its text goes in with
  its ready row);
* ready documents: each one still becomes ready atomically with its chunks, keyword
  rows and vectors, and one that was superseded or refused fails alone;
* failures, last, so that nothing written before them hides them.

A database that cannot be written (a full disk, an I/O error) stops the writer: what
it has not written stays as it was (resumable), :attr:`Writer.failure` says why, and
the run ends with that error.

Events: ``status`` events are sent by the workers as they hand a move over; ``ready``
and ``error`` only once the row says so (after the commit).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kbdesk.errors import DatabaseWriteError, KbdeskError, SupersededError
from kbdesk.ingest.events import EventSink, IngestEvent
from kbdesk.store.api import Store
from kbdesk.store.doc_types import StatusUpdate

log = logging.getLogger("kbdesk.ingest")
QUEUE_MESSAGES = 16  # hand-overs waiting at most (each is one batch's worth)
ROUND_DOCS = 512  # documents made ready in one transaction at most


@dataclass
class Tally:
    """What became of one batch's documents, filled in by the workers and the writer."""

    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # doc id -> (reason, kind)
    superseded: set[str] = field(default_factory=set)
    interrupted: set[str] = field(default_factory=set)

    def fail(self, doc_id: str, reason: str, kind: str) -> None:
        self.failed.setdefault(doc_id, (reason, kind))

    def reason(self, doc_id: str) -> str | None:
        found = self.failed.get(doc_id)
        return found[0] if found else None


@dataclass
class Ready:
    """A document to make ready: its chunks, vectors (or None) and the version it was claimed at."""

    doc_id: str
    name: str
    chunks: list[Any]
    vectors: list[Any] | None
    version: int | None
    tally: Tally
    hashes: list[str] = field(default_factory=list)  # staged vectors to drop once stored


@dataclass
class _Message:
    statuses: list[StatusUpdate] = field(default_factory=list)
    ready: list[Ready] = field(default_factory=list)
    failures: list[tuple[StatusUpdate, str]] = field(default_factory=list)  # the update, the file's name
    staged: tuple[str, list[tuple[str, Any]]] | None = None  # (model key, vectors) to stage
    drop_key: str | None = None  # the staged model key of ``ready`` vectors


class Writer:
    """Started with ``with Writer(store, on_event) as writer:``; leaving waits until all is written."""

    def __init__(self, store: Store, on_event: EventSink) -> None:
        self.store = store
        self.on_event = on_event
        self._queue: queue.Queue[_Message | None] = queue.Queue(QUEUE_MESSAGES)
        self._thread = threading.Thread(target=self._loop, name="kbdesk-ingest-writer", daemon=True)
        self._retry: list[tuple[StatusUpdate, str]] = []
        self._turns = threading.Condition()
        self._busy = False  # a round, or a write that goes first, is under way
        self._wanted = 0  # writes waiting to go first
        self.failure: DatabaseWriteError | None = None  # the database could not be written: nothing more is

    @contextmanager
    def first(self) -> Iterator[None]:
        """Write before the writer's next round (claims: the workers wait for them): the
        round under way ends, and the writer waits until this is done."""
        with self._turns:
            self._wanted += 1
            while self._busy:
                self._turns.wait()
            self._wanted -= 1
            self._busy = True
        try:
            yield
        finally:
            self._done()

    def _done(self) -> None:
        with self._turns:
            self._busy = False
            self._turns.notify_all()

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._queue.put(None)
        self._thread.join()

    # ── called by the workers ──────────────────────────────────────────────────
    def statuses(self, updates: list[StatusUpdate]) -> None:
        if updates:
            self._queue.put(_Message(statuses=updates))

    def ready(self, items: list[Ready], drop_key: str | None = None) -> None:
        if items:
            self._queue.put(_Message(ready=items, drop_key=drop_key))

    def fail(self, updates: list[tuple[StatusUpdate, str]]) -> None:
        if updates:
            self._queue.put(_Message(failures=list(updates)))

    def stage(self, model_key: str, vectors: list[tuple[str, Any]]) -> None:
        if vectors:
            self._queue.put(_Message(staged=(model_key, vectors)))

    # ── the writer thread ──────────────────────────────────────────────────────
    def _loop(self) -> None:
        done = False
        while not done:
            first = self._queue.get()
            messages = [] if first is None else [first]
            done = first is None
            docs = sum(len(m.ready) for m in messages)
            while not done and docs < ROUND_DOCS:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    done = True
                else:
                    messages.append(more)
                    docs += len(more.ready)
            with self._turns:
                while self._busy or self._wanted:
                    self._turns.wait()
                self._busy = True
            try:
                if self.failure is not None:
                    raise self.failure
                self._write(messages)
            except DatabaseWriteError as exc:  # a full disk, say: the run stops (Ingestor._run), the rest stays
                self.failure = self.failure or exc
                for r in (r for m in messages for r in m.ready):  # not made ready, left for the next run
                    r.tally.fail(r.doc_id, str(exc), "store")
            except Exception as exc:
                log.exception("the ingestion writer failed")
                for r in (r for m in messages for r in m.ready):  # not made ready: said so, left for resume
                    r.tally.fail(r.doc_id, f"internal error: {type(exc).__name__}: {exc}", "internal")
            finally:
                self._done()
        if self._retry and self.failure is None:
            self._write([])

    def _write(self, messages: list[_Message]) -> None:
        statuses: dict[str, StatusUpdate] = {}
        ready: list[Ready] = []
        failures = list(self._retry)
        self._retry = []
        drops: dict[str, list[str]] = {}
        for m in messages:
            if m.staged is not None:
                self.store.put_cached_vectors(*m.staged)
            for u in m.statuses:
                prev = statuses.get(u.doc_id)
                if prev is not None and u.extracted_text is None and prev.extracted_text is not None:
                    u = StatusUpdate(
                        u.doc_id, u.status, u.error, prev.extracted_text, prev.sections, u.version, u.error_kind
                    )
                statuses[u.doc_id] = u
            ready += m.ready
            failures += m.failures
            if m.drop_key is not None:
                drops.setdefault(m.drop_key, []).extend(h for r in m.ready for h in r.hashes)
        items = []
        for r in ready:  # made ready now: its status moves need not be written, its text goes with it
            moved = statuses.pop(r.doc_id, None)
            text = (moved.extracted_text, moved.sections) if moved is not None and moved.extracted_text else None
            items.append((r.doc_id, r.chunks, r.vectors, r.version, text))
        errors = [u for u, _ in failures]
        try:
            results: list[Any] = self.store.finish_documents(
                items, before=list(statuses.values()), after=errors, rows=False
            )
        except DatabaseWriteError:
            raise  # the database cannot be written: nothing more will be (see _loop)
        except KbdeskError as exc:  # the store failed these documents (locked, say): they fail with it
            results = [exc] * len(items)
            self._record_alone(errors)
        except Exception as exc:  # a bug: fail these documents, keep the run going
            log.exception("writing an ingestion round failed")
            results = [KbdeskError(f"internal error: {type(exc).__name__}: {exc}")] * len(items)
            self._record_alone(errors)
        stored: set[str] = set()
        for r, res in zip(ready, results, strict=True):
            if isinstance(res, SupersededError):
                r.tally.superseded.add(r.doc_id)
            elif isinstance(res, Exception):
                kind = "store" if isinstance(res, KbdeskError) else "internal"
                reason = str(res) if isinstance(res, KbdeskError) else f"internal error: {type(res).__name__}: {res}"
                r.tally.fail(r.doc_id, reason, kind)
                self._retry.append(
                    (StatusUpdate(r.doc_id, "error", error=reason, version=r.version, error_kind=kind), r.name)
                )
            else:
                stored.update(r.hashes)
                self.on_event(IngestEvent("ready", r.name, r.doc_id, "ready", done=len(r.chunks), total=len(r.chunks)))
        for key, hashes in drops.items():  # their vectors now live with their chunks
            gone = [h for h in hashes if h in stored]
            if gone:
                self.store.drop_cached_vectors(key, gone)
        for u, name in failures:
            self.on_event(IngestEvent("error", name, u.doc_id, "error", u.error))

    def _record_alone(self, errors: list[StatusUpdate]) -> None:
        """After a failed round: record the failures on their own."""
        try:
            self.store.set_statuses(errors)
        except KbdeskError:
            log.exception("could not record failures")
