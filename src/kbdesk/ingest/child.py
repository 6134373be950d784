"""An ingestion run in a process of its own, reporting its progress to the process that started it.

An app that indexes in its own threads shares the interpreter lock with its UI: every
extraction, chunk and write delays the next frame. :class:`ChildRun` instead starts
``python -m kbdesk.ingest.child``, hands it the desk (:class:`DeskSpec`) and the work
(:class:`IngestJob`), and reads back the run's progress — the very
:class:`~kbdesk.ingest.events.IngestEvent` objects an in-process run emits, a batch
every :data:`FLUSH_S` at most — then its result or its error. Messages are the helper
process's framing (:mod:`kbdesk.ingest.helper`): a length, then a pickle.

The child runs the normal pipeline, so crash safety and claims are the pipeline's own: it
holds its claims under its own pid, and documents it leaves unfinished — cancelled, or
the child killed — are picked up by the next ``add`` or ``resume`` like any run's.
Stopping: a ``cancel`` message, the end of its input (the parent went away) or SIGTERM
make it cancel its ingestor, which stops between batches; a second SIGTERM ends it at
once. A child that ends without its result is reported as :class:`ChildDied`. It runs at a
lower priority (:data:`NICENESS`) in the app's session: a process group of its own (the
terminal's signals are the app's), scheduled with the app rather than beside it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kbdesk.desk_api import DeskApi
from kbdesk.errors import KbdeskError
from kbdesk.ingest.events import EventSink, IngestEvent
from kbdesk.ingest.helper import receive_message, send_message, this_kbdesk_env
from kbdesk.store.api import is_team, team_store

FLUSH_S = 0.05  # the child sends the events gathered, at most this often
NICENESS = 10
"""The child (and the helper processes it starts) yields the CPU to the app: indexing takes what
the app leaves, so a key is drawn at once however busy the run (measured: docs/BENCHMARKS.md)."""
_FRAMING = (OSError, EOFError, struct.error, pickle.UnpicklingError)


@dataclass(frozen=True)
class IngestJob:
    """One call of an :class:`~kbdesk.ingest.pipeline.Ingestor` method, e.g.
    ``IngestJob("add", (kb_id, paths), {"sync": True})``: data, so another process can make it."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __call__(self, ingestor: Any) -> Any:
        return getattr(ingestor, self.method)(*self.args, **self.kwargs)


@dataclass(frozen=True)
class DeskSpec:
    """What opens the same desk in another process: its paths, config, database and vector backend."""

    paths: Any
    config: Any
    db: str
    backend: str | None = None


def desk_spec(desk: DeskApi) -> DeskSpec | None:
    """The spec of ``desk``; None when another process could not have the same desk (an
    embedder registered in this process)."""
    if desk.embedders.registered:
        return None
    store = desk.store
    if is_team(store):
        return DeskSpec(desk.paths, desk.config, team_store(store).uri)
    return DeskSpec(desk.paths, desk.config, str(desk.db_path), store.vectors.name)


class ChildDied(KbdeskError):
    """The ingestion process ended without finishing its run (killed, or crashed)."""


class ChildRun:
    """The parent's side of one run in a child process. :meth:`start` and :meth:`run` belong to
    one thread; :meth:`cancel` and :meth:`stop` may come from any other."""

    def __init__(self, spec: DeskSpec, job: IngestJob) -> None:
        self.spec = spec
        self.job = job
        self.cancelled = False
        """The run stopped early (cancelled): what it left is for a later resume."""
        self._proc: Any = None
        self._log: Any = None
        self._lock = threading.Lock()  # writes to the child's input
        self._early: BaseException | None = None  # the child failed before its run began

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> bool:
        """Start the child and hand it the job. False when no child could start (the caller runs
        the job itself); True once the child has opened the desk (or failed to: :meth:`run` says)."""
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - kept for the run, closed by _close()
        try:
            with self._lock:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "kbdesk.ingest.child"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=self._log,
                    env=this_kbdesk_env(),
                    # a process group of its own: the terminal's signals (Ctrl-C, Ctrl-Z) are the app's to
                    # handle; the same session, so the scheduler counts the child's time with the app's
                    # (a session of its own would be its own scheduling group, given as much CPU as the app)
                    process_group=0,
                )
                send_message(self._proc.stdin.fileno(), ("run", self.spec, self.job))
                if self.cancelled:  # stopped while it was starting
                    send_message(self._proc.stdin.fileno(), ("cancel",))
            first = receive_message(self._proc.stdout.fileno())
        except _FRAMING:
            if self._proc is None:
                return False
            code = self._proc.wait()
            if code < 0 or self.cancelled:  # killed or stopped on purpose: not a child that cannot start
                self._early = ChildDied(self._why(code))
                return True
            self._close()
            return False
        if first[0] == "failed":
            self._early = first[1]
        return True

    def run(self, on_event: EventSink) -> Any:
        """Relay the child's events to ``on_event`` until it ends; its result, or its error raised."""
        try:
            if self._early is not None:
                raise self._early
            fd = self._proc.stdout.fileno()
            while True:
                try:
                    message = receive_message(fd)
                except _FRAMING:
                    raise ChildDied(self._why(self._proc.wait())) from None
                if message[0] == "events":
                    for event in message[1]:
                        on_event(event)
                elif message[0] == "done":
                    self.cancelled = self.cancelled or message[2]
                    return message[1]
                elif message[0] == "failed":
                    raise message[1]
        finally:
            self._close()

    def cancel(self) -> None:
        """Ask the run to stop between batches (what it leaves is resumable)."""
        self.cancelled = True
        with self._lock:
            if self._proc is not None and self._proc.stdin is not None and not self._proc.stdin.closed:
                with contextlib.suppress(OSError, ValueError):
                    send_message(self._proc.stdin.fileno(), ("cancel",))

    def stop(self, timeout: float) -> bool:
        """Cancel, wait up to ``timeout`` seconds for the child to end, then end it. True when it
        ended of itself."""
        self.cancel()
        proc = self._proc
        if proc is None:
            return True
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            proc.terminate()  # a second SIGTERM: the child ends at once
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return False

    def _why(self, code: int) -> str:
        if code < 0:
            how = f"it was stopped by signal {-code}"
            with contextlib.suppress(ValueError):
                how = f"it was stopped by {signal.Signals(-code).name}"
        else:
            how = f"it ended with status {code}" + (f": {self._last_words()}" if self._last_words() else "")
        return f"the indexing process ended before it finished ({how}); the documents it left can be resumed"

    def _last_words(self) -> str:
        """The last line the child wrote to its error output (a traceback's last line says what broke)."""
        if self._log is None:
            return ""
        with contextlib.suppress(OSError):
            self._log.seek(0, os.SEEK_END)
            self._log.seek(max(0, self._log.tell() - 4096))
            lines = [line.strip() for line in self._log.read().decode("utf-8", "replace").splitlines()]
            return next((line for line in reversed(lines) if line), "")[:300]
        return ""

    def _close(self) -> None:
        proc = self._proc
        if proc is not None:
            with self._lock, contextlib.suppress(OSError):
                proc.stdin.close()
            proc.wait()
            with contextlib.suppress(OSError):
                proc.stdout.close()
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None


