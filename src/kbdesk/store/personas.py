"""Personas and projects with their KB bindings, in the SQLite store.

Mixed into :class:`kbdesk.store.sqlite.SqliteStore` through
:class:`kbdesk.store.chat.ChatMixin`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError
from kbdesk.store.ids import check_name, new_id, utcnow

_UUID_PREFIX = re.compile(r"^[0-9a-fA-F-]{4,36}$")
UNSET: Any = object()
"""Leave a field as it is (None means "clear it")."""
_PERSONA = "id, name, system_prompt, provider, model, created_at, updated_at, retrieval, max_tokens"
RETRIEVAL_POLICIES = ("auto", "tool", "always", "off")
_PROJECT = "id, name, description, created_at, updated_at"


@dataclass
class Persona:
    id: str
    name: str
    system_prompt: str
    provider: str | None
    model: str | None
    created_at: str
    updated_at: str
    retrieval: str | None = None
    """auto, tool, always or off; None: the conversation's or config's policy applies."""
    max_tokens: int | None = None
    """Longest answer in tokens; None: the config's ``[chat] max_tokens``."""
    kbs: list[tuple[str, bool]] = field(default_factory=list)
    """(kb_id, auto_search) of each bound KB."""

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "kbs"}
        out["knowledge_bases"] = [{"kb_id": k, "auto_search": a} for k, a in self.kbs]
        return out


@dataclass
class Project:
    id: str
    name: str
    description: str
    created_at: str
    updated_at: str
    kbs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "kbs"}
        out["knowledge_bases"] = list(self.kbs)
        return out


def _now() -> str:
    return utcnow()


def _new_id() -> str:
    return new_id()


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


