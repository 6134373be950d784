"""Knowledge bases in the Postgres store: CRUD, listing and stats, under seed 002's rules.

Mixed into :class:`PostgresStore`. Reads that a person makes (``find_kb``, ``list_kbs``)
show only the KBs the identity may pick; ``get_kb`` (what bindings use) reaches every
KB the identity may see; changes check :func:`check_manage`. On a team server these
checks only word the refusals: row-level security (:mod:`.rls`) is the authority. Names are unique, ignoring
case, among the KBs one user can see (a team server may hold many "Notes").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError
from kbdesk.models import KB_STATUSES, SCOPES, KnowledgeBase
from kbdesk.store.postgres.access import (check_create, check_discoverable, check_manage, is_uuid, picker_sql,
                                          visible_sql)
from kbdesk.store.postgres.seed import VECTOR_COLUMN_DIMS
from kbdesk.store.postgres.values import clean_json, clean_text, iso
from kbdesk.store.records import check_name, embedding_config_snapshot

KB_COLUMNS = ("id, name, description, scope, owner_id, team_id, embedding_config, document_count, "
              "chunk_count, total_bytes, status, discoverable, created_at, updated_at")
NAME_LOCK = 0x6B62_6E61_6D65  # serialises name checks with the inserts they guard
KNOWN_CONFIG = {"provider", "model_id", "dimensions", "chunk_size", "chunk_overlap"}


def _kb(row: Sequence[Any]) -> KnowledgeBase:
    values = list(row)
    values[6] = dict(values[6] or {})
    values[11] = bool(values[11])
    values[12], values[13] = iso(values[12]), iso(values[13])
    return KnowledgeBase(*values)


def _jsonb(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(clean_json(value))


def snapshot(config: dict[str, Any]) -> dict[str, Any]:
    """kbdesk's keys validated; keys a team server keeps there (provider_config_id…) kept."""
    extra = {k: v for k, v in config.items() if k not in KNOWN_CONFIG}
    known = embedding_config_snapshot({k: v for k, v in config.items() if k in KNOWN_CONFIG})
    return {**extra, **known}


