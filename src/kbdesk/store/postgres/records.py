"""The Postgres store's KB records: :class:`kbdesk.store.core.records.Records` with a KB's
delete as a tombstone and a purge (:mod:`.tombstones` says why), and the owner's reads by
id leaving tombstoned KBs out."""

from __future__ import annotations

from contextlib import suppress
from typing import Protocol

from kbdesk.errors import NotFoundError
from kbdesk.models import KnowledgeBase
from kbdesk.store.api import TeamLogin
from kbdesk.store.core.audit import AuditLog
from kbdesk.store.core.compose import Base
from kbdesk.store.core.parts import ChunkStorage
from kbdesk.store.core.records import Records
from kbdesk.store.dbapi import Connection
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.tombstones import FORGET, GONE, PURGE_LOCK_WAIT_MS, TABLE, purge
from kbdesk.store.postgres.vectors import PgVectorIndex

__all__ = ["LoggedIn", "PgRecords"]


class LoggedIn(Base, Protocol):
    """The Postgres store as its records see it: also who its connection logged in as."""

    @property
    def session(self) -> TeamLogin: ...
    def connection(self) -> PgConnection: ...


class PgRecords(Records):
    """The Postgres store's KB records: a KB's delete is a tombstone, then a purge (above),
    and the owner's reads by id leave tombstoned KBs out (row security does it for kbdesk
    users; the owner — a single user, or ``kbdesk serve`` acting for each token's user —
    reads past it)."""

    def __init__(self, base: LoggedIn, chunks: ChunkStorage, vectors: PgVectorIndex, log: AuditLog) -> None:
        super().__init__(base, chunks, vectors, log)
        self.login = base
        self.pg_vectors = vectors

    def _a_user(self) -> bool:
        """Whether the store logged in as a kbdesk user (row security applies to it)."""
        return self.login.session.kind == "user"

    def delete_kb(self, kb_id: str) -> KnowledgeBase:
        """Delete a KB with its documents, chunks, keyword rows, vectors and index."""
        user = self._a_user()
        with self.base.write() as conn:
            kb = self.kb_row(conn, kb_id)
            self.policy.check_manage(kb)
            # the audit row first: once the tombstone is in, the KB is no longer one a user reads
            self.audit(conn, "kb.delete", kb_id, kb.name, {"documents": kb.document_count, "chunks": kb.chunk_count})
            if user:
                marked = conn.execute(f"SELECT {FORGET}(%s)", (kb_id,)).fetchone()[0]
            else:
                marked = conn.execute(
                    f"INSERT INTO {TABLE}(id, deleted_by) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
                    (kb_id, self.base.local_user_id),
                ).fetchone()
            if not marked:
                raise NotFoundError(f"no knowledge base with id '{kb_id}'")  # deleted meanwhile
            if user:
                self.vectors.drop(conn, kb_id)  # a user's: forgets the KB's cached index state only
        purge(self.login.connection())
        if not user:
            drop_indexes(self.login.connection(), self.pg_vectors, kb_id)
        return kb

    def kb_row(self, conn: Connection, kb_id: str) -> KnowledgeBase:
        """A KB's row, none once tombstoned (for the owner too)."""
        kb = super().kb_row(conn, kb_id)
        if self._a_user():
            return kb  # row security already left it out
        if conn.execute(f"SELECT {GONE}(%s)", (kb.id,)).fetchone()[0]:
            raise NotFoundError(f"no knowledge base with id '{kb_id}'")
        return kb


def drop_indexes(conn: PgConnection, vectors: PgVectorIndex, kb_id: str) -> None:
    """The owner's vector indexes of a KB whose rows are gone, if they can go without a wait
    (``DROP INDEX`` locks the whole chunks table: anyone's open transaction that read it
    holds that up); else ``pg setup`` drops them (:func:`kbdesk.store.postgres.vectors.drop_orphans`)."""
    with suppress(Exception), conn.transaction():
        conn.execute(f"SET LOCAL lock_timeout = {PURGE_LOCK_WAIT_MS}")
        if not conn.execute("SELECT 1 FROM knowledge_bases WHERE id = %s", (kb_id,)).fetchone():
            vectors.drop(conn, kb_id)