# ── the child's side ───────────────────────────────────────────────────────────
class _Sender:
    """The child's events, gathered from the run's threads and sent in batches, then its end."""

    def __init__(self, fd: int, on_broken: Any) -> None:
        self._fd = fd
        self._on_broken = on_broken
        self._events: list[IngestEvent] = []
        self._gather = threading.Lock()
        self._write = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kbdesk-child-events", daemon=True)
        self._thread.start()

    def event(self, event: IngestEvent) -> None:
        with self._gather:
            self._events.append(event)

    def send(self, message: Any) -> None:
        with self._write:
            try:
                send_message(self._fd, message)
            except OSError:  # the parent is gone: nobody to index for
                self._on_broken()

    def _flush(self) -> None:
        with self._gather:
            batch, self._events = self._events, []
        if batch:
            self.send(("events", batch))

    def _loop(self) -> None:
        while not self._stopped.wait(FLUSH_S):
            self._flush()

    def end(self, message: Any) -> None:
        self._stopped.set()
        self._thread.join()
        self._flush()
        self.send(message)


def _failure(exc: BaseException) -> Any:
    """``exc`` as the parent can raise it: itself when it pickles, else one line of it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception that does not survive a pickle is sent as text
        text = str(exc) if isinstance(exc, KbdeskError) else f"internal error: {type(exc).__name__}: {exc}"
        return KbdeskError(text)


def main() -> None:
    """The child: one run, then exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    out = os.dup(1)
    os.dup2(2, 1)  # whatever else writes to stdout goes to the error output, not into the messages
    try:
        _, spec, job = receive_message(0)
    except _FRAMING:
        return
    cancel = threading.Event()
    ingestor: Any = None

    def stop(*_: Any) -> None:
        cancel.set()
        if ingestor is not None:
            ingestor.cancel()

    sender = _Sender(out, stop)
    terms: list[float] = []

    def on_term(*_: Any) -> None:
        terms.append(time.monotonic())
        if len(terms) > 1:
            os._exit(128 + signal.SIGTERM)
        stop()

    signal.signal(signal.SIGTERM, on_term)

    def listen() -> None:
        while True:
            try:
                message = receive_message(0)
            except _FRAMING:
                break
            if message[0] == "cancel":
                break
        stop()

    threading.Thread(target=listen, name="kbdesk-child-input", daemon=True).start()
    from kbdesk.desk import open_desk

    try:
        desk = open_desk(spec.db, config=spec.config, backend=spec.backend, paths=spec.paths)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which shows it
        sender.end(("failed", _failure(exc)))
        return
    try:
        ingestor = desk.ingestor(on_event=sender.event)
        if cancel.is_set():
            ingestor.cancel()
        sender.send(("ready",))
        result = job(ingestor)
        if not ingestor.cancelled and job.args:  # the KB's search file, written here rather than in the app
            with contextlib.suppress(KbdeskError):
                desk.warm_search(job.args[0], wait=True)
        sender.end(("done", result, ingestor.cancelled))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which shows it
        import traceback

        traceback.print_exc()
        sender.end(("failed", _failure(exc)))
    finally:
        desk.close()


if __name__ == "__main__":
    main()
