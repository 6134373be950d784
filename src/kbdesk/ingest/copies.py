"""The file work of ingestion in as few system calls as it takes.

Every system call lets go of the interpreter lock and must take it back, which, while
other threads run Python, waits for one of them to reach its switch interval; with
thousands of small files the calls themselves are the cost. Python's ``open()`` adds a
``fstat``, an ``ioctl`` (is it a terminal?) and a ``lseek`` to each file, and reading
"at most N bytes" allocates N bytes (10 MB for the size limit) and gives them back.
These helpers open with ``os.open``, read the size the scan saw, and write a new
document's stored copy in place.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

_TMP = itertools.count()
_FLAGS = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)  # O_BINARY: Windows, no newline translation
_MODE = 0o666  # as open() makes files: the user's umask decides


def read_at_most(path: str | os.PathLike[str], expected: int, limit: int) -> bytes:
    """The file's bytes, at most ``limit`` of them; ``expected``: the size its scan saw
    (one read when it still has it)."""
    fd = os.open(path, os.O_RDONLY | _FLAGS)
    try:
        want = min(max(expected, 0) + 1, limit)
        data = os.read(fd, want)
        if len(data) < want:  # a short read of a regular file: its end
            return data
        parts = [data]
        size = len(data)
        while size < limit:  # it grew since the scan
            more = os.read(fd, min(limit - size, 1 << 20))
            if not more:
                break
            parts.append(more)
            size += len(more)
        return b"".join(parts)
    finally:
        os.close(fd)


def _write_fd(path: str | Path, data: bytes, flags: int) -> None:
    try:
        fd = os.open(path, flags, _MODE)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, _MODE)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def write_copy(path: str | Path, data: bytes, *, fresh: bool = False) -> None:
    """Write a stored copy whole or not at all: a temporary file renamed over the old
    copy, so a kill mid-write leaves the older copy (or none) and a temporary file no
    row points to (swept later).

    ``fresh``: no ready version of the document reads this path yet (a new document), so
    the copy is written in place; a kill mid-write leaves a short copy, which the next
    run finds wrong by its hash and writes again from the source."""
    flags = os.O_WRONLY | os.O_CREAT | _FLAGS
    if fresh:
        _write_fd(path, data, flags | os.O_TRUNC)
        return
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".tmp-{os.getpid()}-{next(_TMP)}-{name[:40]}")
    try:
        _write_fd(tmp, data, flags | os.O_EXCL)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# ── a helper process for the copies of many small files ──────────────────────
# Each copy is three system calls, and in an ingestion run every one of them waits for
# the interpreter lock on its way back while a worker extracts text. A helper process
# (``python -m kbdesk.ingest.copies``, its own interpreter) writes a batch's copies with
# nobody to wait for, and the run pays two calls per batch: the request and the reply.
MIN_FILES = 16  # fewer copies in a batch: written here (the helper saves nothing)
_REQUEST = struct.Struct("<I")  # a request's number of files; a reply's length in bytes
_FILE = struct.Struct("<?II")  # fresh, path bytes, data bytes
_REPLY = struct.Struct("<iI")  # errno (0: written), message bytes


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, size: int) -> bytes:
    parts = []
    while size:
        part = os.read(fd, size)
        if not part:
            raise EOFError("the copy helper's pipe closed")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _write_each(items: list[tuple[str | Path, bytes, bool]]) -> list[OSError | None]:
    out: list[OSError | None] = []
    for path, data, fresh in items:
        try:
            write_copy(path, data, fresh=fresh)
            out.append(None)
        except OSError as exc:
            out.append(exc)
    return out


def serve(rfd: int = 0, wfd: int = 1) -> None:
    """The helper's loop: requests on ``rfd``, one reply per file on ``wfd``, until EOF."""
    while True:
        try:
            (count,) = _REQUEST.unpack(_read_exact(rfd, _REQUEST.size))
        except EOFError:
            return
        items = []
        for _ in range(count):
            fresh, path_len, data_len = _FILE.unpack(_read_exact(rfd, _FILE.size))
            path = os.fsdecode(_read_exact(rfd, path_len))
            items.append((path, _read_exact(rfd, data_len), fresh))
        reply = []
        for exc in _write_each(items):
            text = b"" if exc is None else (exc.strerror or str(exc)).encode("utf-8", "replace")
            reply.append(_REPLY.pack(0 if exc is None else (exc.errno or -1), len(text)) + text)
        body = b"".join(reply)
        _write_all(wfd, _REQUEST.pack(len(body)) + body)


class Copier:
    """Writes the stored copies of a run's batches, through the helper process when a
    batch has many files; here, one by one, when it has few, when the helper cannot be
    started, or after it failed (its half-done batch is written again: a copy is written
    in place or renamed over, so writing it twice is harmless)."""

    def __init__(self, helper: bool = True) -> None:
        """``helper``: False writes every copy here (nothing to close)."""
        self._proc: Any = None
        self._lock = threading.Lock()
        self._here = not helper  # every copy written in this process (no helper, or it failed)

    def write(self, items: list[tuple[str | Path, bytes, bool]]) -> list[OSError | None]:
        """Write ``(path, data, fresh)`` copies; the error of each, or None."""
        if self._here or len(items) < MIN_FILES:
            return _write_each(items)
        with self._lock:
            try:
                return self._through_helper(items)
            except (OSError, EOFError, struct.error):
                self._here = True
                self._stop()
        return _write_each(items)

    def _through_helper(self, items: list[tuple[str | Path, bytes, bool]]) -> list[OSError | None]:
        if self._proc is None:
            self._proc = subprocess.Popen([sys.executable, "-m", "kbdesk.ingest.copies"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        request = [_REQUEST.pack(len(items))]
        for path, data, fresh in items:
            name = os.fsencode(os.path.abspath(path))  # the helper's working folder is the run's, but be sure
            request += [_FILE.pack(fresh, len(name), len(data)), name, data]
        _write_all(self._proc.stdin.fileno(), b"".join(request))
        rfd = self._proc.stdout.fileno()
        (size,) = _REQUEST.unpack(_read_exact(rfd, _REQUEST.size))
        body = _read_exact(rfd, size)  # the whole reply: two reads for the batch
        out: list[OSError | None] = []
        at = 0
        for path, _data, _fresh in items:
            errno, length = _REPLY.unpack_from(body, at)
            at += _REPLY.size
            text = body[at:at + length].decode("utf-8", "replace")
            at += length
            out.append(None if errno == 0 else OSError(errno if errno > 0 else None, text, str(path)))
        return out

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
