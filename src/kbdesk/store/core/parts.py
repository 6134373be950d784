"""What the pieces of a store need from one another, declared once.

A store is assembled from small classes: the core's (records, documents, claims, the
embedding cache, bulk transfer, lookup, conversations, personas, notes) and each
engine's own (connections and transactions, how chunks, keyword rows and vectors are
stored). Every piece inherits :class:`StoreParts`, which names what the assembled
store provides — its engine object, its access policy, its transactions, and the few
helpers one piece calls on another — so each piece type-checks on its own and an engine
that forgets a part fails the type check, not a user's command.

The declarations exist for the type checker only (``TYPE_CHECKING``): at run time
:class:`StoreParts` is empty, so it never shadows the piece that implements a method,
wherever that piece sits in the store's bases.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kbdesk.models import ChunkInput, Document, KnowledgeBase
from kbdesk.store.api import Policy, VectorIndex
from kbdesk.store.dbapi import Connection

if TYPE_CHECKING:
    from kbdesk.store.engine import Engine


@dataclass
class VectorChanges:
    """What one write did to the KBs' vectors, for the engine to bring its index along."""

    fresh: dict[str, bool] = field(default_factory=dict)
    added: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)
    removed: dict[str, list[int]] = field(default_factory=dict)
    kbs: set[str] = field(default_factory=set)


AuditEntry = tuple[str, str | None, str | None, dict[str, Any] | None]
"""(action, kb id, target, details) of one audit row."""


class StoreParts:
    """The assembled store, as each of its pieces sees it."""

    kind: str
    """"sqlite" or "postgres"."""
    db: Engine
    """The engine object: placeholders, ids, JSON, time, savepoints, side-table names."""
    policy: Policy
    local_user_id: str
    vectors: VectorIndex
    """The engine's vector index (kbdesk.store.sqlite.vectors' for SQLite, pgvector's for Postgres;
    each engine's pieces name its own)."""

    if TYPE_CHECKING:
        # ── the engine: connections and transactions ───────────────────────────
        def connection(self) -> Connection: ...
        def write(self) -> AbstractContextManager[Connection]: ...
        def read(self) -> AbstractContextManager[Connection]: ...

        # ── records (kbdesk.store.core.records) ────────────────────────────────
        def audit(
            self,
            conn: Connection,
            action: str,
            kb_id: str | None,
            target: str | None = None,
            details: dict[str, Any] | None = None,
        ) -> None: ...
        def audit_many(self, conn: Connection, entries: Sequence[AuditEntry]) -> None: ...
        def _get_kb(self, conn: Connection, kb_id: str) -> KnowledgeBase: ...
        def _bump(self, conn: Connection, kb_id: str, *, docs: int = 0, chunks: int = 0, size: int = 0) -> None: ...
        def _recount(self, conn: Connection, kb_id: str) -> None: ...

        # ── documents (kbdesk.store.core.documents) ────────────────────────────
        def get_document(self, doc_id: str) -> Document: ...
        def _doc(self, row: Sequence[Any]) -> Document: ...
        def _get_document(self, conn: Connection, doc_id: str, *, lock: bool = False) -> Document: ...
        def _insert_chunks_many(
            self,
            conn: Connection,
            kb_id: str,
            docs: list[tuple[str, list[ChunkInput], list[bytes] | None]],
            now: Any,
            changes: VectorChanges,
        ) -> None: ...
        def _delete_chunks_many(
            self, conn: Connection, kb_id: str, doc_ids: list[str], changes: VectorChanges
        ) -> dict[str, int]: ...
        def _delete_chunks(self, conn: Connection, kb_id: str, doc_id: str, changes: VectorChanges) -> int: ...
        def _vectors_touch(self, conn: Connection, kb_id: str, changes: VectorChanges) -> None: ...
        def _vectors_written(self, conn: Connection, changes: VectorChanges) -> None: ...
        def _vectors_committed(self, changes: VectorChanges) -> None: ...
        def _vector_blobs(
            self, conn: Connection, kb: KnowledgeBase, vectors: Any, count: int
        ) -> list[bytes] | None: ...
