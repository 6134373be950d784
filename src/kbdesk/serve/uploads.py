"""Uploaded files, through the same ingestion pipeline as ``kbdesk add``.

An upload streams to disk: the multipart parser spools the file part to a temporary
file, which is copied in 1 MB pieces to this server's staging folder
(``<cache>/uploads/<pid>-<token>/<kb id>/<random name><suffix>``: short, whatever the
file's own name, outside the data directory, which ingestion never reads from). It is
then added with :meth:`kbdesk.desk.Desk.add` in a thread of its own: the same claims,
statuses, worker threads, embedding cache and crash safety as a file added from the
CLI. The request returns (202) as soon as the pipeline has recorded the document
(``pending``); the client polls its status.

A file is known by its name within a KB, whichever way it came: uploading
``guide.md`` makes a new version of the KB's document named ``guide.md`` — one an
earlier upload made, or one ``kbdesk add`` made — and identical bytes change nothing.
Uploads of one name to one KB run one after the other, so two versions never race;
the database keeps one document per name against every other writer too. An upload
whose document another kbdesk run is indexing (``kbdesk add`` of the same folder, say)
waits up to :data:`BUSY_WAIT` for it, then is answered 409 with ``Retry-After`` and
the reason.

Memory stays bounded however many upload at once: uploads are indexed together only
while their files add up to at most :data:`INGEST_BUDGET` (a bigger one runs alone);
the others wait on disk, at most :data:`MAX_WAITING` of them, and a request that
cannot get its turn within :data:`QUEUED_WAIT` is answered 503 with nothing stored. The staged copy is
removed when its run ends; a start-up removes the staging folders of servers that are
no longer running (a document a kill interrupted is finished from its stored copy by
the resume the server runs when it starts).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import secrets
import shutil
import threading
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kbdesk.errors import KbdeskError
from kbdesk.ingest.events import IngestEvent
from kbdesk.ingest.extract import content_type_for
from kbdesk.ingest.formats import suffix_list
from kbdesk.models import Document, KnowledgeBase
from kbdesk.serve.errors import MAX_MESSAGE, ApiError, from_kbdesk

if TYPE_CHECKING:
    from kbdesk.desk import Desk

log = logging.getLogger("kbdesk.serve")

MAX_NAME_BYTES = 255  # what file systems allow for one name (the stored copy's name is shortened)
QUEUED_WAIT = 300.0  # seconds a request waits for its turn to be indexed (8 x 10 MB in a row: ~40 s)
MAX_WAITING = 64  # uploads accepted and not yet finished; beyond, 503 and Retry-After
INGEST_BUDGET = 12 * 1024 * 1024
"""Bytes of uploaded files indexed at once. A run holds several times its file while it
runs (its bytes, the text and chunks coming back from the extraction helper, the chunks
stored: 77 MB measured for a 10 MB Markdown file), so 12 MB lets small uploads run side
by side while a 10 MB one runs alone (measured: docs/SERVE.md)."""
BUSY_WAIT = 5.0
"""Seconds an upload waits, trying again, while another kbdesk run (``kbdesk add``,
``watch``, the TUI, another upload's server) is indexing the document of its name;
then it is answered 409 with ``Retry-After`` and the reason, nothing stored."""
BUSY_POLL = 0.25  # seconds between its tries
BUSY_RETRY_AFTER = 5  # seconds the 409 asks the client to wait
COPY_CHUNK = 1024 * 1024  # bytes per piece when a spooled upload is copied to staging
_FIRST = {"queued", "unchanged", "known-failure", "error"}
_RESULT = {"unchanged": "unchanged", "known-failure": "known_error", "error": "failed"}
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,15}$")


def check_upload_name(name: str | None) -> str:
    """The file name as sent, if it is a plain file name kbdesk can read; else 400/415."""
    if name is None or not name.strip():
        raise ApiError(400, "the uploaded file has no name: send it as the multipart field 'file' with a filename")
    if any(unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\u200d" for ch in name) or "\x00" in name:
        raise ApiError(400, "the file name holds control characters")
    if "/" in name or "\\" in name or name in (".", ".."):
        raise ApiError(400, "the file name must be a plain name, not a path (no '/', '\\' or '..')")
    if name != name.strip():
        raise ApiError(400, "the file name starts or ends with spaces")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise ApiError(400, f"the file name is longer than {MAX_NAME_BYTES} bytes")
    if content_type_for(name) is None:
        refused = f"kbdesk cannot read '{os.path.splitext(name)[1] or name}' files; it reads "
        # whole suffixes within the message's length ("and 40 more"), not a list cut mid-word
        raise ApiError(415, refused + suffix_list(MAX_MESSAGE - len(refused) - 12))
    return name


@dataclass
class _Wait:
    name: str
    turn: threading.Event = field(default_factory=threading.Event)  # its run has begun
    done: threading.Event = field(default_factory=threading.Event)  # its document is recorded (or it failed)
    lock: threading.Lock = field(default_factory=threading.Lock)
    abandoned: bool = False  # the request gave up before its turn: the run must not happen
    doc_id: str | None = None
    result: str = "queued"
    problem: str | None = None
    busy: str | None = None  # another run holds the document of this name now (why)
    conflict: bool = False  # it still did when this upload gave up: answered 409, try again
    error: BaseException | None = None

    def begin(self) -> bool:
        """Called by the run when its turn comes: False if the request has given up."""
        with self.lock:
            if not self.abandoned:
                self.turn.set()
            return not self.abandoned

    def give_up(self) -> bool:
        """Called by the request when its turn has not come in time: False if it just came."""
        with self.lock:
            self.abandoned = not self.turn.is_set()
            return self.abandoned

    def on_event(self, event: IngestEvent) -> None:
        if self.done.is_set() or event.filename != self.name:
            return
        if event.kind in _FIRST and event.doc_id:
            self.doc_id = event.doc_id
            if event.kind == "queued":
                self.result = "failed" if event.status == "error" else "queued"
            else:
                self.result = _RESULT[event.kind]
            self.done.set()
        elif event.kind in ("skipped", "error"):
            self.problem = event.detail or "the file was not added"
            self.done.set()
        elif event.kind == "busy":  # tried again shortly (Uploads._run)
            self.busy = event.detail or "another kbdesk run is indexing this file"


class Uploads:
    """Runs uploads; one per server."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.staging = root / f"{os.getpid()}-{secrets.token_hex(4)}"  # this server's own
        self._lock = threading.Lock()
        self._names: dict[tuple[str, str], list[Any]] = {}  # (kb, name) -> [lock, uploads holding it]
        self._budget = ByteBudget(INGEST_BUDGET)
        self._running = 0
        self._threads: set[threading.Thread] = set()
        self._stopping = threading.Event()

    # ── one upload ─────────────────────────────────────────────────────────────
    def stage(self, kb: KnowledgeBase, name: str, source: IO[bytes], limit: int) -> Path:
        """Copy the upload ``source`` to a staging file of its own, in pieces; 413 past
        ``limit`` bytes, 400 when empty (nothing is left behind either way)."""
        match = _SUFFIX.search(name)
        path = self.staging / kb.id / (secrets.token_hex(8) + (match.group(0).lower() if match else ""))
        path.parent.mkdir(parents=True, exist_ok=True)
        size = 0
        try:
            with open(path, "xb") as out:
                while piece := source.read(COPY_CHUNK):
                    size += len(piece)
                    if size > limit:
                        raise ApiError(413, f"the file is over the {limit / 1048576:g} MB limit")
                    out.write(piece)
            if not size:
                raise ApiError(400, f"'{name}' is empty: there is nothing to index")
        except BaseException:
            _remove(path)
            raise
        return path

    def submit(self, hold: Any, kb: KnowledgeBase, name: str, staged: Path) -> tuple[Document, str]:
        """Hand the staged file to the pipeline as the file ``name`` of ``kb`` on the desk
        ``hold`` leases (released when the run ends); return its document once recorded,
        and what happened (blocking: call it from a worker thread). The run removes the
        staged file; so does a refusal."""
        desk = hold.desk
        try:
            return self._submit(hold, desk, kb, name, staged)
        except BaseException:
            if not hold.started:
                hold.release()
                _remove(staged)
            raise

    def _submit(self, hold: Any, desk: Desk, kb: KnowledgeBase, name: str, staged: Path) -> tuple[Document, str]:
        if self._stopping.is_set():
            raise ApiError(503, "the server is shutting down", headers={"Retry-After": "5"})
        with self._lock:
            if self._running >= MAX_WAITING:
                raise ApiError(
                    503,
                    f"{MAX_WAITING} uploads are waiting to be indexed; try again shortly",
                    headers={"Retry-After": "5"},
                )
            self._running += 1
            entry = self._names.setdefault((kb.id, name), [threading.Lock(), 0])
            entry[1] += 1
            name_lock = entry[0]
        wait = _Wait(name)
        context = contextvars.copy_context()  # the request's (which token acts, for the audit log)
        thread = threading.Thread(
            target=context.run,
            args=(self._run, hold, kb, name, staged, name_lock, wait),
            name="kbdesk-upload",
            daemon=True,
        )
        with self._lock:
            self._threads.add(thread)
        hold.started = True  # the run releases it (and removes the staged file) from here on
        thread.start()
        if not wait.turn.wait(QUEUED_WAIT) and wait.give_up():  # nothing was stored: say so, and try later
            raise ApiError(
                503,
                f"'{name}' is waiting behind other uploads (or an earlier upload of it) still being indexed; "
                "try again shortly",
                headers={"Retry-After": "10"},
            )
        wait.done.wait()
        if wait.error is not None:
            if isinstance(wait.error, KbdeskError):
                raise from_kbdesk(wait.error)
            raise wait.error
        if wait.doc_id is None:
            if wait.conflict:
                raise ApiError(
                    409,
                    f"'{name}' was not added: {wait.problem}; try again shortly",
                    headers={"Retry-After": str(BUSY_RETRY_AFTER)},
                )
            raise ApiError(400, f"'{name}' was not added: {wait.problem}")
        return desk.document_by_id(wait.doc_id), wait.result

    def _run(
        self, hold: Any, kb: KnowledgeBase, name: str, staged: Path, name_lock: threading.Lock, wait: _Wait
    ) -> None:
        desk = hold.desk
        try:
            with name_lock, self._budget.taking(staged.stat().st_size):
                if not wait.begin():
                    return
                if self._stopping.is_set():
                    wait.error = ApiError(503, "the server is shutting down", headers={"Retry-After": "5"})
                    return
                deadline = time.monotonic() + BUSY_WAIT
                while True:
                    report = desk.add(kb.id, [staged], uploads={staged: name}, on_event=wait.on_event, workers=1)
                    if wait.done.is_set() or wait.busy is None or time.monotonic() >= deadline:
                        break
                    if self._stopping.wait(BUSY_POLL):
                        break
                    wait.busy = None  # the other run may be done with it now: again
                if wait.done.is_set():
                    pass
                elif wait.busy is not None:  # another run still holds its document
                    wait.problem, wait.conflict = wait.busy, True
                else:  # nothing said about this file: the report does
                    reason = next((r for _, r in report.skipped), None) or next((e for _, e in report.failed), None)
                    wait.problem = reason or "the file was not added"
        except BaseException as exc:
            wait.error = exc
            wait.turn.set()
            if not isinstance(exc, (KbdeskError, ApiError)):
                log.exception("upload of a file to %s failed", kb.id)
        finally:
            _remove(staged)
            wait.done.set()
            hold.release()
            give_back_memory()
            with self._lock:
                self._running -= 1
                self._threads.discard(threading.current_thread())
                entry = self._names[(kb.id, name)]
                entry[1] -= 1
                if entry[1] == 0:
                    del self._names[(kb.id, name)]

    # ── the server's life ──────────────────────────────────────────────────────
    def clean(self) -> int:
        """Remove what servers no longer running left staged (a kill mid-upload); the
        staging of servers still running is theirs. Returns how many files went."""
        if not self.root.is_dir():
            return 0
        removed = 0
        for entry in self.root.iterdir():
            owner = entry.name.split("-", 1)[0]
            if entry.is_dir() and owner.isdigit() and _alive(int(owner)):
                continue  # a running server's (this one's included)
            removed += sum(1 for p in entry.rglob("*") if p.is_file()) if entry.is_dir() else 1
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                _remove(entry)
        if removed:
            log.info("removed %d staged uploads left by a server that stopped", removed)
        return removed

    def resume(self, hold: Any) -> None:
        """Finish, in the background, documents a crash or kill left half-way on the desk
        ``hold`` leases."""

        def run() -> None:
            report = hold.desk.ingestor().resume()
            if report.resumed or report.failed:
                log.info("resumed %d interrupted documents (%d failed)", len(report.resumed), len(report.failed))

        self.background("resume", run, hold)

    def background(self, what: str, work: Any, hold: Any) -> None:
        """Run ``work()`` in a thread the server waits for when it stops, then release
        ``hold``; a failure is logged (the documents stay as they were, resumable)."""

        def run() -> None:
            try:
                work()
            except KbdeskError as exc:
                log.error("%s failed: %s", what, exc)
            except Exception:
                log.exception("%s failed", what)
            finally:
                hold.release()
                with self._lock:
                    self._threads.discard(threading.current_thread())

        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(run,), name=f"kbdesk-{what}", daemon=True)
        with self._lock:
            self._threads.add(thread)
        thread.start()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def running(self) -> int:
        return self._running

    def stop(self, timeout: float = 30.0) -> None:
        """Refuse new uploads and wait (up to ``timeout`` in all) for those running; anything
        left unfinished is resumable (the next start finishes it)."""
        self._stopping.set()
        with self._lock:
            threads = list(self._threads)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


