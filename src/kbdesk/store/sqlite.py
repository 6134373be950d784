"""The SQLite store: one file, WAL, one connection per thread, serialised writes.

Every write runs in ``with store.write() as conn:`` — a ``BEGIN IMMEDIATE``
transaction taken under a process-wide lock, committed whole or rolled back whole.
Reads use the calling thread's own connection.
"""

from __future__ import annotations

import getpass
import json
import random
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kbdesk.errors import StoreError
from kbdesk.store.chat import ChatMixin
from kbdesk.store.documents import DocumentsMixin
from kbdesk.store.driver import Driver, load_extensions
from kbdesk.store.lookup import LookupMixin
from kbdesk.store.migrations import migrate
from kbdesk.store.notes import NotesMixin
from kbdesk.store.records import RecordsMixin
from kbdesk.store.vectors import NumpyIndex, SqliteVecIndex

BUSY_TIMEOUT_MS = 10_000
BUSY_GIVE_UP_S = 120.0


def utcnow() -> str:
    """ISO-8601 UTC with milliseconds, the format of every timestamp column."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def new_id() -> str:
    return str(uuid.uuid4())


def _is_busy(exc: Exception) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


class SqliteStore(RecordsMixin, DocumentsMixin, LookupMixin, ChatMixin, NotesMixin):
    """Connections, transactions and schema for one SQLite database file."""

    kind = "sqlite"

    def __init__(self, path: Path, driver: Driver) -> None:
        self.path = Path(path)
        self.driver = driver
        self._local = threading.local()
        self._conns: list[tuple[threading.Thread, Any]] = []
        self._conns_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._closed = False
        if driver.backend == "sqlite-vec":
            self.vectors: SqliteVecIndex | NumpyIndex = SqliteVecIndex(vec_loaded=True)
        else:
            self.vectors = NumpyIndex(vec_loaded=driver.vec_loaded)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the directory for {self.path}: {exc.strerror}") from None
        conn = self.connection()
        self._check_file(conn)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            migrate(conn, path=str(self.path))
        except self.driver.module.DatabaseError as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from None
        self.local_user_id = self._ensure_local_user()
        if driver.vec_loaded:
            with self.write() as wconn:
                SqliteVecIndex.drop_orphans(wconn)

    # ── connections ────────────────────────────────────────────────────────────
    def connection(self) -> Any:
        """This thread's connection (made on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise StoreError("the store is closed")
        module = self.driver.module
        try:
            conn = module.connect(str(self.path), isolation_level=None, check_same_thread=False,
                                  timeout=BUSY_TIMEOUT_MS / 1000)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            # a big write (an index rebuild, a large import) must not leave a WAL file of
            # its own size behind: trimmed back to 64 MB at the next checkpoint
            conn.execute("PRAGMA journal_size_limit = 67108864")
        except module.DatabaseError as exc:
            raise StoreError(f"cannot open {self.path}: {exc} (is it a kbdesk database?)") from None
        try:
            load_extensions(conn, self.driver)
        except Exception as exc:  # pragma: no cover - the driver said it loads
            raise StoreError(f"sqlite-vec failed to load: {exc}") from None
        self._local.conn = conn
        with self._conns_lock:
            self._prune()
            self._conns.append((threading.current_thread(), conn))
        return conn

    def _prune(self) -> None:
        """Close the connections of threads that have ended (worker pools come and go)."""
        alive = []
        for thread, conn in self._conns:
            if thread.is_alive():
                alive.append((thread, conn))
            else:
                try:
                    conn.close()
                except Exception:  # already closed, or unusable: nothing left to release
                    pass
        self._conns = alive

    def _check_file(self, conn: Any) -> None:
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except self.driver.module.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a kbdesk database ({exc})") from None

    def close(self) -> None:
        self._closed = True
        with self._conns_lock:
            conns, self._conns = [c for _, c in self._conns], []
        for conn in conns:
            try:
                conn.close()
            except Exception:  # a connection of a finished thread; nothing to save
                pass
        self._local = threading.local()

    # ── transactions ───────────────────────────────────────────────────────────
    @contextmanager
    def write(self) -> Iterator[Any]:
        """A ``BEGIN IMMEDIATE`` transaction; commit on success, roll back on error.

        Re-entrant in one thread: an inner ``write()`` joins the outer transaction.
        """
        conn = self.connection()
        with self._write_lock:
            if conn.in_transaction:
                yield conn
                return
            self._begin_immediate(conn)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    def _begin_immediate(self, conn: Any) -> None:
        deadline = time.monotonic() + BUSY_GIVE_UP_S
        delay = 0.01
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except self.driver.module.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    if _is_busy(exc):
                        raise StoreError(f"{self.path} stayed locked by another process for "
                                         f"{BUSY_GIVE_UP_S:.0f} s; try again later") from None
                    raise
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)

    @contextmanager
    def read(self) -> Iterator[Any]:
        """A read transaction (one consistent snapshot), or the current transaction."""
        conn = self.connection()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # ── small shared helpers ───────────────────────────────────────────────────
    def _ensure_local_user(self) -> str:
        conn = self.connection()
        row = conn.execute("SELECT value FROM settings WHERE key = 'local_user_id'").fetchone()
        if row:
            return row[0]
        with self.write() as wconn:
            row = wconn.execute("SELECT value FROM settings WHERE key = 'local_user_id'").fetchone()
            if row:
                return row[0]
            user_id = new_id()
            try:
                username = getpass.getuser()
            except Exception:
                username = "local"
            wconn.execute("INSERT INTO users(id, username) VALUES (?, ?)", (user_id, username))
            wconn.execute("INSERT INTO settings(key, value) VALUES ('local_user_id', ?)", (user_id,))
            return user_id

    def audit(self, conn: Any, action: str, kb_id: str | None, target: str | None = None,
              details: dict[str, Any] | None = None) -> None:
        """Record a KB operation, inside the caller's write transaction."""
        conn.execute(
            "INSERT INTO audit_log(created_at, user_id, action, kb_id, target, details) VALUES (?, ?, ?, ?, ?, ?)",
            (utcnow(), self.local_user_id, action, kb_id, target, json.dumps(details or {})),
        )

    def schema_version(self) -> int:
        row = self.connection().execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def fts5_available(self) -> bool:
        try:
            row = self.connection().execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()
            return bool(row[0])
        except Exception:
            return False
