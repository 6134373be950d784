"""Conversations (the seed's channels), their messages and tool calls, their KB toggles
and the chat's small settings, for both engines.

A conversation is a row of ``channels`` owned by one user; its messages, tool calls
and KB toggles (``channel_knowledge_bases``, seed 000 §8) go with it. Rows only: what
the bindings mean (the resolution chain) is :mod:`kbdesk.chat.resolve`. The chat's small
settings are each engine's own (:class:`kbdesk.store.api.Settings`: a local file keeps
one user's settings, a team server one set per user).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.store.chat import ROLES, STATUSES, UNSET, ChatMessage, Conversation, ToolCallRecord, clean_title
from kbdesk.store.core.compose import Base
from kbdesk.store.core.own_rows import OwnRows
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.ids import new_id
from kbdesk.store.personas import check_retrieval, filters_in, filters_out

_CONV = "id, title, persona_id, project_id, created_at, updated_at, retrieval, filters"
_MSG = "id, channel_id, role, content, tool_call_id, status, model, sources, created_at"
_COUNT = "(SELECT count(*) FROM {chat_messages} m WHERE m.channel_id = c.id)"


class Conversations:
    """This user's conversations, their messages, tool calls and KB toggles."""

    def __init__(self, base: Base, rows: OwnRows) -> None:
        self.base = base
        self.rows = rows

    @property
    def db(self) -> Engine:
        return self.base.db

    def _conversation(self, row: Sequence[Any]) -> Conversation:
        """A row of (_CONV columns…, message count)."""
        values = self.rows.row(row, (4, 5))
        conv_id, title, persona_id, project_id, created, updated, retrieval, filters = values[:8]
        return Conversation(
            conv_id,
            title,
            persona_id,
            project_id,
            created,
            updated,
            message_count=int(values[8]),
            retrieval=retrieval,
            filters=filters_out(filters),
        )

    # ── conversations ──────────────────────────────────────────────────────────
    def create_conversation(
        self, title: str = "", *, persona_id: str | None = None, project_id: str | None = None
    ) -> Conversation:
        conv_id, now = new_id(), self.db.now()
        with self.base.write() as conn:
            conn.execute(
                self.db.sql(
                    "INSERT INTO channels(id, title, owner_id, persona_id, project_id, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                (conv_id, self.db.text(clean_title(title)), self.base.local_user_id, persona_id, project_id, now, now),
            )
        return self.get_conversation(conv_id)

    def get_conversation(self, conv_id: str) -> Conversation:
        return self.find_conversation(conv_id)

    def find_conversation(self, ref: str) -> Conversation:
        """This user's conversation by id, title (one only) or a unique id prefix."""
        row = self.rows.find("channels", _CONV, ref, "conversation", "title")
        count = (
            self.base.connection()
            .execute(self.db.table_sql("SELECT count(*) FROM {chat_messages} WHERE channel_id = ?"), (row[0],))
            .fetchone()[0]
        )
        return self._conversation([*row, count])

    def list_conversations(self, project_id: str | None = None) -> list[Conversation]:
        where, args = "c.owner_id = ?", [self.base.local_user_id]
        if project_id:
            where, args = where + " AND c.project_id = ?", [*args, project_id]
        cols = ", ".join(f"c.{c}" for c in _CONV.split(", "))
        rows = (
            self.base.connection()
            .execute(
                self.db.table_sql(
                    f"SELECT {cols}, {_COUNT} FROM channels c WHERE {where} "
                    "ORDER BY c.updated_at DESC, c.created_at DESC"
                ),
                args,
            )
            .fetchall()
        )
        return [self._conversation(r) for r in rows]

    def update_conversation(
        self,
        conv_id: str,
        *,
        title: Any = UNSET,
        persona_id: Any = UNSET,
        project_id: Any = UNSET,
        retrieval: Any = UNSET,
        filters: Any = UNSET,
    ) -> Conversation:
        changes: dict[str, Any] = {}
        if retrieval is not UNSET:
            changes["retrieval"] = check_retrieval(retrieval)
        if filters is not UNSET:
            changes["filters"] = filters_in(filters)
        if title is not UNSET:
            changes["title"] = self.db.text(clean_title(title))
        if persona_id is not UNSET:
            changes["persona_id"] = persona_id
        if project_id is not UNSET:
            changes["project_id"] = project_id
        with self.base.write() as conn:
            conv_id = self.get_conversation(conv_id).id
            if changes:
                sets = ", ".join(f"{c} = ?" for c in changes)
                conn.execute(
                    self.db.sql(f"UPDATE channels SET {sets}, updated_at = ? WHERE id = ?"),
                    (*changes.values(), self.db.now(), conv_id),
                )
        return self.get_conversation(conv_id)

    def delete_conversation(self, conv_id: str) -> Conversation:
        return self.rows.delete("channels", self.get_conversation(conv_id))

    # ── messages and tool calls ────────────────────────────────────────────────
    def add_message(
        self,
        channel_id: str,
        role: str,
        content: str = "",
        *,
        tool_call_id: str | None = None,
        status: str = "complete",
        model: str | None = None,
        sources: list[dict[str, Any]] | None = None,
        tool_calls: Iterable[tuple[str, str, str]] = (),
    ) -> ChatMessage:
        """Append a message; ``tool_calls`` are the (call_id, name, arguments) it asks for."""
        if role not in ROLES or status not in STATUSES:
            raise InvalidInputError(f"bad message role {role!r} or status {status!r}")
        msg_id, now, db = new_id(), self.db.now(), self.db
        with self.base.write() as conn:
            conn.execute(
                db.table_sql(f"INSERT INTO {{chat_messages}}({_MSG}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                (
                    msg_id,
                    channel_id,
                    role,
                    db.text(content),
                    tool_call_id,
                    status,
                    model,
                    db.json_in(sources or []),
                    now,
                ),
            )
            db.executemany(
                conn,
                f"INSERT INTO {db.table('chat_tool_calls')}(id, message_id, position, call_id, "
                "name, arguments, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (new_id(), msg_id, position, call_id, name, db.text(arguments), now)
                    for position, (call_id, name, arguments) in enumerate(tool_calls)
                ],
            )
            conn.execute(db.sql("UPDATE channels SET updated_at = ? WHERE id = ?"), (now, channel_id))
        return self.get_message(msg_id)

    def update_message(
        self,
        message_id: str,
        *,
        content: str | None = None,
        status: str | None = None,
        sources: list[dict[str, Any]] | None = None,
    ) -> None:
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = self.db.text(content)
        if status is not None:
            if status not in STATUSES:
                raise InvalidInputError(f"bad message status {status!r}")
            changes["status"] = status
        if sources is not None:
            changes["sources"] = self.db.json_in(sources)
        if changes:
            with self.base.write() as conn:
                sets = ", ".join(f"{c} = ?" for c in changes)
                conn.execute(
                    self.db.table_sql(f"UPDATE {{chat_messages}} SET {sets} WHERE id = ?"),
                    (*changes.values(), message_id),
                )

    def set_tool_call_status(self, message_id: str, call_id: str, status: str, error: str | None = None) -> None:
        with self.base.write() as conn:
            conn.execute(
                self.db.table_sql(
                    "UPDATE {chat_tool_calls} SET status = ?, error = ? WHERE message_id = ? AND call_id = ?"
                ),
                (status, self.db.text(error), message_id, call_id),
            )

    def get_message(self, message_id: str) -> ChatMessage:
        """One of this user's messages, with its tool calls."""
        found = self._messages("m.id = ?", [message_id]) if self.db.valid_id(message_id) else []
        if not found:
            raise NotFoundError(f"no message '{message_id}'")
        return found[0]

    def messages(self, channel_id: str, *, limit: int | None = None) -> list[ChatMessage]:
        """A conversation's messages, oldest first (the last ``limit`` when given)."""
        return self._messages("m.channel_id = ?", [channel_id], limit)

    def _messages(self, where: str, args: list[Any], limit: int | None = None) -> list[ChatMessage]:
        """This user's messages matching ``where``, oldest first (the last ``limit``)."""
        cols = ", ".join(f"m.{c}" for c in _MSG.split(", "))
        sql = (
            f"SELECT {cols} FROM {{chat_messages}} m JOIN channels c ON c.id = m.channel_id "
            f"WHERE {where} AND c.owner_id = ? ORDER BY m.seq DESC"
        )
        args = [*args, self.base.local_user_id]
        if limit is not None:
            sql, args = sql + " LIMIT ?", [*args, int(limit)]
        rows = self.base.connection().execute(self.db.table_sql(sql), args).fetchall()
        return self._with_calls([self._message(r) for r in reversed(rows)])

    def _message(self, row: Sequence[Any]) -> ChatMessage:
        values = self.rows.row(row, (8,))
        values[7] = self.db.json_out(values[7])
        return ChatMessage(*values)

    def _with_calls(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        ids = [m.id for m in messages if m.role == "assistant"]
        by_id = {m.id: m for m in messages}
        step = self.db.list_chunk
        for start in range(0, len(ids), step):
            where, args = self.db.in_list("message_id", ids[start : start + step], ids=True)
            for msg_id, call_id, name, arguments, status, error in self.base.connection().execute(
                self.db.table_sql(
                    f"SELECT message_id, call_id, name, arguments, status, error FROM {{chat_tool_calls}} "
                    f"WHERE {where} ORDER BY message_id, position"
                ),
                args,
            ):
                by_id[msg_id].tool_calls.append(ToolCallRecord(call_id, name, arguments, status, error))
        return messages

    # ── conversation KB toggles (seed 000 §8, channel_knowledge_bases) ─────────
    def channel_kbs(self, channel_id: str) -> list[dict[str, Any]]:
        """The seed's ChannelKB objects: ``kb_id, kb_name, enabled, document_count``."""
        rows = (
            self.base.connection()
            .execute(
                self.db.sql(
                    "SELECT k.id, k.name, c.enabled, k.document_count FROM channel_knowledge_bases c "
                    "JOIN knowledge_bases k ON k.id = c.kb_id JOIN channels ch ON ch.id = c.channel_id "
                    "WHERE c.channel_id = ? AND ch.owner_id = ? ORDER BY lower(k.name), k.id"
                ),
                (channel_id, self.base.local_user_id),
            )
            .fetchall()
        )
        return [{"kb_id": r[0], "kb_name": r[1], "enabled": bool(r[2]), "document_count": r[3]} for r in rows]

    def set_channel_kb(self, channel_id: str, kb_id: str, enabled: bool) -> None:
        with self.base.write() as conn:
            self._bind(conn, channel_id, [(kb_id, enabled)])

    def set_channel_kbs(self, channel_id: str, enabled: Iterable[str], disabled: Iterable[str] = ()) -> None:
        """Replace the conversation's bindings: ``enabled`` on, ``disabled`` explicitly off."""
        with self.base.write() as conn:
            self.db.delete(conn, "channel_knowledge_bases", "channel_id = ?", (channel_id,))
            self._bind(conn, channel_id, [(k, False) for k in disabled] + [(k, True) for k in enabled])

    def _bind(self, conn: Connection, channel_id: str, rows: Sequence[tuple[str, bool]]) -> None:
        """On or off for each (kb_id, enabled); a KB named twice takes its last."""
        self.db.executemany(
            conn,
            "INSERT INTO channel_knowledge_bases(channel_id, kb_id, enabled, added_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (channel_id, kb_id) DO UPDATE SET "
            "enabled = excluded.enabled",
            [(channel_id, kb_id, self.db.bool_in(on), self.db.now()) for kb_id, on in rows],
        )
