"""Knowledge bases in the SQLite store (seed 000 §9: CRUD, listing, stats).

Mixed into :class:`kbdesk.store.sqlite.SqliteStore`; every method that changes
something runs in one write transaction and leaves an ``audit_log`` row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError
from kbdesk.models import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, SCOPES, KnowledgeBase

KB_COLUMNS = ("id, name, description, scope, owner_id, team_id, embedding_config, document_count, "
              "chunk_count, total_bytes, status, discoverable, created_at, updated_at")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UUID_PREFIX = re.compile(r"^[0-9a-fA-F-]{4,36}$")


def _kb(row: Sequence[Any]) -> KnowledgeBase:
    values = list(row)
    values[6] = json.loads(values[6])
    values[11] = bool(values[11])
    return KnowledgeBase(*values)


def check_name(name: str, what: str = "knowledge base name") -> str:
    clean = (name or "").strip()
    if not clean:
        raise InvalidInputError(f"{what} must not be empty")
    if len(clean) > 200:
        raise InvalidInputError(f"{what} is longer than 200 characters")
    if _CONTROL.search(clean):
        raise InvalidInputError(f"{what} must not contain control characters")
    return clean


class RecordsMixin:
    """Needs ``write()``, ``read()``, ``connection()``, ``audit()``, ``vectors`` and
    ``local_user_id`` from the store it is mixed into."""

    # ── knowledge bases ────────────────────────────────────────────────────────
    def create_kb(self, name: str, description: str = "", *, embedding_config: dict[str, Any] | None = None,
                  scope: str = "personal", team_id: str | None = None,
                  discoverable: bool = True, kb_id: str | None = None) -> KnowledgeBase:
        from kbdesk.store.sqlite import new_id, utcnow

        name = check_name(name)
        if scope not in SCOPES:
            raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        config = embedding_config_snapshot(embedding_config)
        owner_id = self.local_user_id if scope == "personal" else None
        if scope == "team" and not team_id:
            raise InvalidInputError("a team knowledge base needs a team id")
        kb_id = kb_id or new_id()
        now = utcnow()
        with self.write() as conn:
            if conn.execute("SELECT 1 FROM knowledge_bases WHERE name = ? COLLATE NOCASE", (name,)).fetchone():
                raise ConflictError(f"a knowledge base named '{name}' already exists")
            if scope == "team" and not conn.execute("SELECT 1 FROM teams WHERE id = ?", (team_id,)).fetchone():
                raise NotFoundError(f"no team with id '{team_id}'")
            conn.execute(
                "INSERT INTO knowledge_bases(id, name, description, scope, owner_id, team_id, embedding_config, "
                "discoverable, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (kb_id, name, description or "", scope, owner_id, team_id if scope == "team" else None,
                 json.dumps(config), int(bool(discoverable)), now, now),
            )
            if config.get("dimensions"):
                conn.execute("INSERT INTO kb_vector_state(kb_id, dimensions) VALUES (?, ?)",
                             (kb_id, int(config["dimensions"])))
            self.audit(conn, "kb.create", kb_id, name, {"scope": scope, "embedding_config": config})
            return self._get_kb(conn, kb_id)

    def _get_kb(self, conn: Any, kb_id: str) -> KnowledgeBase:
        row = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE id = ?", (kb_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no knowledge base with id '{kb_id}'")
        return _kb(row)

    def get_kb(self, kb_id: str) -> KnowledgeBase:
        return self._get_kb(self.connection(), kb_id)

    def find_kb(self, ref: str) -> KnowledgeBase:
        """A KB by id, by name (any case), or by a unique id prefix of 4+ characters."""
        conn = self.connection()
        ref = (ref or "").strip()
        row = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE id = ?", (ref,)).fetchone()
        if row is None:
            row = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE name = ? COLLATE NOCASE",
                               (ref,)).fetchone()
        if row is None and _UUID_PREFIX.match(ref):
            rows = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
                                (ref.lower() + "%",)).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"'{ref}' matches more than one knowledge base id; give more of it")
            row = rows[0] if rows else None
        if row is None:
            raise NotFoundError(f"no knowledge base named '{ref}'")
        return _kb(row)

    def list_kbs(self) -> list[KnowledgeBase]:
        rows = self.connection().execute(
            f"SELECT {KB_COLUMNS} FROM knowledge_bases ORDER BY name COLLATE NOCASE").fetchall()
        return [_kb(r) for r in rows]

    def update_kb(self, kb_id: str, *, name: str | None = None, description: str | None = None,
                  discoverable: bool | None = None, chunk_size: int | None = None,
                  chunk_overlap: int | None = None) -> KnowledgeBase:
        from kbdesk.store.sqlite import utcnow

        with self.write() as conn:
            before = self._get_kb(conn, kb_id)
            changes: dict[str, Any] = {}
            if name is not None:
                name = check_name(name)
                clash = conn.execute("SELECT id FROM knowledge_bases WHERE name = ? COLLATE NOCASE AND id != ?",
                                     (name, kb_id)).fetchone()
                if clash:
                    raise ConflictError(f"a knowledge base named '{name}' already exists")
                if name != before.name:
                    changes["name"] = name
            if description is not None and description != before.description:
                changes["description"] = description
            if discoverable is not None and bool(discoverable) != before.discoverable:
                changes["discoverable"] = int(bool(discoverable))
            if chunk_size is not None or chunk_overlap is not None:
                config = dict(before.embedding_config)
                config["chunk_size"] = chunk_size if chunk_size is not None else before.chunk_size
                config["chunk_overlap"] = chunk_overlap if chunk_overlap is not None else before.chunk_overlap
                config = embedding_config_snapshot(config)
                if config != before.embedding_config:
                    changes["embedding_config"] = json.dumps(config)
            if not changes:
                return before
            sets = ", ".join(f"{col} = ?" for col in changes)
            conn.execute(f"UPDATE knowledge_bases SET {sets}, updated_at = ? WHERE id = ?",
                         (*changes.values(), utcnow(), kb_id))
            detail = {k: {"from": getattr(before, k), "to": json.loads(v) if k == "embedding_config" else v}
                      for k, v in changes.items()}
            self.audit(conn, "kb.update", kb_id, changes.get("name", before.name), detail)
            return self._get_kb(conn, kb_id)

    def delete_kb(self, kb_id: str) -> KnowledgeBase:
        """Delete a KB with its documents, chunks, keyword rows and vectors."""
        with self.write() as conn:
            kb = self._get_kb(conn, kb_id)
            self.vectors.drop(conn, kb_id)
            conn.execute("DELETE FROM knowledge_bases WHERE id = ?", (kb_id,))
            self.audit(conn, "kb.delete", kb_id, kb.name,
                       {"documents": kb.document_count, "chunks": kb.chunk_count})
            return kb

    def recount(self, kb_id: str) -> KnowledgeBase:
        """Recount the denormalised stats from the documents and chunks tables."""
        with self.write() as conn:
            self._recount(conn, kb_id)
            return self._get_kb(conn, kb_id)

    def _recount(self, conn: Any, kb_id: str) -> None:
        from kbdesk.store.sqlite import utcnow

        docs, size = conn.execute("SELECT count(*), coalesce(sum(size_bytes), 0) FROM kb_documents WHERE kb_id = ?",
                                  (kb_id,)).fetchone()
        chunks = conn.execute("SELECT count(*) FROM kb_chunks WHERE kb_id = ?", (kb_id,)).fetchone()[0]
        conn.execute("UPDATE knowledge_bases SET document_count = ?, chunk_count = ?, total_bytes = ?, "
                     "updated_at = ? WHERE id = ?", (docs, chunks, size, utcnow(), kb_id))

    def _bump(self, conn: Any, kb_id: str, *, docs: int = 0, chunks: int = 0, size: int = 0) -> None:
        """Move the denormalised stats by a delta, inside the transaction that changed them."""
        from kbdesk.store.sqlite import utcnow

        conn.execute("UPDATE knowledge_bases SET document_count = document_count + ?, chunk_count = chunk_count + ?, "
                     "total_bytes = total_bytes + ?, updated_at = ? WHERE id = ?",
                     (docs, chunks, size, utcnow(), kb_id))

    def audit_entries(self, kb_id: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT id, created_at, user_id, action, kb_id, target, details FROM audit_log"
        args: tuple[Any, ...] = ()
        if kb_id:
            sql += " WHERE kb_id = ?"
            args = (kb_id,)
        rows = self.connection().execute(sql + " ORDER BY id", args).fetchall()
        keys = ("id", "created_at", "user_id", "action", "kb_id", "target", "details")
        return [dict(zip(keys, r[:-1] + (json.loads(r[-1]),))) for r in rows]


def embedding_config_snapshot(config: dict[str, Any] | None) -> dict[str, Any]:
    """Validate and complete a KB's embedding and chunking snapshot."""
    allowed = {"provider", "model_id", "dimensions", "chunk_size", "chunk_overlap"}
    config = dict(config or {})
    unknown = set(config) - allowed
    if unknown:
        raise InvalidInputError(f"unknown embedding_config key(s): {', '.join(sorted(unknown))}")
    size = config.setdefault("chunk_size", DEFAULT_CHUNK_SIZE)
    overlap = config.setdefault("chunk_overlap", DEFAULT_CHUNK_OVERLAP)
    for key in ("chunk_size", "chunk_overlap", "dimensions"):
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise InvalidInputError(f"{key} must be a whole number")
    if size < 1:
        raise InvalidInputError("chunk_size must be at least 1")
    if not 0 <= overlap < size:
        raise InvalidInputError("chunk_overlap must be at least 0 and smaller than chunk_size")
    dims = config.get("dimensions")
    if dims is not None and not 1 <= dims <= 16_000:
        raise InvalidInputError("dimensions must be between 1 and 16000")
    if dims is not None and not config.get("model_id"):
        raise InvalidInputError("dimensions were given without an embedding model id")
    if not config.get("model_id"):
        config.pop("model_id", None)
        config.pop("provider", None)
    return {k: (int(v) if isinstance(v, np.integer) else v) for k, v in config.items() if v is not None}
