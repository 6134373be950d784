"""What the SQLite engine calls on a sqlite3 (or pysqlite3) connection beyond the shared
:class:`kbdesk.store.dbapi.Connection`: whether a transaction is open, many rows at once,
scripts, extensions, a progress handler."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from kbdesk.store.dbapi import Connection

__all__ = ["SqliteConnection", "as_sqlite"]


class SqliteConnection(Connection, Protocol):
    """A sqlite3 (or pysqlite3) connection as the SQLite engine uses it."""

    @property
    def in_transaction(self) -> bool: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> object: ...
    def executescript(self, sql: str, /) -> object: ...
    def enable_load_extension(self, enabled: bool, /) -> None: ...
    def set_progress_handler(self, handler: Callable[[], int | None] | None, /, n: int) -> None: ...


def as_sqlite(conn: Connection) -> SqliteConnection:
    """``conn`` as the SQLite connection it is (every connection of a SQLite store is
    one: the store core hands them on typed as the shared :class:`Connection`)."""
    return cast(SqliteConnection, conn)
