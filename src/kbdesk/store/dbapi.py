"""What the store calls on a database connection, typed once for both engines.

sqlite3's (or pysqlite3's) connection and psycopg's both satisfy :class:`Connection`:
the store core and each engine's repositories write SQL through ``execute`` and read
rows from the cursor that comes back (many rows go through the engine's
:meth:`~kbdesk.store.engine.Engine.executemany`). What only one engine
has stays in that engine's own protocol (:class:`kbdesk.store.sqlite.dbapi.SqliteConnection`:
``in_transaction``, ``executemany``, ``executescript``; :class:`kbdesk.store.postgres.dbapi.PgConnection`:
``transaction()``, ``cursor()``, ``closed``). Rows stay untyped (``Any``): a row is a
tuple whose columns the SQL beside it names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["Connection", "Cursor", "Row"]

Row = Any
"""One row of a result: a tuple (sqlite3, psycopg's default row factory)."""


class Cursor(Protocol):
    """The result of one statement."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Row: ...
    def fetchall(self) -> list[Row]: ...
    def fetchmany(self, size: int = ..., /) -> list[Row]: ...
    def __iter__(self) -> Iterator[Row]: ...


class Connection(Protocol):
    """A connection as the code shared by both engines uses it."""

    def execute(self, sql: str, params: Any = ..., /) -> Cursor: ...
    def close(self) -> None: ...
