"""Waiting on a team server: bounded, and said plainly when it gives up.

Every connection kbdesk opens runs with a lock timeout and a statement timeout
(:func:`connect_options`), so no other login — hostile or merely forgetful, with a
transaction left open in psql — can make kbdesk hang. When a wait gives up, the error
names what held it (:func:`held_by`): the login, its process id and the lock, read
from ``pg_locks`` (visible to every login) on a short connection of its own.

Locks users could hold against everyone are not used at all:

- the **migration lock** is ``LOCK TABLE kbdesk_migrations IN EXCLUSIVE MODE``, which
  needs UPDATE, DELETE or TRUNCATE on that table: only its owner has them (users may
  only read it, and the ACCESS SHARE lock reading takes does not conflict). An advisory
  lock, which any login of the database may take, would let anyone stall migrations;
- the **name lock** that serialises two creations of one KB name is an advisory lock
  per name, tried for at most :data:`NAME_LOCK_WAIT` seconds: someone holding the lock
  of a name delays a creation by that much, never more (the database's own name rule,
  :mod:`.guards`, still applies).

Schema changes and ``pg setup`` (long statements, the owner waiting for users' open
transactions to end) run under :func:`maintenance`: no statement timeout, a longer
lock timeout.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from kbdesk.errors import StoreError

LOCK_TIMEOUT_MS = 5_000
"""How long one statement waits for a lock. kbdesk's own write transactions hold the
rows they change for well under a second (a batch of chunks, a claim); a wait of 5 s
is somebody else's open transaction, and is reported instead of waited out."""
STATEMENT_TIMEOUT_MS = 120_000
"""The longest one statement runs: a search or a batch write takes milliseconds to a
few seconds on the KBs measured in docs/BENCHMARKS-postgres.md; two minutes is a
runaway, not work."""
MAINTENANCE_LOCK_TIMEOUT_MS = 30_000  # schema changes wait longer for users' transactions to end
NAME_LOCK_WAIT = 1.0  # seconds a KB creation waits for the lock of its name
NAME_LOCK_POLL = 0.05

STRONG_FIRST = (
    "AccessExclusiveLock",
    "ExclusiveLock",
    "ShareRowExclusiveLock",
    "ShareLock",
    "ShareUpdateExclusiveLock",
    "RowExclusiveLock",
    "RowShareLock",
    "AccessShareLock",
)


def connect_options() -> str:
    """libpq ``options`` setting kbdesk's timeouts for a new session."""
    return f"-c lock_timeout={LOCK_TIMEOUT_MS} -c statement_timeout={STATEMENT_TIMEOUT_MS}"


def connect(uri: str, label: str, **kwargs: Any) -> Any:
    """A kbdesk connection (autocommit): its timeouts set (beside any ``options`` the URI
    carries), and its timeouts reported as :class:`LockWaitTimeout` /
    :class:`StatementTimeout` naming what held the lock."""
    from psycopg.conninfo import conninfo_to_dict

    given = str(conninfo_to_dict(uri).get("options") or "")
    conn = connection_class().connect(
        uri,
        autocommit=True,
        application_name="kbdesk",
        connect_timeout=15,
        options=f"{given} {connect_options()}".strip(),
        cursor_factory=_classes()[1],
        **kwargs,
    )
    conn.kbdesk_uri = uri
    conn.kbdesk_label = label
    return conn


def connection_class() -> Any:
    """psycopg's Connection with room for kbdesk's notes (built lazily: importing this
    module needs no psycopg)."""
    return _classes()[0]


_CLASSES: list[Any] = []


def _classes() -> tuple[Any, Any]:
    if _CLASSES:
        return _CLASSES[0], _CLASSES[1]
    import psycopg

    class KbdeskConnection(psycopg.Connection):
        """A connection that knows its URI (to diagnose a wait) and label (to say where)."""

        kbdesk_uri: str | None = None
        kbdesk_label: str = "the database"
        kbdesk_lock_timeout: int | None = None
        kbdesk_maintenance: int = 0

    class GuardedCursor(psycopg.Cursor):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            try:
                return super().execute(query, params, **kwargs)
            except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled) as exc:
                raise timed_out(self.connection, exc) from None

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> Any:
            try:
                return super().executemany(query, params_seq, **kwargs)
            except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled) as exc:
                raise timed_out(self.connection, exc) from None

    _CLASSES.extend([KbdeskConnection, GuardedCursor])
    return KbdeskConnection, GuardedCursor


class LockWaitTimeout(StoreError):
    """A statement gave up waiting for a lock another session holds."""


class StatementTimeout(StoreError):
    """A statement ran past kbdesk's statement timeout."""


def timed_out(conn: Any, exc: BaseException) -> StoreError:
    """The error for a lock or statement timeout on ``conn``, with what held the lock."""
    import psycopg

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    label = getattr(conn, "kbdesk_label", "the database")
    if isinstance(exc, psycopg.errors.QueryCanceled) and "statement timeout" not in first:
        return StoreError(f"{label}: {first}")  # cancelled on purpose (Ctrl-C): not a timeout
    holders = held_by(getattr(conn, "kbdesk_uri", None), _pid(conn))
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return LockWaitTimeout(
            f"{label}: gave up after waiting {_seconds(conn, 'lock_timeout', LOCK_TIMEOUT_MS)} for a lock"
            + (f" held by {holders}" if holders else " another session holds")
            + ": that session keeps it until it ends its transaction (an administrator can end it with "
            "SELECT pg_terminate_backend(PID)); try again then"
        )
    return StatementTimeout(
        f"{label}: a statement ran longer than {_seconds(conn, 'statement_timeout', STATEMENT_TIMEOUT_MS)} and "
        "was stopped" + (f" (locks were held by {holders})" if holders else "")
    )


