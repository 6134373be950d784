"""Knowledge bases: CRUD, listing and stats, for both engines (:class:`Records`).

Every change runs in one write transaction, is checked by the access policy and leaves
an audit row. Reads a person makes (:meth:`find_kb`, :meth:`list_kbs`) show the KBs
the policy puts in the picker; :meth:`get_kb` (what bindings use) reaches every KB the
user may see. Names are unique, ignoring case, among the KBs one user can see (a team
server may hold many "Notes"; a local file holds one of each).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kbdesk.errors import ConflictError, InvalidInputError, NotFoundError
from kbdesk.models import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, KB_STATUSES, SCOPES, KnowledgeBase
from kbdesk.store.api import Policy, VectorIndex
from kbdesk.store.core.audit import AuditLog
from kbdesk.store.core.compose import Base, via
from kbdesk.store.core.parts import ChunkStorage
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.ids import ID_PREFIX, check_name, new_id

KB_COLUMNS = (
    "id, name, description, scope, owner_id, team_id, embedding_config, document_count, "
    "chunk_count, total_bytes, status, discoverable, created_at, updated_at"
)
KNOWN_CONFIG = {"provider", "model_id", "dimensions", "chunk_size", "chunk_overlap"}


class Records:
    """The KB records: over the store's ``base`` (connections, engine object, policy, user),
    the engine's ``chunks`` (:class:`~kbdesk.store.core.parts.ChunkStorage`: its limits, its
    bookkeeping of a new KB, its lock on names), its vector index (dropped with a KB) and
    the audit ``log`` every change writes to. The Postgres store's records
    (:class:`kbdesk.store.postgres.tombstones.PgRecords`) delete a KB their own way."""

    def __init__(self, base: Base, chunks: ChunkStorage, vectors: VectorIndex, log: AuditLog) -> None:
        self.base = base
        self.chunks = chunks
        self.vectors = vectors
        self.log = log

    @property
    def db(self) -> Engine:
        return self.base.db

    @property
    def policy(self) -> Policy:
        return self.base.policy

    audit = via("log", AuditLog.audit)
    audit_many = via("log", AuditLog.audit_many)

    def _kb(self, row: Sequence[Any]) -> KnowledgeBase:
        values = list(row)
        values[6] = dict(self.db.json_out(values[6]) or {})
        values[11] = bool(values[11])
        values[12], values[13] = self.db.time_out(values[12]), self.db.time_out(values[13])
        return KnowledgeBase(*values)

    # ── knowledge bases ────────────────────────────────────────────────────────
    def create_kb(
        self,
        name: str,
        description: str = "",
        *,
        embedding_config: dict[str, Any] | None = None,
        scope: str = "personal",
        team_id: str | None = None,
        discoverable: bool = True,
        kb_id: str | None = None,
    ) -> KnowledgeBase:
        name = check_name(name)
        if scope not in SCOPES:
            raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        config = embedding_config_snapshot(embedding_config)
        self.chunks.check_config(config)
        if scope == "team" and not team_id:
            raise InvalidInputError("a team knowledge base needs a team id")
        if scope == "team" and not self.db.valid_id(team_id):
            raise NotFoundError(f"no team with id '{team_id}'")
        if kb_id is not None and not self.db.valid_id(kb_id):
            raise InvalidInputError(f"a knowledge base id must be a UUID, got {kb_id!r}")
        team_id = self.db.norm_id(team_id) if scope == "team" else None
        owner_id = self.base.local_user_id if scope == "personal" else None
        kb_id = kb_id or new_id()
        now = self.db.now()
        sql = self.db.sql
        with self.base.write() as conn:
            if scope == "team" and not conn.execute(sql("SELECT 1 FROM teams WHERE id = ?"), (team_id,)).fetchone():
                raise NotFoundError(f"no team with id '{team_id}'")
            self.policy.check_create(scope, team_id)
            self._check_name_free(conn, name, None)
            conn.execute(
                sql(
                    "INSERT INTO knowledge_bases(id, name, description, scope, owner_id, team_id, "
                    "embedding_config, discoverable, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    kb_id,
                    name,
                    self.db.text(description or ""),
                    scope,
                    owner_id,
                    team_id,
                    self.db.json_in(config),
                    self.db.bool_in(discoverable),
                    now,
                    now,
                ),
            )
            self.chunks.kb_created(conn, kb_id, config)
            self.audit(conn, "kb.create", kb_id, name, {"scope": scope, "embedding_config": config})
            return self.kb_row(conn, kb_id)

    def _check_name_free(self, conn: Connection, name: str, kb_id: str | None) -> None:
        self.chunks.lock_names(conn, name)
        where, args = self.policy.visible()
        sql = f"SELECT id FROM knowledge_bases WHERE lower(name) = lower(?) AND {where}"
        for row in conn.execute(self.db.sql(sql), (name, *args)).fetchall():
            if kb_id is None or str(row[0]) != str(kb_id):
                raise ConflictError(f"a knowledge base named '{name}' already exists")

    def kb_row(self, conn: Connection, kb_id: str) -> KnowledgeBase:
        """A KB's row read in ``conn``'s transaction, whatever the policy says (the other
        repositories check it themselves where they must)."""
        row = None
        if self.db.valid_id(kb_id):
            row = conn.execute(
                self.db.sql(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE id = ?"), (kb_id,)
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no knowledge base with id '{kb_id}'")
        return self._kb(row)

    def get_kb(self, kb_id: str) -> KnowledgeBase:
        """A KB by id if the user may see it (bindings use this: on a team server a hidden
        global KB is not there for anyone but system admins)."""
        kb = self.kb_row(self.base.connection(), kb_id)
        if not self.policy.can_see(kb):
            raise NotFoundError(f"no knowledge base with id '{kb_id}'")
        return kb

    def kb_by_id(self, kb_id: str) -> KnowledgeBase | None:
        """A KB by id whatever the policy says, or None (export and import check their
        target themselves; a team server's database still hides what a user may not read)."""
        try:
            return self.kb_row(self.base.connection(), kb_id)
        except NotFoundError:
            return None

    def resolve_team(self, ref: str) -> str:
        """A team's id from its id or its name."""
        conn = self.base.connection()
        sql = self.db.sql
        if self.db.valid_id(ref) and conn.execute(sql("SELECT 1 FROM teams WHERE id = ?"), (ref,)).fetchone():
            return self.db.norm_id(ref)
        try:
            with self.db.savepoint(conn):
                rows = conn.execute(sql("SELECT id FROM teams WHERE CAST(name AS TEXT) = ? LIMIT 2"), (ref,)).fetchall()
        except Exception:  # noqa: BLE001 - a server's teams table without names (either engine's error)
            rows = []
        if len(rows) != 1:
            raise NotFoundError(f"no team '{ref}'" if not rows else f"more than one team is named '{ref}'; use its id")
        return str(rows[0][0])

    def kb_named(self, name: str) -> KnowledgeBase | None:
        """The KB of that name (any case) among those the user may see, or None."""
        where, args = self.policy.visible()
        row = (
            self.base.connection()
            .execute(
                self.db.sql(
                    f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE lower(name) = lower(?) AND {where} "
                    "ORDER BY created_at LIMIT 1"
                ),
                (name, *args),
            )
            .fetchone()
        )
        return self._kb(row) if row else None

    def find_kb(self, ref: str) -> KnowledgeBase:
        """A KB the user may pick: by id, by name (any case), or by a unique id prefix of 4+ characters."""
        conn = self.base.connection()
        sql = self.db.sql
        ref = (ref or "").strip()
        where, args = self.policy.picker()
        rows: list[Any] = []
        if self.db.valid_id(ref):
            rows = conn.execute(
                sql(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE id = ? AND {where}"), (ref, *args)
            ).fetchall()
        if not rows:
            rows = conn.execute(
                sql(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE lower(name) = lower(?) AND {where} LIMIT 2"),
                (ref, *args),
            ).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"more than one knowledge base is named '{ref}'; use its id")
        if not rows and ID_PREFIX.match(ref):
            rows = conn.execute(
                sql(
                    f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE {self.db.id_text('id')} LIKE ? AND {where} LIMIT 2"
                ),
                (ref.lower() + "%", *args),
            ).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"'{ref}' matches more than one knowledge base id; give more of it")
        if not rows:
            raise NotFoundError(f"no knowledge base named '{ref}'")
        return self._kb(rows[0])

    def list_kbs(self) -> list[KnowledgeBase]:
        """The picker: the KBs this user may pick, by name."""
        where, args = self.policy.picker()
        rows = (
            self.base.connection()
            .execute(
                self.db.sql(f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE {where} ORDER BY lower(name), id"), args
            )
            .fetchall()
        )
        return [self._kb(r) for r in rows]

    def update_kb(
        self,
        kb_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        discoverable: bool | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
    ) -> KnowledgeBase:
        with self.base.write() as conn:
            before = self.kb_row(conn, kb_id)
            changes: dict[str, Any] = {}
            if discoverable is not None and bool(discoverable) != before.discoverable:
                self.policy.check_discoverable(before)
                changes["discoverable"] = self.db.bool_in(discoverable)
            if name is not None or description is not None or chunk_size is not None or chunk_overlap is not None:
                self.policy.check_manage(before)
            if name is not None:
                name = check_name(name)
                self._check_name_free(conn, name, kb_id)
                if name != before.name:
                    changes["name"] = name
            if description is not None and description != before.description:
                changes["description"] = self.db.text(description)
            if chunk_size is not None or chunk_overlap is not None:
                config = dict(before.embedding_config)
                config["chunk_size"] = chunk_size if chunk_size is not None else before.chunk_size
                config["chunk_overlap"] = chunk_overlap if chunk_overlap is not None else before.chunk_overlap
                config = snapshot(config)
                if config != before.embedding_config:
                    changes["embedding_config"] = config
            if not changes:
                return before
            sets = ", ".join(f"{col} = ?" for col in changes)
            values = [self.db.json_in(v) if k == "embedding_config" else v for k, v in changes.items()]
            conn.execute(
                self.db.sql(f"UPDATE knowledge_bases SET {sets}, updated_at = ? WHERE id = ?"),
                (*values, self.db.now(), kb_id),
            )
            detail = {
                k: {"from": getattr(before, k), "to": bool(v) if k == "discoverable" else v} for k, v in changes.items()
            }
            self.audit(conn, "kb.update", kb_id, changes.get("name", before.name), detail)
            return self.kb_row(conn, kb_id)

    def set_kb_status(self, kb_id: str, status: str) -> None:
        """active / processing / error (an export marks its target processing while it runs)."""
        if status not in KB_STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(KB_STATUSES)}")
        with self.base.write() as conn:
            self.policy.check_manage(self.kb_row(conn, kb_id))
            conn.execute(
                self.db.sql("UPDATE knowledge_bases SET status = ?, updated_at = ? WHERE id = ? AND status <> ?"),
                (status, self.db.now(), kb_id, status),
            )

    def delete_kb(self, kb_id: str) -> KnowledgeBase:
        """Delete a KB with its documents, chunks, keyword rows, vectors and index."""
        with self.base.write() as conn:
            kb = self.kb_row(conn, kb_id)
            self.policy.check_manage(kb)
            self.vectors.drop(conn, kb_id)
            self.db.delete(conn, "knowledge_bases", "id = ?", (kb_id,))
            self.audit(conn, "kb.delete", kb_id, kb.name, {"documents": kb.document_count, "chunks": kb.chunk_count})
            return kb

    def recount(self, kb_id: str) -> KnowledgeBase:
        """Recount the denormalised stats from the documents and chunks tables."""
        with self.base.write() as conn:
            self.recount_stats(conn, kb_id)
            return self.kb_row(conn, kb_id)

    def recount_stats(self, conn: Connection, kb_id: str) -> None:
        """Recount a KB's denormalised stats, inside the caller's transaction."""
        sql = self.db.sql
        docs, size = conn.execute(
            sql("SELECT count(*), coalesce(sum(size_bytes), 0) FROM kb_documents WHERE kb_id = ?"), (kb_id,)
        ).fetchone()
        chunks = conn.execute(sql("SELECT count(*) FROM kb_chunks WHERE kb_id = ?"), (kb_id,)).fetchone()[0]
        conn.execute(
            sql(
                "UPDATE knowledge_bases SET document_count = ?, chunk_count = ?, total_bytes = ?, "
                "updated_at = ? WHERE id = ? AND (document_count <> ? OR chunk_count <> ? OR total_bytes <> ?)"
            ),
            (docs, chunks, size, self.db.now(), kb_id, docs, chunks, size),
        )

    def bump_stats(self, conn: Connection, kb_id: str, *, docs: int = 0, chunks: int = 0, size: int = 0) -> None:
        """Move the denormalised stats by a delta, inside the transaction that changed them."""
        conn.execute(
            self.db.sql(
                "UPDATE knowledge_bases SET document_count = document_count + ?, "
                "chunk_count = chunk_count + ?, total_bytes = total_bytes + ?, updated_at = ? "
                "WHERE id = ?"
            ),
            (docs, chunks, size, self.db.now(), kb_id),
        )


def embedding_config_snapshot(config: dict[str, Any] | None) -> dict[str, Any]:
    """Validate and complete a KB's embedding and chunking snapshot."""
    config = dict(config or {})
    unknown = set(config) - KNOWN_CONFIG
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


def snapshot(config: dict[str, Any]) -> dict[str, Any]:
    """kbdesk's keys validated; other keys a team server keeps there (provider_config_id…) kept."""
    extra = {k: v for k, v in config.items() if k not in KNOWN_CONFIG}
    known = embedding_config_snapshot({k: v for k, v in config.items() if k in KNOWN_CONFIG})
    return {**extra, **known}
