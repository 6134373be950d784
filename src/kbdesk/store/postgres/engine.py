"""Postgres's answers to the store core's questions (see :mod:`kbdesk.store.engine`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, ClassVar, overload

from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.postgres.access import is_uuid
from kbdesk.store.postgres.dbapi import as_pg
from kbdesk.store.postgres.values import clean_json, clean_text, clean_text_and_sections, iso


@lru_cache(maxsize=512)
def _native(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresEngine(Engine):
    """``through_functions``: this store is a kbdesk user's, who has no DELETE privilege
    (it would allow LOCK TABLE): rows go through ``kbdesk_delete`` (:mod:`.guards`)."""

    name = "postgres"
    for_update = " FOR UPDATE"
    list_chunk = 5000
    tables: ClassVar[dict[str, str]] = {
        "audit_log": "kbdesk_audit_log",
        "usage_log": "kbdesk_usage_log",
        "embedding_cache": "kbdesk_embedding_cache",
        # chat (store/core/chat.py, personas.py, notes.py); channels keep their name
        **{
            t: f"kbdesk_{t}"
            for t in (
                "personas",
                "persona_knowledge_bases",
                "projects",
                "project_knowledge_bases",
                "chat_messages",
                "chat_tool_calls",
                "notes",
                "note_vectors",
            )
        },
    }

    def __init__(self, *, through_functions: bool = False) -> None:
        self.through_functions = through_functions
        self._keys: dict[str, list[str]] = {}

    def sql(self, sql: str) -> str:
        return _native(sql)

    def delete(self, conn: Connection, table: str, where: str, args: Sequence[Any] = ()) -> int:
        if not self.through_functions:
            return super().delete(conn, table, where, args)
        from kbdesk.store.postgres.guards import DELETE_FUNCTION, primary_key

        key = self._keys.get(table)
        if key is None:
            key = self._keys[table] = primary_key(as_pg(conn), table)
        pairs = ", ".join(f"'{c}', {c}" for c in key)
        sql = (
            f"SELECT {DELETE_FUNCTION}(?, (SELECT coalesce(jsonb_agg(jsonb_build_object({pairs})), '[]'::jsonb) "
            f"FROM {table} WHERE {where}))"
        )
        return int(conn.execute(self.sql(sql), (table, *args)).fetchone()[0])

    def valid_id(self, value: Any) -> bool:
        return is_uuid(value)

    def norm_id(self, value: Any) -> Any:
        return None if value is None else str(value).lower()

    def bool_in(self, value: Any) -> Any:
        return bool(value)

    def id_text(self, column: str) -> str:
        return f"{column}::text"

    @overload
    def text(self, value: str) -> str: ...
    @overload
    def text(self, value: None) -> None: ...
    def text(self, value: str | None) -> str | None:
        return clean_text(value)

    def text_and_sections(self, text: str | None, sections: Sequence[Any] | None) -> tuple[str | None, Any]:
        text, cleaned = clean_text_and_sections(text, [list(s) for s in sections] if sections is not None else None)
        return text, self.json_in(cleaned) if cleaned is not None else None

    def json_in(self, value: Any) -> Any:
        from psycopg.types.json import Jsonb

        return Jsonb(clean_json(value))

    def json_out(self, value: Any) -> Any:
        return value

    def json_text(self, column: str, key: str) -> str:
        return f"{column}->>'{key}'"

    def time_out(self, value: Any) -> str | None:
        return None if value is None else iso(value)

    def at(self, moment: Any) -> Any:
        return moment

    def now(self) -> Any:
        return datetime.now(UTC)

    def in_list(self, expr: str, values: Sequence[Any], *, ids: bool = False) -> tuple[str, list[Any]]:
        if ids:
            return f"{expr} = ANY(?::uuid[])", [[v for v in values if is_uuid(v)]]
        return f"{expr} = ANY(?)", [list(values)]

    def executemany(self, conn: Connection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with as_pg(conn).cursor() as cur:
                cur.executemany(self.sql(sql), rows)

    @contextmanager
    def savepoint(self, conn: Connection) -> Iterator[None]:
        with as_pg(conn).transaction():
            yield
