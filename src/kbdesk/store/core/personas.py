"""Personas and projects with their KB bindings, for both engines.

Each row belongs to one user (``owner_id``): a local file has one user; on a team
server row security shows a login only its own rows, and the store asks for its own
rows too (the tables' owner, which row security does not restrict, acts as its
config's identity). Names are unique per user, ignoring case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError
from kbdesk.store.core.parts import StoreParts
from kbdesk.store.ids import ID_PREFIX, check_name, new_id
from kbdesk.store.personas import UNSET, Persona, Project, check_max_tokens, check_retrieval, filters_in, filters_out

_PERSONA = "id, name, system_prompt, provider, model, created_at, updated_at, retrieval, max_tokens, filters"
_PROJECT = "id, name, description, created_at, updated_at"


class PersonasCore(StoreParts):
    """Needs ``self.db``, ``write()``, ``connection()`` and ``local_user_id``."""

    # ── rows of this user, found by id, name or id prefix ──────────────────────
    def _row(self, row: Sequence[Any], times: tuple[int, ...]) -> list[Any]:
        """A row with its timestamps (at ``times``) as text."""
        values = list(row)
        for i in times:
            values[i] = self.db.time_out(values[i])
        return values

    def _find_row(self, table: str, columns: str, ref: str, what: str, name_col: str | None = None) -> list[Any]:
        """The row of ``{table}`` this user means by ``ref``: its id, its ``name_col``
        (any case; one only), or a unique id prefix of 4+ characters."""
        conn, db = self.connection(), self.db
        ref = (ref or "").strip()
        mine, uid = "owner_id = ?", self.local_user_id
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

    def _ids_by_name(self, table: str) -> list[str]:
        return [
            r[0]
            for r in self.connection().execute(
                self.db.table_sql(f"SELECT id FROM {{{table}}} WHERE owner_id = ? ORDER BY lower(name), id"),
                (self.local_user_id,),
            )
        ]

    def _check_free(self, conn: Any, table: str, what: str, name: str, row_id: str | None = None) -> None:
        for (other,) in conn.execute(
            self.db.table_sql(f"SELECT id FROM {{{table}}} WHERE lower(name) = lower(?) AND owner_id = ?"),
            (name, self.local_user_id),
        ).fetchall():
            if str(other) != str(row_id):
                raise ConflictError(f"a {what} named '{name}' already exists")

    def _delete_row(self, table: str, row: Any) -> Any:
        """Delete ``row`` (found for this user) from ``{table}``; returns it."""
        with self.write() as conn:
            self.db.delete(conn, self.db.table(table), "id = ?", (row.id,))
        return row

    def _bound(self, owner: str, owner_id: str, extra: str = "") -> list[Any]:
        """Rows (kb_id[, extra]) of ``{owner}_knowledge_bases``, by KB name."""
        return [
            tuple(r)
            for r in self.connection().execute(
                self.db.table_sql(
                    f"SELECT b.kb_id{extra} FROM {{{owner}_knowledge_bases}} b "
                    "JOIN knowledge_bases k ON k.id = b.kb_id "
                    f"WHERE b.{owner}_id = ? ORDER BY lower(k.name), k.id"
                ),
                (owner_id,),
            )
        ]

    def _change(
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
        with self.write() as conn:
            if "name" in changes:
                self._check_free(conn, table, what, changes["name"], row_id)
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

    # ── personas ───────────────────────────────────────────────────────────────
    def create_persona(
        self,
        name: str,
        system_prompt: str = "",
        *,
        provider: str | None = None,
        model: str | None = None,
        retrieval: str | None = None,
        max_tokens: int | None = None,
        filters: Any = None,
    ) -> Persona:
        name, persona_id, now = check_name(name, "persona name"), new_id(), self.db.now()
        retrieval, max_tokens = check_retrieval(retrieval), check_max_tokens(max_tokens)
        kept_filters = filters_in(filters)
        with self.write() as conn:
            self._check_free(conn, "personas", "persona", name)
            conn.execute(
                self.db.table_sql(
                    f"INSERT INTO {{personas}}({_PERSONA}, owner_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    persona_id,
                    name,
                    self.db.text(system_prompt or ""),
                    provider or None,
                    model or None,
                    now,
                    now,
                    retrieval,
                    max_tokens,
                    kept_filters,
                    self.local_user_id,
                ),
            )
        return self.find_persona(persona_id)

    def find_persona(self, ref: str) -> Persona:
        persona = Persona(*self._row(self._find_row("personas", _PERSONA, ref, "persona", "name"), (5, 6)))
        persona.filters = filters_out(persona.filters)
        persona.kbs = [(k, bool(a)) for k, a in self._bound("persona", persona.id, ", b.auto_search")]
        return persona

    def list_personas(self) -> list[Persona]:
        return [self.find_persona(i) for i in self._ids_by_name("personas")]

    def update_persona(
        self,
        persona_id: str,
        *,
        name: str | None = None,
        system_prompt: str | None = None,
        provider: Any = UNSET,
        model: Any = UNSET,
        retrieval: Any = UNSET,
        max_tokens: Any = UNSET,
        filters: Any = UNSET,
        kbs: Sequence[tuple[str, bool]] | None = None,
    ) -> Persona:
        changes: dict[str, Any] = {}
        if filters is not UNSET:
            changes["filters"] = filters_in(filters)
        if retrieval is not UNSET:
            changes["retrieval"] = check_retrieval(retrieval)
        if max_tokens is not UNSET:
            changes["max_tokens"] = check_max_tokens(max_tokens)
        if name is not None:
            changes["name"] = check_name(name, "persona name")
        if system_prompt is not None:
            changes["system_prompt"] = self.db.text(system_prompt)
        if provider is not UNSET:
            changes["provider"] = provider or None
        if model is not UNSET:
            changes["model"] = model or None
        persona_id = self.find_persona(persona_id).id
        bindings = None if kbs is None else [(k, self.db.bool_in(a)) for k, a in dict(kbs).items()]
        self._change("personas", "persona", persona_id, changes, bindings, ", auto_search")
        return self.find_persona(persona_id)

    def delete_persona(self, persona_id: str) -> Persona:
        return self._delete_row("personas", self.find_persona(persona_id))

    # ── projects ───────────────────────────────────────────────────────────────
    def create_project(self, name: str, description: str = "") -> Project:
        name, project_id, now = check_name(name, "project name"), new_id(), self.db.now()
        with self.write() as conn:
            self._check_free(conn, "projects", "project", name)
            conn.execute(
                self.db.table_sql(f"INSERT INTO {{projects}}({_PROJECT}, owner_id) VALUES (?, ?, ?, ?, ?, ?)"),
                (project_id, name, self.db.text(description or ""), now, now, self.local_user_id),
            )
        return self.find_project(project_id)

    def find_project(self, ref: str) -> Project:
        project = Project(*self._row(self._find_row("projects", _PROJECT, ref, "project", "name"), (3, 4)))
        project.kbs = [r[0] for r in self._bound("project", project.id)]
        return project

    def list_projects(self) -> list[Project]:
        return [self.find_project(i) for i in self._ids_by_name("projects")]

    def update_project(
        self,
        project_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        kbs: Sequence[str] | None = None,
    ) -> Project:
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = check_name(name, "project name")
        if description is not None:
            changes["description"] = self.db.text(description)
        project_id = self.find_project(project_id).id
        bindings = None if kbs is None else [(k,) for k in dict.fromkeys(kbs)]
        self._change("projects", "project", project_id, changes, bindings)
        return self.find_project(project_id)

    def delete_project(self, project_id: str) -> Project:
        return self._delete_row("projects", self.find_project(project_id))
