"""The SQLite engine object: the plain-SQL answers of :class:`kbdesk.store.engine.Engine`
(``?`` placeholders, JSON as text, ISO-8601 times, ids as any text) under SQLite's name.
Writers are already serialised by SQLite's write lock, so a row about to change needs no
``FOR UPDATE``; a list parameter carries at most 500 values (SQLite's variable limit is
higher, but statements stay small)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.sqlite.dbapi import as_sqlite
from kbdesk.store.sqlite.failures import TransactionLost


class SqliteEngine(Engine):
    name = "sqlite"

    def executemany(self, conn: Connection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            as_sqlite(conn).executemany(self.sql(sql), rows)

    @contextmanager
    def savepoint(self, conn: Connection) -> Iterator[None]:
        """A nested transaction: what fails inside it is undone alone — unless SQLite
        undid the whole transaction (a full disk, an I/O error): that is raised as
        :class:`TransactionLost`, which no caller takes for one step's failure."""
        conn.execute("SAVEPOINT kbdesk_step")
        try:
            yield
        except BaseException as exc:
            if not as_sqlite(conn).in_transaction:
                raise TransactionLost(f"the database undid the transaction: {exc}") from exc
            conn.execute("ROLLBACK TO kbdesk_step")
            conn.execute("RELEASE kbdesk_step")
            raise
        conn.execute("RELEASE kbdesk_step")
