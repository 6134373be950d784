"""What the Postgres engine calls on a psycopg connection beyond the shared
:class:`kbdesk.store.dbapi.Connection`: explicit transactions, a cursor for bulk writes and
binary COPY, whether the connection is still usable. (Importing this module imports no psycopg.)"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, cast

from kbdesk.store.dbapi import Connection, Cursor

if TYPE_CHECKING:
    from psycopg.sql import SQL, Composed

__all__ = ["PgConnection", "PgCursor", "as_pg"]


class PgCursor(Cursor, AbstractContextManager["PgCursor"], Protocol):
    """A psycopg cursor as the Postgres engine uses it (many rows, binary COPY)."""

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> object: ...
    def copy(self, statement: str, /) -> AbstractContextManager[Any]: ...


class PgConnection(Connection, Protocol):
    """A psycopg connection as the Postgres engine uses it (autocommit; explicit
    transactions; one cursor per bulk write)."""

    def execute(self, sql: str | SQL | Composed, params: Any = ..., /, *, binary: bool = ...) -> Cursor: ...
    @property
    def closed(self) -> bool: ...
    @property
    def broken(self) -> bool: ...
    def transaction(self) -> AbstractContextManager[Any]: ...
    def cursor(self) -> PgCursor: ...


def as_pg(conn: Connection) -> PgConnection:
    """``conn`` as the psycopg connection it is (every connection of a Postgres store is
    one: the store core hands them on typed as the shared :class:`Connection`)."""
    return cast(PgConnection, conn)
