"""Conversations (the seed's channels), their messages and tool calls: the records.

The SQL that keeps them — and their KB toggles — is written once for both engines in
:mod:`kbdesk.store.core.chat`; personas and projects are :mod:`kbdesk.store.personas`.
What the bindings mean (the resolution chain) is :mod:`kbdesk.chat.resolve`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kbdesk.store.personas import UNSET, Persona, Project, check_retrieval

__all__ = [
    "ROLES",
    "STATUSES",
    "UNSET",
    "ChatMessage",
    "Conversation",
    "Persona",
    "Project",
    "ToolCallRecord",
    "check_retrieval",
    "clean_title",
]

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
    filters: dict[str, Any] | None = None
    """Default filters of its searches (the JSON form); None: the persona's, if any."""

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


def clean_title(title: Any) -> str:
    """A conversation title: one line, no control characters, at most 200 characters."""
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", str(title or "")).strip()
    return text[:200]
