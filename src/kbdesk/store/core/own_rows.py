"""Rows one user owns in the chat tables (personas, projects, notes, conversations), for
both engines: found by id, name or id prefix, checked for a free name, changed with
their KB bindings, deleted. The chat repositories (:mod:`.personas`, :mod:`.chat`,
:mod:`.notes`) are each given one :class:`OwnRows`.

Each row belongs to one user (``owner_id``): a local file has one user; on a team
server row security shows a login only its own rows, and the store asks for its own
rows too (the tables' owner, which row security does not restrict, acts as its
config's identity). Names are unique per user, ignoring case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError
from kbdesk.store.core.compose import Base
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.ids import ID_PREFIX

__all__ = ["OwnRows"]


class OwnRows:
    """This user's rows of one chat table or another (``{table}`` names: :meth:`Engine.table`)."""

    def __init__(self, base: Base) -> None:
        self.base = base

    @property
    def db(self) -> Engine:
        return self.base.db

    # ── rows of this user, found by id, name or id prefix ──────────────────────
    def row(self, row: Sequence[Any], times: tuple[int, ...]) -> list[Any]:
        """A row with its timestamps (at ``times``) as text."""
        values = list(row)
        for i in times:
            values[i] = self.db.time_out(values[i])
        return values

    def find(self, table: str, columns: str, ref: str, what: str, name_col: str | None = None) -> list[Any]:
        """The row of ``{table}`` this user means by ``ref``: its id, its ``name_col``
        (any case; one only), or a unique id prefix of 4+ characters."""
        conn, db = self.base.connection(), self.db
        ref = (ref or "").strip()
        mine, uid = "owner_id = ?", self.base.local_user_id
        rows: list[Any] = []
        if db.valid_id(ref):
            rows = conn.execute(
                db.table_sql(f"SELECT {columns} FROM {{{table}}} WHERE id = ? AND {mine}"), (ref, uid)
            ).fetchall()
        if not rows and ref and name_col:
            rows = conn.execute(
                db.table_sql(
                    f"SELECT {columns} FROM {{{table}}} WHERE lower({name_col}) = lower(?) AND {mine} LIMIT 2"
                ),
                (ref, uid),
            ).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"more than one {what} is called '{ref}'; use its id")
        if not rows and ID_PREFIX.match(ref):
            rows = conn.execute(
                db.table_sql(f"SELECT {columns} FROM {{{table}}} WHERE {db.id_text('id')} LIKE ? AND {mine} LIMIT 2"),
                (ref.lower() + "%", uid),
            ).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"'{ref}' matches more than one {what} id; give more of it")
        if not rows:
            raise NotFoundError(f"no {what} '{ref}'")
        return list(rows[0])

    def ids_by_name(self, table: str) -> list[str]:
        return [
            r[0]
            for r in self.base.connection().execute(
                self.db.table_sql(f"SELECT id FROM {{{table}}} WHERE owner_id = ? ORDER BY lower(name), id"),
                (self.base.local_user_id,),
            )
        ]

    def check_free(self, conn: Connection, table: str, what: str, name: str, row_id: str | None = None) -> None:
        for (other,) in conn.execute(
            self.db.table_sql(f"SELECT id FROM {{{table}}} WHERE lower(name) = lower(?) AND owner_id = ?"),
            (name, self.base.local_user_id),
        ).fetchall():
            if str(other) != str(row_id):
                raise ConflictError(f"a {what} named '{name}' already exists")

    def delete(self, table: str, row: Any) -> Any:
        """Delete ``row`` (found for this user) from ``{table}``; returns it."""
        with self.base.write() as conn:
            self.db.delete(conn, self.db.table(table), "id = ?", (row.id,))
        return row

    def bound(self, owner: str, owner_id: str, extra: str = "") -> list[Any]:
        """Rows (kb_id[, extra]) of ``{owner}_knowledge_bases``, by KB name."""
        return [
            tuple(r)
            for r in self.base.connection().execute(
                self.db.table_sql(
                    f"SELECT b.kb_id{extra} FROM {{{owner}_knowledge_bases}} b "
                    "JOIN knowledge_bases k ON k.id = b.kb_id "
                    f"WHERE b.{owner}_id = ? ORDER BY lower(k.name), k.id"
                ),
                (owner_id,),
            )
        ]

    def change(
        self,
        table: str,
        what: str,
        row_id: str,
        changes: dict[str, Any],
        bindings: Sequence[tuple[Any, ...]] | None = None,
        extra: str = "",
    ) -> None:
        """Apply ``changes`` to this user's row of ``{table}`` (a new name checked, ``updated_at``
        moved) and, when ``bindings`` are given, make them its KB bindings: (kb_id[, ``extra``])."""
        with self.base.write() as conn:
            if "name" in changes:
                self.check_free(conn, table, what, changes["name"], row_id)
            sets = "".join(f"{c} = ?, " for c in changes)
            conn.execute(
                self.db.table_sql(f"UPDATE {{{table}}} SET {sets}updated_at = ? WHERE id = ?"),
                (*changes.values(), self.db.now(), row_id),
            )
            if bindings is not None:
                links = self.db.table(f"{what}_knowledge_bases")
                self.db.delete(conn, links, f"{what}_id = ?", (row_id,))
                marks = ", ".join("?" * (2 + extra.count(",")))
                self.db.executemany(
                    conn,
                    f"INSERT INTO {links}({what}_id, kb_id{extra}) VALUES ({marks})",
                    [(row_id, *b) for b in bindings],
                )
