"""The audit log: one row per change to a KB, its documents or a token, written inside
the change's own transaction, for both engines.

:class:`AuditLog` is a repository of its own (given the store's :class:`~.compose.Base`);
the KB records (:class:`kbdesk.store.core.records.Records`) and the document repositories
write through it, and the store offers :meth:`AuditLog.audit` and
:meth:`AuditLog.audit_entries` as its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from kbdesk.store.core.compose import Base
from kbdesk.store.dbapi import Connection

__all__ = ["ACTING_TOKEN", "AuditEntry", "AuditLog"]

ACTING_TOKEN: ContextVar[dict[str, str] | None] = ContextVar("kbdesk_acting_token", default=None)
"""The API token a request of ``kbdesk serve`` acts with (its id, the first characters
shown in ``kbdesk token list``, and whom it was given to): every audit row the request
writes names it, so a change can be traced to the token that made it (on a SQLite
file, where every token acts as its one user, that is the only way to tell)."""

AuditEntry = tuple[str, str | None, str | None, dict[str, Any] | None]
"""(action, kb id, target, details) of one audit row."""

COLUMNS = ("id", "created_at", "user_id", "action", "kb_id", "target", "details")


class AuditLog:
    """The store's audit rows, written as the store's user."""

    def __init__(self, base: Base) -> None:
        self.base = base

    def audit(
        self,
        conn: Connection,
        action: str,
        kb_id: str | None,
        target: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Record a KB operation, inside the caller's write transaction."""
        self.audit_many(conn, [(action, kb_id, target, details)])

    def audit_many(self, conn: Connection, entries: Sequence[AuditEntry]) -> None:
        """Record KB operations ``(action, kb_id, target, details)`` in one statement (the
        details name the API token that acted, when one did: :data:`ACTING_TOKEN`)."""
        db = self.base.db
        now = db.now()
        token = ACTING_TOKEN.get()
        db.executemany(
            conn,
            f"INSERT INTO {db.table('audit_log')}(created_at, user_id, action, kb_id, "
            "target, details) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    now,
                    self.base.local_user_id,
                    action,
                    kb_id,
                    db.text(target),
                    db.json_in({**(details or {}), "token": token} if token else details or {}),
                )
                for action, kb_id, target, details in entries
            ],
        )

    def audit_entries(self, kb_id: str | None = None) -> list[dict[str, Any]]:
        """The audit rows, oldest first (of one KB when ``kb_id`` is given)."""
        db = self.base.db
        sql = f"SELECT {', '.join(COLUMNS)} FROM {db.table('audit_log')}"
        args: tuple[Any, ...] = ()
        if kb_id:
            sql += " WHERE kb_id = ?"
            args = (kb_id,)
        rows = self.base.connection().execute(db.sql(sql + " ORDER BY id"), args).fetchall()
        return [dict(zip(COLUMNS, (r[0], db.time_out(r[1]), *r[2:6], db.json_out(r[6])), strict=True)) for r in rows]
