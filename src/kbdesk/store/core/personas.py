"""Personas and projects with their KB bindings, for both engines: a repository over
the store's :class:`~kbdesk.store.core.compose.Base` and this user's rows
(:class:`~kbdesk.store.core.own_rows.OwnRows`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbdesk.store.core.compose import Base
from kbdesk.store.core.own_rows import OwnRows
from kbdesk.store.engine import Engine
from kbdesk.store.ids import check_name, new_id
from kbdesk.store.personas import UNSET, Persona, Project, check_max_tokens, check_retrieval, filters_in, filters_out

_PERSONA = "id, name, system_prompt, provider, model, created_at, updated_at, retrieval, max_tokens, filters"
_PROJECT = "id, name, description, created_at, updated_at"


class Personas:
    """This user's personas and projects."""

    def __init__(self, base: Base, rows: OwnRows) -> None:
        self.base = base
        self.rows = rows

    @property
    def db(self) -> Engine:
        return self.base.db

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
        with self.base.write() as conn:
            self.rows.check_free(conn, "personas", "persona", name)
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
                    self.base.local_user_id,
                ),
            )
        return self.find_persona(persona_id)

    def find_persona(self, ref: str) -> Persona:
        persona = Persona(*self.rows.row(self.rows.find("personas", _PERSONA, ref, "persona", "name"), (5, 6)))
        persona.filters = filters_out(persona.filters)
        persona.kbs = [(k, bool(a)) for k, a in self.rows.bound("persona", persona.id, ", b.auto_search")]
        return persona

    def list_personas(self) -> list[Persona]:
        return [self.find_persona(i) for i in self.rows.ids_by_name("personas")]

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
        self.rows.change("personas", "persona", persona_id, changes, bindings, ", auto_search")
        return self.find_persona(persona_id)

    def delete_persona(self, persona_id: str) -> Persona:
        return self.rows.delete("personas", self.find_persona(persona_id))

    # ── projects ───────────────────────────────────────────────────────────────
    def create_project(self, name: str, description: str = "") -> Project:
        name, project_id, now = check_name(name, "project name"), new_id(), self.db.now()
        with self.base.write() as conn:
            self.rows.check_free(conn, "projects", "project", name)
            conn.execute(
                self.db.table_sql(f"INSERT INTO {{projects}}({_PROJECT}, owner_id) VALUES (?, ?, ?, ?, ?, ?)"),
                (project_id, name, self.db.text(description or ""), now, now, self.base.local_user_id),
            )
        return self.find_project(project_id)

    def find_project(self, ref: str) -> Project:
        project = Project(*self.rows.row(self.rows.find("projects", _PROJECT, ref, "project", "name"), (3, 4)))
        project.kbs = [r[0] for r in self.rows.bound("project", project.id)]
        return project

    def list_projects(self) -> list[Project]:
        return [self.find_project(i) for i in self.rows.ids_by_name("projects")]

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
        self.rows.change("projects", "project", project_id, changes, bindings)
        return self.find_project(project_id)

    def delete_project(self, project_id: str) -> Project:
        return self.rows.delete("projects", self.find_project(project_id))
