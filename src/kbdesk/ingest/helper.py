"""The helper process of an ingestion run: file copies, extraction and chunks on another core.

An ingestion run is one process whose threads take turns on the interpreter lock. The
helper (``python -m kbdesk.ingest.helper``, its own interpreter, started at the run's
first large batch and ended when the run closes its pipe) takes two kinds of work off
it, a whole batch per request and one reply:

* **copies** — the stored copies of a batch's files. Each copy is three system calls,
  and in the run every one of them waits for the interpreter lock on its way back;
* **prepare** — copies, extraction and chunks (:mod:`kbdesk.ingest.offload`), so the
  Python work of reading Markdown, HTML and text runs beside the run's writer instead of
  taking turns with it.

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
COPIES, PREPARE = 0, 1  # a request's kind
_REQUEST = struct.Struct("<BI")  # kind; number of files (COPIES) or length of the pickled request (PREPARE)
_LENGTH = struct.Struct("<I")  # a reply's length in bytes
_FILE = struct.Struct("<?II")  # COPIES: fresh, path bytes, data bytes
_REPLY = struct.Struct("<iI")  # COPIES: errno (0: written), message bytes


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, size: int) -> bytes:
    parts = []
    while size:
        part = os.read(fd, size)
        if not part:
            raise EOFError("the helper's pipe closed")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def serve(rfd: int = 0, wfd: int = 1) -> None:
    """The helper's loop: requests on ``rfd``, one reply each on ``wfd``, until EOF."""
    while True:
        try:
            kind, count = _REQUEST.unpack(_read_exact(rfd, _REQUEST.size))
        except EOFError:
            return
        if kind == PREPARE:
            from kbdesk.ingest.offload import prepare_each  # only a helper that is asked imports the extractors

            items, chunk_size, overlap, max_bytes = pickle.loads(_read_exact(rfd, count))
            body = pickle.dumps(prepare_each(items, chunk_size, overlap, max_bytes), pickle.HIGHEST_PROTOCOL)
        else:
            files = []
            for _ in range(count):
                fresh, path_len, data_len = _FILE.unpack(_read_exact(rfd, _FILE.size))
                path = os.fsdecode(_read_exact(rfd, path_len))
                files.append((path, _read_exact(rfd, data_len), fresh))
            reply = []
            for exc in write_each(files):
                text = b"" if exc is None else (exc.strerror or str(exc)).encode("utf-8", "replace")
                reply.append(_REPLY.pack(0 if exc is None else (exc.errno or -1), len(text)) + text)
            body = b"".join(reply)
        _write_all(wfd, _LENGTH.pack(len(body)) + body)


class Helper:
    """The run's side of the helper process: one request at a time, from any thread."""

    def __init__(self, process: bool = True) -> None:
        """``process=False``: no helper process; every copy is written here and the rest
        is left to the caller (nothing to close)."""
        self._proc: Any = None
        self._lock = threading.Lock()
        self._here = not process  # no helper, or it failed: everything is done in the run

    def write(self, items: list[tuple[str | Path, bytes, bool]]) -> list[OSError | None]:
        """Write ``(path, data, fresh)`` copies; the error of each, or None."""
        if self._here or len(items) < MIN_FILES:
            return write_each(items)
        with self._lock:
            try:
                return self._copies(items)
            except (OSError, EOFError, struct.error):
                self._failed()
        return write_each(items)

    def prepare(self, items: list[tuple[str, bytes, bool, str]], chunk_size: int, overlap: int,
                max_bytes: int) -> list[tuple[Any, ...]] | None:
        """Copy, extract and chunk ``(path, data, fresh, filename)`` files
        (:func:`kbdesk.ingest.offload.prepare_each`): one result per file, or None when
        the batch is small or the helper cannot take it (the caller does the work)."""
        if self._here or (len(items) < MIN_FILES and sum(len(item[1]) for item in items) < MIN_BYTES):
            return None
        request = pickle.dumps(([(os.path.abspath(p), d, f, n) for p, d, f, n in items], chunk_size, overlap,
                                max_bytes), pickle.HIGHEST_PROTOCOL)
        with self._lock:
            try:
                proc = self._started()
                _write_all(proc.stdin.fileno(), _REQUEST.pack(PREPARE, len(request)) + request)
                return pickle.loads(self._reply(proc))
            except (OSError, EOFError, struct.error, pickle.UnpicklingError):
                self._failed()
        return None

    def _started(self) -> Any:
        if self._proc is None:
            # the helper runs this very kbdesk (not whichever one the interpreter would
            # find first), so both ends speak the same requests
            here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
            self._proc = subprocess.Popen([sys.executable, "-m", "kbdesk.ingest.helper"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        return self._proc

    @staticmethod
    def _reply(proc: Any) -> bytes:
        rfd = proc.stdout.fileno()
        (size,) = _LENGTH.unpack(_read_exact(rfd, _LENGTH.size))
        return _read_exact(rfd, size)  # the whole reply: two reads for the batch

    def _copies(self, items: list[tuple[str | Path, bytes, bool]]) -> list[OSError | None]:
        proc = self._started()
        request = [_REQUEST.pack(COPIES, len(items))]
        for path, data, fresh in items:
            name = os.fsencode(os.path.abspath(path))  # the helper's working folder is the run's, but be sure
            request += [_FILE.pack(fresh, len(name), len(data)), name, data]
        _write_all(proc.stdin.fileno(), b"".join(request))
        body = self._reply(proc)
        out: list[OSError | None] = []
        at = 0
        for path, _data, _fresh in items:
            errno, length = _REPLY.unpack_from(body, at)
            at += _REPLY.size
            text = body[at:at + length].decode("utf-8", "replace")
            at += length
            out.append(None if errno == 0 else OSError(errno if errno > 0 else None, text, str(path)))
        return out

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
    serve()
