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
from pathlib import Path

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
            view = view[os.write(fd, view) :]
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


def write_each(items: list[tuple[str | Path, bytes, bool]]) -> list[OSError | None]:
    """Write ``(path, data, fresh)`` copies (:func:`write_copy`); the error of each, or None."""
    out: list[OSError | None] = []
    for path, data, fresh in items:
        try:
            write_copy(path, data, fresh=fresh)
            out.append(None)
        except OSError as exc:
            out.append(exc)
    return out
