"""What the pieces of a store need from one another, declared once.

The composed repositories (:mod:`kbdesk.store.core.compose`) are given the protocols
declared here: :class:`ChunkStorage` and :class:`BulkStorage` (the engine's own objects:
how chunks, keyword rows and vectors are stored, how whole documents move) and
:class:`KbRecords` (what they ask of the KB records), so each repository type-checks on
its own and an engine that forgets a part fails the type check, not a user's command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kbdesk.models import ChunkInput, KnowledgeBase
from kbdesk.store.api import VectorIndex
from kbdesk.store.core.audit import AuditEntry
from kbdesk.store.dbapi import Connection


@dataclass
class VectorChanges:
    """What one write did to the KBs' vectors, for the engine to bring its index along."""

    fresh: dict[str, bool] = field(default_factory=dict)
    added: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)
    removed: dict[str, list[int]] = field(default_factory=dict)
    kbs: set[str] = field(default_factory=set)


ChunkBatch = list[tuple[str, list[ChunkInput], list[bytes] | None]]
"""The chunks of documents of one KB: (document id, chunks, unit vectors as bytes or None)."""


class ChunkStorage(Protocol):
    """How an engine stores chunks, their keyword rows and vectors, and keeps its vector
    index along (:class:`kbdesk.store.sqlite.chunks.SqliteChunks`,
    :class:`kbdesk.store.postgres.chunks.PgChunks`): what the KB records and documents ask."""

    def check_config(self, config: dict[str, Any]) -> None:
        """Refuse a KB configuration this engine cannot store."""
        ...

    def kb_created(self, conn: Connection, kb_id: str, config: dict[str, Any]) -> None:
        """Engine bookkeeping for a new KB, inside its transaction."""
        ...

    def lock_names(self, conn: Connection, name: str) -> None:
        """Serialise checks of a KB ``name`` with the writes they guard."""
        ...

    def learn_dimensions(self, conn: Connection, kb: KnowledgeBase, dims: int) -> None:
        """Record the KB's vector dimension on its first vectors; refuse another one."""
        ...

    def insert_many(self, conn: Connection, kb_id: str, docs: ChunkBatch, now: Any, changes: VectorChanges) -> None:
        """Store the chunks of documents of one KB with their keyword rows and vectors (in bulk)."""
        ...

    def delete_many(self, conn: Connection, kb_id: str, doc_ids: list[str], changes: VectorChanges) -> dict[str, int]:
        """Delete the chunks of documents of one KB (keyword rows and vectors with them);
        how many went, per document that had any."""
        ...

    def vectors_touch(self, conn: Connection, kb_id: str, changes: VectorChanges) -> None:
        """A write is about to change ``kb_id``'s vectors."""
        ...

    def vectors_written(self, conn: Connection, changes: VectorChanges) -> None:
        """Bring the vector index along, inside the transaction."""
        ...

    def vectors_committed(self, changes: VectorChanges) -> None:
        """Bring the vector index along, after the commit."""
        ...


class BulkStorage(Protocol):
    """How an engine moves whole documents in and out (export and import,
    :class:`kbdesk.store.core.bulk.Transfer`), and names a file's document."""

    def source_key(self, path: Path) -> str:
        """The source a file's document is known by in this store."""
        ...

    def incoming_source(self, source: str | None) -> str | None:
        """A copied document's source as this store keeps it (None: none)."""
        ...

    def export_vectors(self, conn: Connection, sql: str, args: list[Any], dims: int | None) -> list[Sequence[Any]]:
        """Run the chunk query (``{vector}`` stands for the vector column) with each
        vector as unit float32 bytes at ``dims``, or None."""
        ...

    def import_chunks(
        self, conn: Connection, kb: KnowledgeBase, docs: Sequence[dict[str, Any]], changes: VectorChanges
    ) -> None:
        """Store the documents' chunks under their own ids, with keyword rows and vectors."""
        ...

    def document_blobs(self, conn: Connection, doc_ids: list[str]) -> dict[str, bytes]:
        """Original bytes the database holds, by document id (none on an engine that keeps files)."""
        ...

    def store_blobs(self, conn: Connection, blobs: list[tuple[str, bytes]]) -> None:
        """Keep original bytes in the database (an engine that keeps files leaves them to the caller)."""
        ...


class KbRecords(Protocol):
    """What the documents, the transfer and the cache ask of the store's KB records
    (:class:`kbdesk.store.core.records.Records`): a KB read in a transaction, its
    stats moved or recounted, audit rows, and the vector index to drop."""

    @property
    def vectors(self) -> VectorIndex: ...
    def kb_row(self, conn: Connection, kb_id: str) -> KnowledgeBase: ...
    def bump_stats(self, conn: Connection, kb_id: str, *, docs: int = 0, chunks: int = 0, size: int = 0) -> None: ...
    def recount_stats(self, conn: Connection, kb_id: str) -> None: ...
    def audit(
        self,
        conn: Connection,
        action: str,
        kb_id: str | None,
        target: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None: ...
    def audit_many(self, conn: Connection, entries: Sequence[AuditEntry]) -> None: ...
