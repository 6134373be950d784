"""The small engine object: what differs between SQLite and Postgres below one store core.

The store core (:mod:`kbdesk.store.core`) writes its SQL once, with ``?`` placeholders,
and asks its engine (``store.db``) for the few things the two databases do differently:
the placeholder style, how a list becomes a parameter, JSON in and out, timestamps,
which ids can exist, text the database refuses, row locks, savepoints, and the names
of kbdesk's own side tables. Everything an engine stores differently (chunks and their
keyword rows, vectors, whole documents moving in and out, notes' ranking, settings)
stays in the engine's own objects, each behind a protocol of its own
(:class:`kbdesk.store.core.parts.ChunkStorage`, :class:`~kbdesk.store.core.parts.BulkStorage`,
:class:`kbdesk.store.core.cache.CacheVectors`, :class:`kbdesk.store.core.notes.NoteKeywords`,
:class:`kbdesk.store.chat_api.Settings`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, overload

from kbdesk.store.dbapi import Connection
from kbdesk.store.ids import iso, utcnow

__all__ = ["Engine"]


class Engine(ABC):
    """What an engine answers, with the answers of plain SQL (``?`` placeholders, JSON as
    text, ISO-8601 times): :class:`kbdesk.store.sqlite.engine.SqliteEngine` keeps them,
    :class:`kbdesk.store.postgres.engine.PostgresEngine` gives its own."""

    name: str
    for_update = ""
    """Appended to a SELECT that reads a row it is about to change (SQLite's write lock
    already serialises writers)."""
    list_chunk = 500
    """How many values one list parameter carries at most."""
    tables: ClassVar[dict[str, str]] = {}
    """kbdesk's own tables under another name on this engine (audit_log, usage_log, …)."""

    def sql(self, sql: str) -> str:
        """``sql`` (``?`` placeholders) in this engine's placeholder style."""
        return sql

    def table(self, name: str) -> str:
        return self.tables.get(name, name)

    def table_sql(self, sql: str) -> str:
        """:meth:`sql` of ``sql`` whose ``{name}`` marks are kbdesk's tables (:meth:`table`):
        ``"SELECT id FROM {notes}"`` reads ``notes`` on SQLite, ``kbdesk_notes`` on Postgres."""
        return self.sql(sql.format_map(_TableNames(self)))

    def valid_id(self, value: Any) -> bool:
        """Whether ``value`` can be an id at all (Postgres ids are UUIDs)."""
        return value is not None

    def norm_id(self, value: Any) -> Any:
        """An id as this engine stores it."""
        return value

    def bool_in(self, value: Any) -> Any:
        return int(bool(value))

    def id_text(self, column: str) -> str:
        """``column`` as text, for prefix matching."""
        return column

    @overload
    def text(self, value: str) -> str: ...
    @overload
    def text(self, value: None) -> None: ...
    def text(self, value: str | None) -> str | None:
        """Text as this database accepts it."""
        return value

    def text_and_sections(self, text: str | None, sections: Sequence[Any] | None) -> tuple[str | None, Any]:
        """Extracted text and its ``(start, end, metadata)`` sections, ready to store."""
        return text, json.dumps([list(s) for s in sections]) if sections is not None else None

    def json_in(self, value: Any) -> Any:
        return json.dumps(value)

    def json_out(self, value: Any) -> Any:
        return json.loads(value) if isinstance(value, (str, bytes)) else value

    def json_text(self, column: str, key: str) -> str:
        """SQL for the text of ``key`` in the JSON ``column``."""
        return f"json_extract({column}, '$.{key}')"

    def time_out(self, value: Any) -> str | None:
        return value

    def at(self, moment: Any) -> Any:
        """A timestamp (aware datetime) as a parameter value."""
        return iso(moment)

    def now(self) -> Any:
        """The current time as a parameter value."""
        return utcnow()

    def in_list(self, expr: str, values: Sequence[Any], *, ids: bool = False) -> tuple[str, list[Any]]:
        """``expr IN (…)`` for ``values`` (at most :attr:`list_chunk` of them); ``ids``:
        they are ids (which Postgres keeps as UUIDs)."""
        return f"{expr} IN ({','.join('?' * len(values))})", list(values)

    @abstractmethod
    def executemany(self, conn: Connection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` (``?`` placeholders) once per row, as one statement batch."""

    def delete(self, conn: Connection, table: str, where: str, args: Sequence[Any] = ()) -> int:
        """``DELETE FROM table WHERE where`` (``?`` placeholders); the number of rows gone.
        (A kbdesk user on a team server deletes through the database's own function.)"""
        return int(conn.execute(self.sql(f"DELETE FROM {table} WHERE {where}"), tuple(args)).rowcount)

    @abstractmethod
    def savepoint(self, conn: Connection) -> AbstractContextManager[None]:
        """A nested transaction: what fails inside it is undone alone."""


class _TableNames(dict[str, str]):
    """``{name}`` → the engine's name for that table."""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    def __missing__(self, key: str) -> str:
        return self.engine.table(key)