class RecordsMixin:
    """Needs ``write()``, ``connection()``, ``audit()``, ``vectors`` and ``identity``."""

    # ── knowledge bases ────────────────────────────────────────────────────────
    def create_kb(self, name: str, description: str = "", *, embedding_config: dict[str, Any] | None = None,
                  scope: str = "personal", team_id: str | None = None,
                  discoverable: bool = True, kb_id: str | None = None) -> KnowledgeBase:
        name = check_name(name)
        if scope not in SCOPES:
            raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        config = embedding_config_snapshot(embedding_config)
        if (config.get("dimensions") or 0) > VECTOR_COLUMN_DIMS:
            raise InvalidInputError(f"Postgres stores vectors of at most {VECTOR_COLUMN_DIMS} dimensions (the seed's "
                                    f"vector({VECTOR_COLUMN_DIMS}) column), not {config['dimensions']}")
        if scope == "team" and not team_id:
            raise InvalidInputError("a team knowledge base needs a team id")
        if scope == "team" and not is_uuid(team_id):
            raise NotFoundError(f"no team with id '{team_id}'")
        if kb_id is not None and not is_uuid(kb_id):
            raise InvalidInputError(f"a knowledge base id must be a UUID, got {kb_id!r}")
        team_id = str(team_id).lower() if scope == "team" else None
        owner_id = self.identity.user_id if scope == "personal" else None
        with self.write() as conn:
            if scope == "team" and not conn.execute("SELECT 1 FROM teams WHERE id = %s", (team_id,)).fetchone():
                raise NotFoundError(f"no team with id '{team_id}'")
            check_create(self.identity, scope, team_id)
            self._check_name_free(conn, name, None)
            row = conn.execute(
                f"INSERT INTO knowledge_bases(id, name, description, scope, owner_id, team_id, embedding_config, "
                f"discoverable) VALUES (coalesce(%s::uuid, gen_random_uuid()), %s, %s, %s, %s, %s, %s, %s) "
                f"RETURNING {KB_COLUMNS}",
                (kb_id, name, clean_text(description or ""), scope, owner_id, team_id, _jsonb(config),
                 bool(discoverable))).fetchone()
            self.audit(conn, "kb.create", row[0], name, {"scope": scope, "embedding_config": config})
            return _kb(row)

    def _check_name_free(self, conn: Any, name: str, kb_id: str | None) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (NAME_LOCK,))
        where, args = visible_sql(self.identity)
        clash = conn.execute(f"SELECT 1 FROM knowledge_bases WHERE lower(name) = lower(%s) AND {where} "
                             "AND id IS DISTINCT FROM %s::uuid LIMIT 1", (name, *args, kb_id)).fetchone()
        if clash:
            raise ConflictError(f"a knowledge base named '{name}' already exists")

    def _get_kb(self, conn: Any, kb_id: str) -> KnowledgeBase:
        row = None
        if is_uuid(kb_id):
            row = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE id = %s", (kb_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no knowledge base with id '{kb_id}'")
        return _kb(row)

    def get_kb(self, kb_id: str) -> KnowledgeBase:
        """A KB by id if the identity may see it (discoverable or not: bindings use this)."""
        from kbdesk.store.postgres.access import can_see

        kb = self._get_kb(self.connection(), kb_id)
        if not can_see(self.identity, kb):
            raise NotFoundError(f"no knowledge base with id '{kb_id}'")
        return kb

    def kb_by_id(self, kb_id: str) -> KnowledgeBase | None:
        """A KB by id whatever kbdesk's rules say, or None (export/import checks the target;
        on a team server the database still shows a kbdesk user only what they may read)."""
        try:
            return self._get_kb(self.connection(), kb_id)
        except NotFoundError:
            return None

    def resolve_team(self, ref: str) -> str:
        """A team's id from its id or its name."""
        conn = self.connection()
        if is_uuid(ref) and conn.execute("SELECT 1 FROM teams WHERE id = %s", (ref,)).fetchone():
            return str(ref).lower()
        try:
            rows = conn.execute("SELECT id FROM teams WHERE name::text = %s LIMIT 2", (ref,)).fetchall()
        except Exception:  # a server's teams table without names
            rows = []
        if len(rows) != 1:
            raise NotFoundError(f"no team '{ref}'" if not rows else f"more than one team is named '{ref}'; use its id")
        return rows[0][0]

    def kb_named(self, name: str) -> KnowledgeBase | None:
        """The KB of that name (any case) among those the identity may see, or None."""
        where, args = visible_sql(self.identity)
        row = self.connection().execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE lower(name) = lower(%s) "
                                        f"AND {where} ORDER BY created_at LIMIT 1", (name, *args)).fetchone()
        return _kb(row) if row else None

    def find_kb(self, ref: str) -> KnowledgeBase:
        """A KB the identity may pick: by id, by name (any case), or by a unique id prefix."""
        conn = self.connection()
        ref = (ref or "").strip()
        where, args = picker_sql(self.identity)
        rows: list[Any] = []
        if is_uuid(ref):
            rows = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE id = %s AND {where}",
                                (ref, *args)).fetchall()
        if not rows:
            rows = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE lower(name) = lower(%s) AND {where} "
                                "LIMIT 2", (ref, *args)).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"more than one knowledge base is named '{ref}'; use its id")
        if not rows and 4 <= len(ref) <= 36 and all(c in "0123456789abcdefABCDEF-" for c in ref):
            rows = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE id::text LIKE %s AND {where} "
                                "LIMIT 2", (ref.lower() + "%", *args)).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"'{ref}' matches more than one knowledge base id; give more of it")
        if not rows:
            raise NotFoundError(f"no knowledge base named '{ref}'")
        return _kb(rows[0])

    def list_kbs(self) -> list[KnowledgeBase]:
        """The picker: personal, team and discoverable global KBs this identity may see."""
        where, args = picker_sql(self.identity)
        rows = self.connection().execute(
            f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE {where} ORDER BY lower(name), id", args).fetchall()
        return [_kb(r) for r in rows]

    def update_kb(self, kb_id: str, *, name: str | None = None, description: str | None = None,
                  discoverable: bool | None = None, chunk_size: int | None = None,
                  chunk_overlap: int | None = None) -> KnowledgeBase:
        with self.write() as conn:
            before = self._get_kb(conn, kb_id)
            changes: dict[str, Any] = {}
            if discoverable is not None and bool(discoverable) != before.discoverable:
                check_discoverable(self.identity, before)
                changes["discoverable"] = bool(discoverable)
            others = name is not None or description is not None or chunk_size is not None or chunk_overlap is not None
            if others:
                check_manage(self.identity, before)
            if name is not None:
                name = check_name(name)
                self._check_name_free(conn, name, kb_id)
                if name != before.name:
                    changes["name"] = name
            if description is not None and description != before.description:
                changes["description"] = clean_text(description)
            if chunk_size is not None or chunk_overlap is not None:
                config = dict(before.embedding_config)
                config["chunk_size"] = chunk_size if chunk_size is not None else before.chunk_size
                config["chunk_overlap"] = chunk_overlap if chunk_overlap is not None else before.chunk_overlap
                config = snapshot(config)
                if config != before.embedding_config:
                    changes["embedding_config"] = config
            if not changes:
                return before
            sets = ", ".join(f"{col} = %s" for col in changes)
            values = [_jsonb(v) if k == "embedding_config" else v for k, v in changes.items()]
            conn.execute(f"UPDATE knowledge_bases SET {sets}, updated_at = now() WHERE id = %s", (*values, kb_id))
            detail = {k: {"from": getattr(before, k), "to": v} for k, v in changes.items()}
            self.audit(conn, "kb.update", kb_id, changes.get("name", before.name), detail)
            return self._get_kb(conn, kb_id)

    def set_kb_status(self, kb_id: str, status: str) -> None:
        """active / processing / error (an export marks its target processing while it runs)."""
        if status not in KB_STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(KB_STATUSES)}")
        with self.write() as conn:
            check_manage(self.identity, self._get_kb(conn, kb_id))
            conn.execute("UPDATE knowledge_bases SET status = %s, updated_at = now() WHERE id = %s AND status <> %s",
                         (status, kb_id, status))

    def delete_kb(self, kb_id: str) -> KnowledgeBase:
        """Delete a KB with its documents, chunks, keyword rows, vectors and its index."""
        with self.write() as conn:
            kb = self._get_kb(conn, kb_id)
            check_manage(self.identity, kb)
            self.vectors.drop(conn, kb_id)
            conn.execute("DELETE FROM knowledge_bases WHERE id = %s", (kb_id,))
            self.audit(conn, "kb.delete", kb_id, kb.name, {"documents": kb.document_count, "chunks": kb.chunk_count})
            return kb

    def recount(self, kb_id: str) -> KnowledgeBase:
        """Recount the denormalised stats from the documents and chunks tables."""
        with self.write() as conn:
            self._recount(conn, kb_id)
            return self._get_kb(conn, kb_id)

    def _recount(self, conn: Any, kb_id: str) -> None:
        conn.execute(
            "UPDATE knowledge_bases k SET document_count = d.n, total_bytes = d.size, chunk_count = c.n, "
            "updated_at = now() FROM (SELECT count(*) AS n, coalesce(sum(size_bytes), 0) AS size FROM kb_documents "
            "WHERE kb_id = %s) d, (SELECT count(*) AS n FROM kb_chunks WHERE kb_id = %s) c "
            "WHERE k.id = %s AND (k.document_count, k.total_bytes, k.chunk_count) IS DISTINCT FROM (d.n, d.size, c.n)",
            (kb_id, kb_id, kb_id))

    def _bump(self, conn: Any, kb_id: str, *, docs: int = 0, chunks: int = 0, size: int = 0) -> None:
        """Move the denormalised stats by a delta, inside the transaction that changed them."""
        conn.execute("UPDATE knowledge_bases SET document_count = document_count + %s, chunk_count = chunk_count + %s, "
                     "total_bytes = total_bytes + %s, updated_at = now() WHERE id = %s", (docs, chunks, size, kb_id))
