"""Conversations (the seed's channels), their messages and tool calls, and their KB
toggles — in the SQLite store (personas and projects: :mod:`kbdesk.store.personas`).

Mixed into :class:`kbdesk.store.sqlite.SqliteStore`. Rows only: what the bindings mean
(the resolution chain) is :mod:`kbdesk.chat.resolve`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.store.personas import UNSET, Persona, PersonasMixin, Project, _marks, _new_id, _now, check_retrieval

__all__ = ["UNSET", "ChatMessage", "ChatMixin", "Conversation", "Persona", "Project", "ToolCallRecord"]

ROLES = ("user", "assistant", "tool", "notice")
STATUSES = ("complete", "error", "cancelled")


@dataclass
class Conversation:
    id: str
    title: str
    persona_id: str | None
    project_id: str | None
    created_at: str
    updated_at: str
    message_count: int = 0
    retrieval: str | None = None
    """auto, tool, always or off; None: the persona's or config's policy applies."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ToolCallRecord:
    call_id: str
    name: str
    arguments: str
    status: str = "pending"
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ChatMessage:
    id: str
    channel_id: str
    role: str
    content: str
    tool_call_id: str | None
    status: str
    model: str | None
    sources: list[dict[str, Any]]
    created_at: str
    tool_calls: list[ToolCallRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        return out


_CONV = "id, title, persona_id, project_id, created_at, updated_at, retrieval"
_MSG = "id, channel_id, role, content, tool_call_id, status, model, sources, created_at"


class ChatMixin(PersonasMixin):
    """Needs ``write()``, ``connection()`` and ``local_user_id`` from the store."""

    # ── conversations ──────────────────────────────────────────────────────────
    def create_conversation(self, title: str = "", *, persona_id: str | None = None,
                            project_id: str | None = None) -> Conversation:
        conv_id, now = _new_id(), _now()
        with self.write() as conn:
            conn.execute("INSERT INTO channels(id, title, owner_id, persona_id, project_id, created_at, updated_at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (conv_id, _title(title), self.local_user_id, persona_id, project_id, now, now))
        return self.get_conversation(conv_id)

    def get_conversation(self, conv_id: str) -> Conversation:
        return self.find_conversation(conv_id)

    def find_conversation(self, ref: str) -> Conversation:
        row = self._find_row("channels", _CONV, ref, "conversation", "title")
        count = self.connection().execute("SELECT count(*) FROM chat_messages WHERE channel_id = ?",
                                          (row[0],)).fetchone()[0]
        return Conversation(*row[:6], message_count=count, retrieval=row[6])

    def list_conversations(self, project_id: str | None = None) -> list[Conversation]:
        where, args = ("WHERE c.project_id = ?", (project_id,)) if project_id else ("", ())
        rows = self.connection().execute(
            f"SELECT c.id, c.title, c.persona_id, c.project_id, c.created_at, c.updated_at, "
            f"(SELECT count(*) FROM chat_messages m WHERE m.channel_id = c.id), c.retrieval FROM channels c {where} "
            f"ORDER BY c.updated_at DESC, c.created_at DESC", args).fetchall()
        return [Conversation(*r) for r in rows]

    def update_conversation(self, conv_id: str, *, title: Any = UNSET, persona_id: Any = UNSET,
                            project_id: Any = UNSET, retrieval: Any = UNSET) -> Conversation:
        changes: dict[str, Any] = {}
        if retrieval is not UNSET:
            changes["retrieval"] = check_retrieval(retrieval)
        if title is not UNSET:
            changes["title"] = _title(title)
        if persona_id is not UNSET:
            changes["persona_id"] = persona_id
        if project_id is not UNSET:
            changes["project_id"] = project_id
        with self.write() as conn:
            self.get_conversation(conv_id)
            if changes:
                sets = ", ".join(f"{c} = ?" for c in changes)
                conn.execute(f"UPDATE channels SET {sets}, updated_at = ? WHERE id = ?",
                             (*changes.values(), _now(), conv_id))
        return self.get_conversation(conv_id)

    # ── small settings of the chat (what kbdesk learned about models) ──────────
    def get_setting(self, key: str) -> str | None:
        row = self.connection().execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        with self.write() as conn:
            conn.execute("INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                         "value = excluded.value", (key, value))

    def delete_conversation(self, conv_id: str) -> Conversation:
        conv = self.get_conversation(conv_id)
        with self.write() as conn:
            conn.execute("DELETE FROM channels WHERE id = ?", (conv.id,))
        return conv

    # ── messages and tool calls ────────────────────────────────────────────────
    def add_message(self, channel_id: str, role: str, content: str = "", *, tool_call_id: str | None = None,
                    status: str = "complete", model: str | None = None,
                    sources: list[dict[str, Any]] | None = None,
                    tool_calls: Iterable[tuple[str, str, str]] = ()) -> ChatMessage:
        """Append a message; ``tool_calls`` are the (call_id, name, arguments) it asks for."""
        if role not in ROLES or status not in STATUSES:
            raise InvalidInputError(f"bad message role {role!r} or status {status!r}")
        msg_id, now = _new_id(), _now()
        with self.write() as conn:
            conn.execute(f"INSERT INTO chat_messages({_MSG}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (msg_id, channel_id, role, content, tool_call_id, status, model,
                          json.dumps(sources or []), now))
            for position, (call_id, name, arguments) in enumerate(tool_calls):
                conn.execute("INSERT INTO chat_tool_calls(id, message_id, position, call_id, name, arguments, "
                             "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (_new_id(), msg_id, position, call_id, name, arguments, now))
            conn.execute("UPDATE channels SET updated_at = ? WHERE id = ?", (now, channel_id))
        return self.get_message(msg_id)

    def update_message(self, message_id: str, *, content: str | None = None, status: str | None = None,
                       sources: list[dict[str, Any]] | None = None) -> None:
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = content
        if status is not None:
            if status not in STATUSES:
                raise InvalidInputError(f"bad message status {status!r}")
            changes["status"] = status
        if sources is not None:
            changes["sources"] = json.dumps(sources)
        if changes:
            with self.write() as conn:
                sets = ", ".join(f"{c} = ?" for c in changes)
                conn.execute(f"UPDATE chat_messages SET {sets} WHERE id = ?", (*changes.values(), message_id))

    def set_tool_call_status(self, message_id: str, call_id: str, status: str, error: str | None = None) -> None:
        with self.write() as conn:
            conn.execute("UPDATE chat_tool_calls SET status = ?, error = ? WHERE message_id = ? AND call_id = ?",
                         (status, error, message_id, call_id))

    def get_message(self, message_id: str) -> ChatMessage:
        row = self.connection().execute(f"SELECT {_MSG} FROM chat_messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no message '{message_id}'")
        return self._with_calls([_message(row)])[0]

    def messages(self, channel_id: str, *, limit: int | None = None) -> list[ChatMessage]:
        """A conversation's messages, oldest first (the last ``limit`` when given)."""
        sql = f"SELECT {_MSG} FROM chat_messages WHERE channel_id = ? ORDER BY seq DESC"
        args: tuple[Any, ...] = (channel_id,)
        if limit is not None:
            sql, args = sql + " LIMIT ?", (channel_id, int(limit))
        rows = self.connection().execute(sql, args).fetchall()
        return self._with_calls([_message(r) for r in reversed(rows)])

    def _with_calls(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        ids = [m.id for m in messages if m.role == "assistant"]
        if ids:
            by_id = {m.id: m for m in messages}
            for msg_id, call_id, name, arguments, status, error in self.connection().execute(
                    f"SELECT message_id, call_id, name, arguments, status, error FROM chat_tool_calls "
                    f"WHERE message_id IN ({_marks(ids)}) ORDER BY message_id, position", ids):
                by_id[msg_id].tool_calls.append(ToolCallRecord(call_id, name, arguments, status, error))
        return messages

    # ── conversation KB toggles (seed 000 §8, channel_knowledge_bases) ─────────
    def channel_kbs(self, channel_id: str) -> list[dict[str, Any]]:
        """The seed's ChannelKB objects: ``kb_id, kb_name, enabled, document_count``."""
        rows = self.connection().execute(
            "SELECT k.id, k.name, c.enabled, k.document_count FROM channel_knowledge_bases c "
            "JOIN knowledge_bases k ON k.id = c.kb_id WHERE c.channel_id = ? ORDER BY k.name COLLATE NOCASE",
            (channel_id,)).fetchall()
        return [{"kb_id": r[0], "kb_name": r[1], "enabled": bool(r[2]), "document_count": r[3]} for r in rows]

    def set_channel_kb(self, channel_id: str, kb_id: str, enabled: bool) -> None:
        with self.write() as conn:
            conn.execute("INSERT INTO channel_knowledge_bases(channel_id, kb_id, enabled, added_at) "
                         "VALUES (?, ?, ?, ?) ON CONFLICT(channel_id, kb_id) DO UPDATE SET enabled = excluded.enabled",
                         (channel_id, kb_id, int(bool(enabled)), _now()))

    def set_channel_kbs(self, channel_id: str, enabled: Iterable[str], disabled: Iterable[str] = ()) -> None:
        """Replace the conversation's bindings: ``enabled`` on, ``disabled`` explicitly off."""
        now = _now()
        with self.write() as conn:
            conn.execute("DELETE FROM channel_knowledge_bases WHERE channel_id = ?", (channel_id,))
            for kb_id, on in [(k, 0) for k in disabled] + [(k, 1) for k in enabled]:
                conn.execute("INSERT OR REPLACE INTO channel_knowledge_bases(channel_id, kb_id, enabled, added_at) "
                             "VALUES (?, ?, ?, ?)", (channel_id, kb_id, on, now))


def _title(title: Any) -> str:
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", str(title or "")).strip()
    return text[:200]


def _message(row: Sequence[Any]) -> ChatMessage:
    values = list(row)
    values[7] = json.loads(values[7])
    return ChatMessage(*values)