class PersonasMixin:
    """Needs ``write()``, ``connection()`` and ``local_user_id`` from the store."""

    # ── finding by id, name or id prefix ───────────────────────────────────────
    def _find_row(self, table: str, columns: str, ref: str, what: str, name_col: str) -> tuple[Any, ...]:
        conn = self.connection()
        ref = (ref or "").strip()
        row = conn.execute(f"SELECT {columns} FROM {table} WHERE id = ?", (ref,)).fetchone()
        if row is None and ref:
            rows = conn.execute(f"SELECT {columns} FROM {table} WHERE {name_col} = ? COLLATE NOCASE LIMIT 2",
                                (ref,)).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"more than one {what} is called '{ref}'; use its id")
            row = rows[0] if rows else None
        if row is None and _UUID_PREFIX.match(ref):
            rows = conn.execute(f"SELECT {columns} FROM {table} WHERE id LIKE ? LIMIT 2",
                                (ref.lower() + "%",)).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"'{ref}' matches more than one {what} id; give more of it")
            row = rows[0] if rows else None
        if row is None:
            raise NotFoundError(f"no {what} '{ref}'")
        return tuple(row)

    # ── personas ───────────────────────────────────────────────────────────────
    def create_persona(self, name: str, system_prompt: str = "", *, provider: str | None = None,
                       model: str | None = None, retrieval: str | None = None,
                       max_tokens: int | None = None) -> Persona:
        name, persona_id, now = check_name(name, "persona name"), _new_id(), _now()
        retrieval, max_tokens = check_retrieval(retrieval), check_max_tokens(max_tokens)
        with self.write() as conn:
            if conn.execute("SELECT 1 FROM personas WHERE name = ? COLLATE NOCASE", (name,)).fetchone():
                raise ConflictError(f"a persona named '{name}' already exists")
            conn.execute(f"INSERT INTO personas({_PERSONA}, owner_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (persona_id, name, system_prompt or "", provider or None, model or None, now, now,
                          retrieval, max_tokens, self.local_user_id))
        return self.find_persona(persona_id)

    def find_persona(self, ref: str) -> Persona:
        persona = Persona(*self._find_row("personas", _PERSONA, ref, "persona", "name"))
        persona.kbs = [(k, bool(a)) for k, a in self.connection().execute(
            "SELECT p.kb_id, p.auto_search FROM persona_knowledge_bases p JOIN knowledge_bases k ON k.id = p.kb_id "
            "WHERE p.persona_id = ? ORDER BY k.name COLLATE NOCASE", (persona.id,))]
        return persona

    def list_personas(self) -> list[Persona]:
        ids = [r[0] for r in self.connection().execute("SELECT id FROM personas ORDER BY name COLLATE NOCASE")]
        return [self.find_persona(i) for i in ids]

    def update_persona(self, persona_id: str, *, name: str | None = None, system_prompt: str | None = None,
                       provider: Any = UNSET, model: Any = UNSET, retrieval: Any = UNSET, max_tokens: Any = UNSET,
                       kbs: Sequence[tuple[str, bool]] | None = None) -> Persona:
        changes: dict[str, Any] = {}
        if retrieval is not UNSET:
            changes["retrieval"] = check_retrieval(retrieval)
        if max_tokens is not UNSET:
            changes["max_tokens"] = check_max_tokens(max_tokens)
        if name is not None:
            changes["name"] = check_name(name, "persona name")
        if system_prompt is not None:
            changes["system_prompt"] = system_prompt
        if provider is not UNSET:
            changes["provider"] = provider or None
        if model is not UNSET:
            changes["model"] = model or None
        with self.write() as conn:
            self.find_persona(persona_id)
            if "name" in changes and conn.execute("SELECT 1 FROM personas WHERE name = ? COLLATE NOCASE AND id != ?",
                                                  (changes["name"], persona_id)).fetchone():
                raise ConflictError(f"a persona named '{changes['name']}' already exists")
            sets = "".join(f"{c} = ?, " for c in changes)
            conn.execute(f"UPDATE personas SET {sets}updated_at = ? WHERE id = ?", (*changes.values(), _now(),
                                                                                   persona_id))
            if kbs is not None:
                conn.execute("DELETE FROM persona_knowledge_bases WHERE persona_id = ?", (persona_id,))
                for kb_id, auto in dict(kbs).items():
                    conn.execute("INSERT INTO persona_knowledge_bases(persona_id, kb_id, auto_search) VALUES (?, ?, ?)",
                                 (persona_id, kb_id, int(bool(auto))))
        return self.find_persona(persona_id)

    def delete_persona(self, persona_id: str) -> Persona:
        persona = self.find_persona(persona_id)
        with self.write() as conn:
            conn.execute("DELETE FROM personas WHERE id = ?", (persona.id,))
        return persona

    # ── projects ───────────────────────────────────────────────────────────────
    def create_project(self, name: str, description: str = "") -> Project:
        name, project_id, now = check_name(name, "project name"), _new_id(), _now()
        with self.write() as conn:
            if conn.execute("SELECT 1 FROM projects WHERE name = ? COLLATE NOCASE", (name,)).fetchone():
                raise ConflictError(f"a project named '{name}' already exists")
            conn.execute(f"INSERT INTO projects({_PROJECT}, owner_id) VALUES (?, ?, ?, ?, ?, ?)",
                         (project_id, name, description or "", now, now, self.local_user_id))
        return self.find_project(project_id)

    def find_project(self, ref: str) -> Project:
        project = Project(*self._find_row("projects", _PROJECT, ref, "project", "name"))
        project.kbs = [r[0] for r in self.connection().execute(
            "SELECT p.kb_id FROM project_knowledge_bases p JOIN knowledge_bases k ON k.id = p.kb_id "
            "WHERE p.project_id = ? ORDER BY k.name COLLATE NOCASE", (project.id,))]
        return project

    def list_projects(self) -> list[Project]:
        ids = [r[0] for r in self.connection().execute("SELECT id FROM projects ORDER BY name COLLATE NOCASE")]
        return [self.find_project(i) for i in ids]

    def update_project(self, project_id: str, *, name: str | None = None, description: str | None = None,
                       kbs: Sequence[str] | None = None) -> Project:
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = check_name(name, "project name")
        if description is not None:
            changes["description"] = description
        with self.write() as conn:
            self.find_project(project_id)
            if "name" in changes and conn.execute("SELECT 1 FROM projects WHERE name = ? COLLATE NOCASE AND id != ?",
                                                  (changes["name"], project_id)).fetchone():
                raise ConflictError(f"a project named '{changes['name']}' already exists")
            sets = "".join(f"{c} = ?, " for c in changes)
            conn.execute(f"UPDATE projects SET {sets}updated_at = ? WHERE id = ?", (*changes.values(), _now(),
                                                                                   project_id))
            if kbs is not None:
                conn.execute("DELETE FROM project_knowledge_bases WHERE project_id = ?", (project_id,))
                for kb_id in dict.fromkeys(kbs):
                    conn.execute("INSERT INTO project_knowledge_bases(project_id, kb_id) VALUES (?, ?)",
                                 (project_id, kb_id))
        return self.find_project(project_id)

    def delete_project(self, project_id: str) -> Project:
        project = self.find_project(project_id)
        with self.write() as conn:
            conn.execute("DELETE FROM projects WHERE id = ?", (project.id,))
        return project


def check_retrieval(policy: str | None) -> str | None:
    """A retrieval policy (or None: decided by the next level)."""
    if policy in (None, ""):
        return None
    if policy not in RETRIEVAL_POLICIES:
        raise InvalidInputError(f"retrieval must be one of {', '.join(RETRIEVAL_POLICIES)}, not {policy!r}")
    return policy


def check_max_tokens(value: int | None) -> int | None:
    if value in (None, 0):
        return None
    if not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise InvalidInputError("max_tokens must be a whole number from 1 to 1,000,000")
    return value
