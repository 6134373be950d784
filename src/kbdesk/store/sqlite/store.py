"""The SQLite store: one file, WAL, one connection per thread, serialised writes.

Every write runs in ``with store.write() as conn:`` — a ``BEGIN IMMEDIATE``
transaction taken under a process-wide lock, committed whole or rolled back whole.
Reads use the calling thread's own connection.

A database whose file, folder or ``-wal``/``-shm`` files this user cannot write is
opened read-only (SQLite's ``mode=ro``; ``immutable=1`` when its folder is read-only
and no ``-wal`` file holds changes, since SQLite cannot create its ``-shm`` there):
it can be searched and listed, and every write fails with one line saying why.
:func:`quick_check` checks a database file's pages within a bounded time.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbdesk.errors import ReadOnlyDatabaseError, SchemaTooNewError, StoreError
from kbdesk.store.api import CHAT, VECTORS_LOCAL
from kbdesk.store.core.audit import AuditLog
from kbdesk.store.core.chat_surface import ChatSurface
from kbdesk.store.core.records import Records
from kbdesk.store.core.store_surface import StoreSurface
from kbdesk.store.ids import new_id
from kbdesk.store.policy import LocalPolicy
from kbdesk.store.sqlite.bulk import SqliteBulk
from kbdesk.store.sqlite.cache_vectors import SqliteCacheVectors
from kbdesk.store.sqlite.chat import SqliteNoteKeywords, SqliteSettings
from kbdesk.store.sqlite.chunks import SqliteChunks
from kbdesk.store.sqlite.dbapi import SqliteConnection
from kbdesk.store.sqlite.driver import Driver, load_extensions
from kbdesk.store.sqlite.engine import SqliteEngine
from kbdesk.store.sqlite.failures import write_failure
from kbdesk.store.sqlite.lookup import SqliteLookup
from kbdesk.store.sqlite.migrations import MIGRATIONS, current_version, migrate
from kbdesk.store.sqlite.vectors import NumpyIndex, SqliteVecIndex

BUSY_TIMEOUT_MS = 10_000
BUSY_GIVE_UP_S = 120.0
FORCED_READ_ONLY = "it was opened read-only"


def _is_busy(exc: Exception) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


class SqliteStore(StoreSurface, ChatSurface):
    """Connections, transactions and schema for one SQLite database file."""

    kind = "sqlite"
    lookup: SqliteLookup
    capabilities = frozenset({CHAT, VECTORS_LOCAL})
    db = SqliteEngine()
    policy = LocalPolicy()

    def __init__(self, path: Path, driver: Driver, *, read_only: bool | None = None) -> None:
        """Open (creating or upgrading) the database at ``path``.

        ``read_only``: None decides from the file system (see :func:`read_only_reason`),
        True opens read-only whatever the permissions, False never does.
        """
        self.path = Path(path)
        self.driver = driver
        self._local = threading.local()
        self._conns: list[tuple[threading.Thread, SqliteConnection]] = []
        self._conns_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._closed = False
        self.compose_chat(self, SqliteNoteKeywords(), SqliteSettings(self))
        if read_only is None:
            self.read_only_reason = read_only_reason(self.path)
        else:
            self.read_only_reason = FORCED_READ_ONLY if read_only else None
        self._target = str(self.path)  # a read-only open replaces it with a file: URI
        if driver.backend == "sqlite-vec" and not self.read_only:
            self.vectors: SqliteVecIndex | NumpyIndex = SqliteVecIndex(vec_loaded=True)
        else:
            # read-only: sqlite-vec's index may need rebuilding before it answers, which
            # is a write; numpy reads the stored vectors and ranks exactly the same
            self.vectors = NumpyIndex(vec_loaded=driver.vec_loaded)
        self.chunks = SqliteChunks(self, self.vectors)
        self.bulk = SqliteBulk(self, self.chunks)
        records = Records(self, self.chunks, self.vectors, AuditLog(self))
        self.compose_store(
            self, records, SqliteLookup(self, self.vectors), self.chunks, self.bulk, SqliteCacheVectors()
        )
        if self.read_only:
            self._open_read_only()
            return
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

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    def _open_read_only(self) -> None:
        """Open without writing anything: no WAL switch, no migration, no user row."""
        if not self.path.is_file():
            raise StoreError(
                f"there is no database at {self.path}, and it cannot be created there ({self.read_only_reason})"
            )
        self._target = read_only_uri(self.path)
        try:
            self._check_file(self.connection())
        except StoreError as exc:
            if _wal_has_changes(self.path):
                raise StoreError(
                    f"{exc}; its -wal file holds changes SQLite cannot read without its -shm file, "
                    "which cannot be made here: open it once where its folder is writable"
                ) from None
            # SQLite could not create the -shm file (a read-only folder) and no -wal holds
            # changes: the file alone is the whole database
            self._forget_connection()
            self._target = read_only_uri(self.path, immutable=True)
            self._check_file(self.connection())
        conn = self.connection()
        try:
            found = current_version(conn)
        except self.driver.module.DatabaseError as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from None
        if found < len(MIGRATIONS):
            raise ReadOnlyDatabaseError(
                f"{self.path} has schema version {found} and this kbdesk needs {len(MIGRATIONS)}, but it is "
                f"read-only ({self.read_only_reason}): open it once where it can be written, to upgrade it"
            )
        if found > len(MIGRATIONS):
            raise SchemaTooNewError(
                f"database {self.path} has schema version {found}, but this kbdesk knows only "
                f"up to {len(MIGRATIONS)}: it was written by a newer kbdesk; upgrade kbdesk to "
                "open it"
            )
        row = conn.execute("SELECT value FROM settings WHERE key = 'local_user_id'").fetchone()
        self.local_user_id = row[0] if row else ""

    # ── connections ────────────────────────────────────────────────────────────
    def connection(self) -> SqliteConnection:
        """This thread's connection (made on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise StoreError("the store is closed")
        module = self.driver.module
        try:
            conn = module.connect(
                self._target,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
                uri=self._target.startswith("file:"),
            )
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
        except Exception as exc:  # noqa: BLE001  # pragma: no cover - the driver said it loads
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
                with contextlib.suppress(Exception):  # already closed, or unusable: nothing left to release
                    conn.close()
        self._conns = alive

    def _forget_connection(self) -> None:
        """Close this thread's connection; the next :meth:`connection` makes a new one."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            return
        self._local.conn = None
        with self._conns_lock:
            self._conns = [(t, c) for t, c in self._conns if c is not conn]
        conn.close()

    def _check_file(self, conn: SqliteConnection) -> None:
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except self.driver.module.OperationalError as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        except self.driver.module.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a kbdesk database ({exc})") from None

    def close(self) -> None:
        self._closed = True
        vectors = self.__dict__.get("vectors")
        if vectors is not None:  # not yet there when opening failed early
            vectors.close()
        with self._conns_lock:
            conns, self._conns = [c for _, c in self._conns], []
        for conn in conns:
            with contextlib.suppress(Exception):  # a connection of a finished thread; nothing to save
                conn.close()
        self._local = threading.local()

    # ── transactions ───────────────────────────────────────────────────────────
    @contextmanager
    def write(self) -> Iterator[SqliteConnection]:
        """A ``BEGIN IMMEDIATE`` transaction; commit on success, roll back on error.

        Re-entrant in one thread: an inner ``write()`` joins the outer transaction.
        """
        if self.read_only_reason is not None:
            raise ReadOnlyDatabaseError(
                f"{self.path} is read-only ({self.read_only_reason}): it can be searched and listed, not changed"
            )
        conn = self.connection()
        with self._write_lock:
            if conn.in_transaction:
                yield conn
                return
            try:
                self._begin_immediate(conn)
            except self.driver.module.DatabaseError as exc:
                raise write_failure(exc, self.path, self.driver.module) or exc from None
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                # (after a full disk or an I/O error SQLite has rolled back already)
                if conn.in_transaction:
                    with contextlib.suppress(self.driver.module.DatabaseError):  # the error below says why
                        conn.execute("ROLLBACK")
                failure = write_failure(exc, self.path, self.driver.module)
                if failure is not None:
                    raise failure from None
                raise

    def _begin_immediate(self, conn: SqliteConnection) -> None:
        deadline = time.monotonic() + BUSY_GIVE_UP_S
        delay = 0.01
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except self.driver.module.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    if _is_busy(exc):
                        raise StoreError(
                            f"{self.path} stayed locked by another process for {BUSY_GIVE_UP_S:.0f} s; try again later"
                        ) from None
                    raise
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)

    @contextmanager
    def read(self) -> Iterator[SqliteConnection]:
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
            except (OSError, KeyError):  # no login name (a container)
                username = "local"
            wconn.execute("INSERT INTO users(id, username) VALUES (?, ?)", (user_id, username))
            wconn.execute("INSERT INTO settings(key, value) VALUES ('local_user_id', ?)", (user_id,))
            return user_id

    def schema_version(self) -> int:
        row = self.connection().execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def fts5_available(self) -> bool:
        try:
            row = self.connection().execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()
            return bool(row[0])
        except Exception:  # noqa: BLE001 - either driver's error: a build without the function
            return False


# ── read-only databases ──────────────────────────────────────────────────────────
def read_only_reason(path: Path) -> str | None:
    """Why the existing database at ``path`` can only be read by this user, or None.

    SQLite writes the file itself and keeps ``-wal`` and ``-shm`` files beside it, so
    the folder must be writable too. (``os.access`` answers for the real user: root
    may write anything except on a read-only file system, and so it is told.)
    """
    if not path.is_file():
        return None
    if not os.access(path, os.W_OK):
        return "the file is not writable by this user"
    folder = path.parent
    if not os.access(folder, os.W_OK):
        return f"its folder {folder} is not writable by this user, and SQLite keeps its -wal and -shm files there"
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists() and not os.access(side, os.W_OK):
            return f"{side.name} is not writable by this user"
    return None


def read_only_uri(path: Path, *, immutable: bool = False) -> str:
    """A ``file:`` URI that opens ``path`` read-only (``immutable``: without -shm or locks)."""
    return path.absolute().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")


def _wal_has_changes(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except OSError:
        return False


# ── integrity ────────────────────────────────────────────────────────────────────
QUICK_CHECK_SECONDS = 5.0
_PROGRESS_EVERY = 1000  # SQLite VM steps between two looks at the clock


@dataclass(frozen=True)
class IntegrityCheck:
    """The result of :func:`quick_check`: ``status`` is ok, damaged or unfinished."""

    status: str
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "problems": list(self.problems), "seconds": round(self.seconds, 3)}


def quick_check(
    path: Path, driver: Driver, *, seconds: float = QUICK_CHECK_SECONDS, max_problems: int = 20
) -> IntegrityCheck:
    """``PRAGMA quick_check`` on the database file at ``path``, given at most ``seconds``.

    The file is opened read-only on a connection of its own (nothing is written, not
    even to a damaged file). A check that runs out of time is interrupted and reported
    as ``unfinished``; SQLite refusing to read the file at all counts as damage.
    """
    module = driver.module
    started = time.monotonic()
    deadline = started + seconds

    def elapsed() -> float:
        return time.monotonic() - started

    def past_deadline() -> int:
        return 1 if time.monotonic() >= deadline else 0

    conn = None
    try:
        for immutable in (False, True):
            try:
                conn = module.connect(
                    read_only_uri(Path(path), immutable=immutable),
                    uri=True,
                    isolation_level=None,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                )
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                break
            except module.OperationalError:
                if conn is not None:
                    conn.close()
                    conn = None
                if immutable or _wal_has_changes(Path(path)):
                    raise
        assert conn is not None
        with contextlib.suppress(
            Exception
        ):  # pragma: no cover - the driver said it loads; the check reads pages anyway
            load_extensions(conn, driver)  # the schema names vec0 tables
        conn.set_progress_handler(past_deadline, _PROGRESS_EVERY)
        rows = conn.execute(f"PRAGMA quick_check({int(max_problems)})").fetchall()
    except module.OperationalError as exc:
        if "interrupted" in str(exc).lower():
            return IntegrityCheck("unfinished", [f"not finished within {seconds:g} s"], elapsed())
        if "malformed" in str(exc).lower() or "not a database" in str(exc).lower():
            return IntegrityCheck("damaged", [str(exc)], elapsed())
        raise StoreError(f"cannot check {path}: {exc}") from None
    except module.DatabaseError as exc:  # malformed image, not a database, corrupt index
        return IntegrityCheck("damaged", [str(exc)], elapsed())
    finally:
        if conn is not None:
            conn.close()
    problems = [str(r[0]) for r in rows]
    if problems == ["ok"]:
        return IntegrityCheck("ok", [], elapsed())
    return IntegrityCheck("damaged", problems, elapsed())
