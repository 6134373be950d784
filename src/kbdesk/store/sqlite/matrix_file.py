"""Memory-mapped float32 copies of a KB's vectors: one file per KB beside the database.

Scanning a float32 matrix with numpy is the fastest exact search here (sqlite-vec's PyPI
build has no SIMD: docs/BENCHMARKS-search.md), but reading a KB's vectors out of SQLite
into memory costs every new process a second or more and the whole matrix in RSS. So
each KB's vectors are also written, once per vector version, to a file that any
process maps read-only and scans in place; the operating system's page cache holds it
between processes.

The file is derived data: ``kb_chunks.embedding`` stays the canonical copy, and a file
is only used when everything about it matches the database:

- layout: ``HEADER_SIZE`` bytes of header, then ``rows x dims`` float32 (row-major),
  then ``rows`` int64 seqs (ascending); the file's size must be exactly that;
- the header holds a magic string and format number, the KB's id, ``dims``, ``rows``,
  and the stamp of the database it was written from: ``kb_vector_state.version``, the
  KB's chunk count and its largest seq. A file whose stamp differs (stale: the vectors
  moved; foreign: another database or KB; truncated: the size is off) is never read,
  and is rebuilt where the folder can be written.

A file is written to a temporary name in the same folder, flushed to disk and renamed
over the old one, so another process (or this one after a kill) sees the old file or
the new one whole, never half of one. A process that already mapped the old file keeps
reading it until it notices the version moved.

Files live in ``<database file>.vectors/`` (beside ``kb.db`` in the data folder for the
default database); deleting a KB deletes its file, and files of KBs that are gone are
removed when the database is opened. Which file a store reads, and when it is written:
:mod:`kbdesk.store.sqlite.matrix_cache`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kbdesk.cpu_threads import scan
from kbdesk.store.dbapi import Connection

MAGIC = b"KBDMATX\x00"
FORMAT = 1
HEADER = struct.Struct("<8sIIqqqq48s")  # magic, format, dims, rows, version, chunks, max_seq, kb_id
HEADER_SIZE = 128
SUFFIX = ".f32"
TMP_PREFIX = ".tmp-"
STALE_TMP_S = 3600  # a temporary file this old belongs to a build that was killed
FETCH_BATCH = 8192


@dataclass(frozen=True)
class Stamp:
    """What a file must have been written from to be read: the KB's vector version, its
    chunk count (``knowledge_bases.chunk_count``) and its largest seq (the last two catch
    a database restored under the same version)."""

    version: int
    chunks: int
    max_seq: int


STREAM_BYTES = 1 << 20  # the buffer a streamed scan reads through (stays in L2; larger measured no faster)


@dataclass
class Matrix:
    """A KB's vectors mapped from its file (arrays are read-only views of the mapping).

    The first scan reads the file through a small buffer instead of touching the mapping:
    a process that searches once (``kbdesk search``) stays small and does not pay a page
    fault per 4 KB; later scans read the mapping, which stays resident and is as fast as a
    matrix in memory.
    """

    stamp: Stamp
    seqs: np.ndarray  # (rows,) int64, ascending
    vectors: np.ndarray  # (rows, dims) float32, unit rows
    path: Path
    file: Any  # the open file the mapping came from (a rename over the path does not change it)
    scans: int = 0

    @property
    def version(self) -> int:
        return self.stamp.version

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine of ``query`` with every row (rows are unit, ``query`` is unit)."""
        self.scans += 1
        rows, dims = self.vectors.shape
        if self.scans > 1 or rows == 0 or not hasattr(os, "preadv"):
            return scan(self.vectors, query)  # on this thread: no BLAS pool (kbdesk.cpu_threads)
        out = np.empty(rows, dtype=np.float32)
        block = max(128, STREAM_BYTES // (4 * dims))
        buf = np.empty((min(block, rows), dims), dtype=np.float32)
        fd = self.file.fileno()
        for lo in range(0, rows, block):
            n = min(block, rows - lo)
            if os.preadv(fd, [buf[:n].data], HEADER_SIZE + lo * dims * 4) != n * dims * 4:
                return scan(self.vectors, query)  # pragma: no cover - the size was checked at open
            # einsum: one thread, no BLAS thread hand-off per block (which costs more than the block)
            np.einsum("ij,j->i", buf[:n], query, out=out[lo : lo + n])
        return out

    def rows_of(self, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(seqs found, their row numbers) for ``seqs`` (ascending)."""
        at = np.searchsorted(self.seqs, seqs)
        at = np.minimum(at, max(self.seqs.size - 1, 0))
        hit = self.seqs[at] == seqs if self.seqs.size else np.zeros(seqs.size, dtype=bool)
        return seqs[hit], at[hit]


def folder_for(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".vectors")


def file_for(folder: Path, kb_id: str) -> Path:
    return folder / f"{kb_id}{SUFFIX}"


def stamp_of(conn: Connection, kb_id: str) -> Stamp | None:
    """The KB's stamp now (inside the caller's snapshot), or None when it has no vector state."""
    row = conn.execute("SELECT version FROM kb_vector_state WHERE kb_id = ?", (kb_id,)).fetchone()
    if row is None:
        return None
    # both cheap: a column the store keeps, and one step down the kb_id index
    chunks = conn.execute("SELECT chunk_count FROM knowledge_bases WHERE id = ?", (kb_id,)).fetchone()
    max_seq = conn.execute("SELECT max(seq) FROM kb_chunks WHERE kb_id = ?", (kb_id,)).fetchone()[0]
    return Stamp(int(row[0]), int(chunks[0]) if chunks else -1, int(max_seq or 0))


def open_matrix(path: Path, kb_id: str, dims: int, stamp: Stamp) -> Matrix | None:
    """The file at ``path`` mapped, or None unless it is whole and was written from ``stamp``."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - kept open by the Matrix for streamed scans
    except OSError:
        return None
    try:
        size = os.fstat(fh.fileno()).st_size
        if size < HEADER_SIZE:
            fh.close()
            return None
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        fh.close()
        return None
    magic, fmt, fdims, rows, version, chunks, max_seq, fkb = HEADER.unpack_from(mm, 0)
    if (
        magic != MAGIC
        or fmt != FORMAT
        or fdims != dims
        or fkb.rstrip(b"\x00") != kb_id.encode()
        or Stamp(version, chunks, max_seq) != stamp
        or rows < 0
        or size != HEADER_SIZE + rows * dims * 4 + rows * 8
    ):
        mm.close()
        fh.close()
        return None
    vectors = np.frombuffer(mm, dtype=np.float32, count=rows * dims, offset=HEADER_SIZE).reshape(rows, dims)
    seqs = np.frombuffer(mm, dtype=np.int64, count=rows, offset=HEADER_SIZE + rows * dims * 4)
    if rows and (seqs[-1] > max_seq or (rows > 1 and not bool(np.all(seqs[1:] > seqs[:-1])))):
        return None
    return Matrix(stamp, seqs, vectors, path, fh)


class Cancelled(Exception):
    """A background write stopped because its store is closing."""


def write_matrix(conn: Connection, folder: Path, kb_id: str, dims: int, *, cancel: Any = None) -> Stamp | None:
    """Write the KB's file from ``conn``'s snapshot (the caller holds one read transaction
    for the stamp and the rows) and move it into place; return the stamp it was written
    from (None when the KB has no vector state). Raises OSError when it cannot be written."""
    stamp = stamp_of(conn, kb_id)
    if stamp is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{TMP_PREFIX}{kb_id}-{os.getpid()}-{threading.get_ident()}"
    seqs: list[np.ndarray] = []
    rows = 0
    try:
        with open(tmp, "wb") as fh:
            fh.write(b"\x00" * HEADER_SIZE)
            cur = conn.execute(
                "SELECT seq, embedding FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL ORDER BY seq", (kb_id,)
            )
            while batch := cur.fetchmany(FETCH_BATCH):
                if cancel is not None and cancel():
                    raise Cancelled(kb_id)
                good = [(seq, blob) for seq, blob in batch if len(blob) == dims * 4]
                if not good:
                    continue
                fh.write(b"".join(blob for _, blob in good))
                seqs.append(np.fromiter((seq for seq, _ in good), dtype=np.int64, count=len(good)))
                rows += len(good)
            fh.write((np.concatenate(seqs) if seqs else np.zeros(0, dtype=np.int64)).tobytes())
            fh.seek(0)
            fh.write(HEADER.pack(MAGIC, FORMAT, dims, rows, stamp.version, stamp.chunks, stamp.max_seq, kb_id.encode()))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, file_for(folder, kb_id))
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):  # the rename itself survives a crash once the folder is synced
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return stamp


def remove(folder: Path, kb_id: str) -> None:
    with contextlib.suppress(OSError):
        file_for(folder, kb_id).unlink()


def remove_orphans(folder: Path, live: set[str]) -> int:
    """Delete files of KBs not in ``live`` and temporary files left by killed builds."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    now = time.time()
    for entry in entries:
        name = entry.name
        gone = name.endswith(SUFFIX) and name[: -len(SUFFIX)] not in live
        with contextlib.suppress(OSError):
            if name.startswith(TMP_PREFIX):
                gone = now - entry.stat().st_mtime > STALE_TMP_S
            if gone:
                os.unlink(entry.path)
                removed += 1
    return removed


def writable(folder: Path) -> str | None:
    """None when matrix files can be written in ``folder`` (made on the first write); else why not."""
    if folder.exists() and not folder.is_dir():
        return f"cannot create {folder}: a file is in the way"
    where = folder if folder.is_dir() else folder.parent
    if not os.access(where, os.W_OK | os.X_OK):
        return f"{where} is not writable"
    return None
