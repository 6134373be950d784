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

import itertools
import os
from pathlib import Path

_TMP = itertools.count()


def read_at_most(path: str | os.PathLike[str], expected: int, limit: int) -> bytes:
    """The file's bytes, at most ``limit`` of them; ``expected``: the size its scan saw
    (one read when it still has it)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
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


def _write_fd(path: Path, data: bytes, flags: int) -> None:
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def write_copy(path: Path, data: bytes, *, fresh: bool = False) -> None:
    """Write a stored copy whole or not at all: a temporary file renamed over the old
    copy, so a kill mid-write leaves the older copy (or none) and a temporary file no
    row points to (swept later).

    ``fresh``: no ready version of the document reads this path yet (a new document), so
    the copy is written in place; a kill mid-write leaves a short copy, which the next
    run finds wrong by its hash and writes again from the source."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    if fresh:
        _write_fd(path, data, flags | os.O_TRUNC)
        return
    tmp = path.with_name(f".tmp-{os.getpid()}-{next(_TMP)}-{path.name[:40]}")
    try:
        _write_fd(tmp, data, flags | os.O_EXCL)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
