"""The helper process of an ingestion run: file copies, extraction and chunks on another core.

An ingestion run is one process whose threads take turns on the interpreter lock. The
helper (``python -m kbdesk.ingest.helper``, its own interpreter, started at the run's
first large batch and ended when the run closes its pipe) takes two kinds of work off
it, a whole batch per request and one reply:

* **copies** — the stored copies of a batch's files. Each copy is three system calls,
  and in the run every one of them waits for the interpreter lock on its way back;
* **prepare** — copies, extraction and chunks (:mod:`kbdesk.ingest.offload`), so the
  Python work of reading Markdown, HTML and text runs beside the run's writer instead of
  taking turns with it; each file's reading within :data:`MEMORY_MB` of memory
  (``RLIMIT_AS``, as the PDF reader's process).

A batch of fewer than :data:`MIN_FILES` files holding less than :data:`MIN_BYTES` (copies:
fewer files, whatever their size), or every batch once the helper cannot be started or
has failed, is done by the run itself: a copy is written in place or renamed
over, so a half-done batch written again is harmless. PDFs never come here: their
extraction has its own process, with its limits.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from kbdesk.ingest.copies import write_each

MIN_FILES = 16  # fewer files in a batch: done in the run (the helper saves nothing)
MIN_BYTES = 1 << 20  # … unless they hold this much text to extract and chunk
COPIES, PREPARE = "copies", "prepare"  # a request's kind
# What reading one file may add to the helper's memory: the readers are bounded by their
# own limits (a part parsed as it is inflated, a tree's elements, the text's characters),
# far below this; the cap is for what they do not foresee. A file past it fails alone.
MEMORY_MB = 1024
_LENGTH = struct.Struct("<I")  # every request and reply: its length in bytes, then it, pickled


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, size: int) -> bytearray:
    """``size`` bytes from ``fd``, read straight into one buffer (a reply of a big file's
    text is read once, not gathered in pieces and joined)."""
    buffer = bytearray(size)
    view, done = memoryview(buffer), 0
    while done < size:
        got = os.readv(fd, [view[done:]])
        if not got:
            raise EOFError("the helper's pipe closed")
        done += got
    return buffer


def _send(fd: int, value: Any) -> None:
    body = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    _write_all(fd, _LENGTH.pack(len(body)))
    _write_all(fd, body)  # (not concatenated: a big request is not copied once more)


def _receive(fd: int) -> Any:
    (size,) = _LENGTH.unpack(_read_exact(fd, _LENGTH.size))
    return pickle.loads(_read_exact(fd, size))  # the whole message: two reads


send_message, receive_message = _send, _receive  # the framing, for the other processes of a run


def this_kbdesk_env() -> dict[str, str]:
    """The environment for a process that runs this very kbdesk (not whichever one the
    interpreter would find first), so both ends speak the same messages."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))


def serve(rfd: int = 0, wfd: int = 1, memory_mb: int | None = None) -> None:
    """The helper's loop: requests on ``rfd``, one reply each on ``wfd``, until EOF.
    ``memory_mb``: what reading one file may add to the helper's memory."""
    while True:
        try:
            kind, args = _receive(rfd)
        except EOFError:
            return
        if kind == PREPARE:
            from kbdesk.ingest.offload import prepare_each  # only a helper that is asked imports the extractors

            items, chunk_size, overlap, max_bytes = args
            _send(wfd, prepare_each(items, chunk_size, overlap, max_bytes, memory_mb=memory_mb))
        else:  # the error of each copy: (errno, message), or None
            _send(wfd, [None if exc is None else (exc.errno, exc.strerror or str(exc)) for exc in write_each(args)])


class Helper:
    """The run's side of the helper process: one request at a time, from any thread."""

    def __init__(self, process: bool = True, memory_mb: int = MEMORY_MB) -> None:
        """``process=False``: no helper process; every copy is written here and the rest
        is left to the caller (nothing to close). ``memory_mb``: what reading one file may
        add to the helper's memory (its address space)."""
        self.memory_mb = memory_mb
        self._proc: Any = None
        self._lock = threading.Lock()
        self._here = not process  # no helper, or it failed: everything is done in the run

    def write(self, items: list[tuple[str | Path, bytes, bool]]) -> list[OSError | None]:
        """Write ``(path, data, fresh)`` copies; the error of each, or None."""
        if len(items) >= MIN_FILES:
            replies = self._call(COPIES, [(os.path.abspath(path), data, fresh) for path, data, fresh in items])
            if replies is not None:
                return [
                    None if reply is None else OSError(reply[0], reply[1], str(path))
                    for (path, _, _), reply in zip(items, replies, strict=True)
                ]
        return write_each(items)

    def prepare(
        self, items: list[tuple[str, bytes, bool, str]], chunk_size: int, overlap: int, max_bytes: int
    ) -> list[tuple[Any, ...]] | None:
        """Copy, extract and chunk ``(path, data, fresh, filename)`` files
        (:func:`kbdesk.ingest.offload.prepare_each`): one result per file, or None when
        the batch is small or the helper cannot take it (the caller does the work)."""
        if len(items) < MIN_FILES and sum(len(item[1]) for item in items) < MIN_BYTES:
            return None
        replies = self._call(
            PREPARE, ([(os.path.abspath(p), d, f, n) for p, d, f, n in items], chunk_size, overlap, max_bytes)
        )
        if replies is not None and len(replies) != len(items):  # one result per file, or none is trusted
            with self._lock:
                self._failed()
            return None
        return replies

    def _call(self, kind: str, args: Any) -> Any:
        """The helper's reply to one request; None when there is no helper or it failed
        (from then on, everything is done in the run)."""
        if self._here:
            return None
        with self._lock:
            try:
                proc = self._started()
                _send(proc.stdin.fileno(), (kind, args))
                return _receive(proc.stdout.fileno())
            except (OSError, EOFError, struct.error, pickle.UnpicklingError):
                self._failed()
        return None

    def _started(self) -> Any:
        if self._proc is None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "kbdesk.ingest.helper", str(self.memory_mb)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=this_kbdesk_env(),
            )
        return self._proc

    def _failed(self) -> None:
        self._here = True
        self._stop()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        with contextlib.suppress(OSError):
            proc.stdout.close()

    def close(self) -> None:
        with self._lock:
            self._stop()


if __name__ == "__main__":
    import signal

    # Ctrl-C reaches every process of the terminal's group: the run decides what stops,
    # and the helper ends when the run closes its pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(memory_mb=int(sys.argv[1]) if len(sys.argv) > 1 else None)
