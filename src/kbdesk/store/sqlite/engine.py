"""The SQLite engine object: the plain-SQL answers of :class:`kbdesk.store.engine.Engine`
(``?`` placeholders, JSON as text, ISO-8601 times, ids as any text) under SQLite's name.
Writers are already serialised by SQLite's write lock, so a row about to change needs no
``FOR UPDATE``; a list parameter carries at most 500 values (SQLite's variable limit is
higher, but statements stay small)."""

from __future__ import annotations

from kbdesk.store.engine import Engine


class SqliteEngine(Engine):
    name = "sqlite"