ARENAS = 1
"""glibc malloc arenas of a server process. An upload is indexed in threads of its own,
each of which glibc would give an arena of its own (up to 8 per core); what one run
frees in its arena, the next run's threads cannot reuse, so the server grew by a
run's worth per upload. Measured, 8 concurrent 10 MB uploads to a ``kbdesk serve``
process (bench/bench_serve_limits.py): 300 MiB with glibc's default, 102 MiB with 2
arenas, 80 MiB with 1 (the slowest 202 came after 16.5 s and 19.2 s)."""
M_ARENA_MAX = -8  # glibc's mallopt parameter


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes
            import ctypes.util

            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.malloc_trim  # noqa: B018 - glibc's, or AttributeError
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC


_LIBC: Any = None


def limit_arenas() -> None:
    """A server's memory stays with its load, not with the number of uploads it has seen
    (:data:`ARENAS`; glibc only: elsewhere nothing changes)."""
    libc = _libc()
    if libc:
        libc.mallopt(M_ARENA_MAX, ARENAS)


def give_back_memory() -> None:
    """Return the heap a finished upload freed to the system (glibc's ``malloc_trim``)."""
    libc = _libc()
    if libc:
        libc.malloc_trim(0)


class ByteBudget:
    """At most ``total`` bytes taken at once; one taker bigger than all of it runs alone."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def taking(self, size: int) -> Iterator[None]:
        size = max(1, min(int(size), self.total))
        with self._cond:
            self._cond.wait_for(lambda: self.used + size <= self.total)
            self.used += size
        try:
            yield
        finally:
            with self._cond:
                self.used -= size
                self._cond.notify_all()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