def _pid(conn: Any) -> int | None:
    try:
        return int(conn.info.backend_pid)
    except Exception:  # noqa: BLE001 - a broken connection has no process to name
        return None


def _seconds(conn: Any, setting: str, default_ms: int) -> str:
    ms = getattr(conn, f"kbdesk_{setting}", None) or default_ms
    return f"{ms / 1000:g} s"


def held_by(uri: str | None, own_pid: int | None) -> str:
    """Who holds locks on kbdesk's tables right now, strongest first, as one phrase:
    "the login 'mallory' (pid 123, AccessExclusiveLock on kb_chunks)". Empty when it
    cannot be told (no URI, the server unreachable)."""
    if not uri:
        return ""
    import psycopg

    try:
        with psycopg.connect(uri, autocommit=True, connect_timeout=3, options="-c statement_timeout=3000") as conn:
            rows = conn.execute(
                "SELECT l.pid, coalesce(r.rolname::text, '?'), l.mode, coalesce(c.relname::text, l.locktype) "
                "FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation "
                "LEFT JOIN pg_stat_activity a ON a.pid = l.pid LEFT JOIN pg_roles r ON r.oid = a.usesysid "
                "WHERE l.granted AND l.pid <> pg_backend_pid() AND l.pid IS DISTINCT FROM %s "
                "AND ((l.locktype = 'relation' AND l.database = (SELECT oid FROM pg_database "
                "WHERE datname = current_database()) AND c.relnamespace = to_regnamespace(current_schema()) "
                "AND c.relkind IN ('r', 'p')) OR (l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock') "
                "OR (l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database "
                "WHERE datname = current_database())))",
                (own_pid,),
            ).fetchall()
    except Exception:  # noqa: BLE001 - the diagnosis is a courtesy: never a second failure
        return ""
    if not rows:
        return ""
    rank = {mode: i for i, mode in enumerate(STRONG_FIRST)}
    rows.sort(key=lambda r: (r[3] == "transactionid", rank.get(r[2], 99), r[0]))
    parts: list[str] = []
    seen: set[int] = set()
    for pid, login, mode, what in rows:
        if pid in seen:
            continue
        seen.add(pid)
        held = {"transactionid": "an open transaction", "advisory": "an advisory lock"}.get(what, f"{mode} on {what}")
        parts.append(f"the login '{login}' (pid {pid}, {held})")
        if len(parts) == 3:
            break
    return ", ".join(parts)


@contextmanager
def maintenance(conn: Any, lock_timeout_ms: int | None = None) -> Iterator[None]:
    """Schema changes on ``conn`` (autocommit): no statement timeout, a longer lock wait
    (re-entrant: the outermost one restores kbdesk's timeouts)."""
    depth = getattr(conn, "kbdesk_maintenance", 0)
    if depth:
        conn.kbdesk_maintenance = depth + 1
        try:
            yield
        finally:
            conn.kbdesk_maintenance = depth
        return
    lock_timeout_ms = MAINTENANCE_LOCK_TIMEOUT_MS if lock_timeout_ms is None else lock_timeout_ms
    conn.execute(f"SET statement_timeout = 0; SET lock_timeout = {int(lock_timeout_ms)}")
    _remember(conn, lock_timeout_ms, 1)
    try:
        yield
    finally:
        _remember(conn, None, 0)
        if not (conn.closed or conn.broken):
            with suppress(Exception):  # the caller's error is the one to report
                conn.execute("RESET statement_timeout; RESET lock_timeout")


def _remember(conn: Any, lock_timeout_ms: int | None, depth: int) -> None:
    try:
        conn.kbdesk_lock_timeout = lock_timeout_ms
        conn.kbdesk_maintenance = depth
    except AttributeError:  # a plain psycopg connection (no room for notes): messages say the default
        pass


def migration_lock(conn: Any) -> None:
    """Inside a transaction: the lock only the owner of kbdesk's tables can take."""
    conn.execute("LOCK TABLE kbdesk_migrations IN EXCLUSIVE MODE")


def name_key(name: str) -> int:
    """The advisory lock key of a KB name (any case), a signed 64-bit integer."""
    digest = hashlib.sha256(b"kbdesk-kb-name\0" + name.casefold().encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def lock_name(conn: Any, name: str, wait: float = NAME_LOCK_WAIT) -> bool:
    """Inside a transaction: serialise checks of ``name`` with the insert they guard.
    Gives up after ``wait`` seconds (someone holds that name's lock) and returns False:
    the creation goes on without it."""
    key = name_key(name)
    deadline = time.monotonic() + wait
    while True:
        if conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()[0]:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(NAME_LOCK_POLL)
