"""Which matrix file a store's searches read: opened, or rebuilt, when a KB's vectors move.

:class:`MatrixFiles` keeps the mapped :class:`~kbdesk.store.sqlite.matrix_file.Matrix` of each KB
a store has searched, checks the KB's vector version on every search (one indexed read)
and, when it moved, opens the KB's file again if it is current or writes it anew where it
may (never for a read-only database). It answers None whenever no current file can be
had; the caller then searches another way.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from kbdesk.store.api import Transactions
from kbdesk.store.sqlite.dbapi import SqliteConnection
from kbdesk.store.sqlite.matrix_file import (
    Matrix,
    file_for,
    folder_for,
    open_matrix,
    remove,
    remove_orphans,
    stamp_of,
    writable,
    write_matrix,
)


def database_file(conn: SqliteConnection) -> Path | None:
    """The file of ``conn``'s main database (None for an in-memory one)."""
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return Path(file) if file else None
    return None


RETRY_AFTER_S = 60.0  # after a failed write (disk full, permissions), try again this much later


class MatrixFiles:
    """The mapped matrices of one store's KBs: reopened, or rebuilt where the folder can be
    written, when a KB's vector version moves. ``get`` returns None when no current file can
    be had (the caller falls back to another exact path)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._cache: dict[str, Matrix] = {}
        self._none_at: dict[str, tuple[int, int, str]] = {}  # kb -> (version, dims, build) that had no file
        self._background: set[str] = set()
        self._closing = threading.Event()
        self.failure: str | None = None  # why the last write failed
        self._failed_at = 0.0

    @staticmethod
    def folder(store: Transactions) -> Path | None:
        path = getattr(store, "path", None)
        if path is None or str(path) in ("", ":memory:"):
            return None
        return folder_for(Path(path))

    def cannot_write(self, store: Transactions) -> str | None:
        """Why this store's files cannot be (re)built now, or None."""
        if getattr(store, "read_only", False):
            return f"the database is read-only ({getattr(store, 'read_only_reason', None)})"
        folder = self.folder(store)
        if folder is None:
            return "the database is not a file"
        if self.failure and time.monotonic() - self._failed_at < RETRY_AFTER_S:
            return self.failure
        return writable(folder)

    def cached(self, kb_id: str) -> Matrix | None:
        with self._lock:
            return self._cache.get(kb_id)

    def get(self, store: Transactions, kb_id: str, dims: int, *, build: str = "now") -> Matrix | None:
        """The KB's current matrix. ``build``: "now" writes a missing or stale file before
        answering; "background" starts writing it in a thread and answers None meanwhile;
        "never" only opens a file that is already current."""
        if not self.enabled:
            return None
        folder = self.folder(store)
        if folder is None:
            return None
        row = store.connection().execute("SELECT version FROM kb_vector_state WHERE kb_id = ?", (kb_id,)).fetchone()
        if row is None:
            return None
        hit = self.cached(kb_id)
        if hit is not None and hit.version == row[0] and hit.vectors.shape[1] == dims:
            return hit
        with self._lock:
            if self._none_at.get(kb_id) == (row[0], dims, build):
                return None  # nothing to be had at this version: found out at the last search
        # a search that may fall back does not wait for a build in another thread
        if not self._build_lock.acquire(blocking=build == "now"):
            return None
        try:
            with store.read() as conn:
                stamp = stamp_of(conn, kb_id)
            if stamp is None:
                return None
            matrix = open_matrix(file_for(folder, kb_id), kb_id, dims, stamp)
            if matrix is None and build != "never" and self.cannot_write(store) is None:
                if build == "background":
                    self._start_background(store, folder, kb_id, dims)
                else:
                    matrix = self._build(store, folder, kb_id, dims)
            with self._lock:
                if matrix is None:
                    self._cache.pop(kb_id, None)
                    if build == "never" or (build == "now" and self.failure is None):
                        self._none_at[kb_id] = (stamp.version, dims, build)
                else:
                    self._cache[kb_id] = matrix
                    self._none_at.pop(kb_id, None)
            return matrix
        finally:
            self._build_lock.release()

    def _build(self, store: Transactions, folder: Path, kb_id: str, dims: int, *, cancel: Any = None) -> Matrix | None:
        try:
            with store.read() as conn:
                stamp = write_matrix(conn, folder, kb_id, dims, cancel=cancel)
        except OSError as exc:
            self.failure = f"cannot write {folder}: {exc.strerror or exc}"
            self._failed_at = time.monotonic()
            return None
        self.failure = None
        return None if stamp is None else open_matrix(file_for(folder, kb_id), kb_id, dims, stamp)

    def _start_background(self, store: Transactions, folder: Path, kb_id: str, dims: int) -> None:
        with self._lock:
            if kb_id in self._background or self._closing.is_set():
                return
            self._background.add(kb_id)

        def run() -> None:
            try:
                with self._build_lock:
                    if self._closing.is_set():
                        return
                    matrix = self._build(store, folder, kb_id, dims, cancel=self._closing.is_set)
                    if matrix is not None:
                        with self._lock:
                            self._cache[kb_id] = matrix
            except Exception:  # noqa: BLE001 - the store closed under it: the next search tries again
                pass
            finally:
                with self._lock:
                    self._background.discard(kb_id)

        threading.Thread(target=run, name=f"kbdesk-matrix-{kb_id[:8]}", daemon=True).start()

    def close(self, timeout: float = 30.0) -> None:
        """Stop background builds (each stops between two batches of rows and removes its
        temporary file) and wait for them: the store closes its connections next, and a
        connection closed under a running read can crash the SQLite driver."""
        self._closing.set()
        self.wait(timeout)

    def wait(self, timeout: float = 600.0) -> None:
        """Wait for background builds (benchmarks and tests)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if not self._background:
                    return
            time.sleep(0.02)

    def forget(self, kb_id: str) -> None:
        with self._lock:
            self._cache.pop(kb_id, None)
            self._none_at.pop(kb_id, None)

    def drop(self, conn: SqliteConnection, kb_id: str) -> None:
        """Forget the KB and delete its file (inside the transaction deleting the KB)."""
        self.forget(kb_id)
        db = database_file(conn)
        if db is not None:
            remove(folder_for(db), kb_id)

    @staticmethod
    def drop_orphans(conn: SqliteConnection) -> int:
        db = database_file(conn)
        if db is None or not folder_for(db).is_dir():
            return 0
        return remove_orphans(folder_for(db), {r[0] for r in conn.execute("SELECT id FROM knowledge_bases")})
