"""The chat's rows as protocols, one per repository (:mod:`kbdesk.store.core.chat`,
:mod:`~kbdesk.store.core.personas`, :mod:`~kbdesk.store.core.notes`, each engine's
settings): :class:`kbdesk.store.api.ChatStore` is a store plus all four. Each row is
its user's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from kbdesk.filters import Filters
from kbdesk.store.chat import ChatMessage, Conversation, Persona, Project
from kbdesk.store.notes import Note

__all__ = ["ConversationRows", "NoteRows", "PersonaRows", "Settings"]


class ConversationRows(Protocol):
    """Conversations (the seed's channels), their messages and tool calls, their KB toggles."""

    # (``...`` defaults: left out, the value stays as it is; None clears it)
    def create_conversation(
        self, title: str = "", *, persona_id: str | None = None, project_id: str | None = None
    ) -> Conversation: ...
    def get_conversation(self, conv_id: str) -> Conversation: ...
    def find_conversation(self, ref: str) -> Conversation: ...
    def list_conversations(self, project_id: str | None = None) -> list[Conversation]: ...
    def update_conversation(
        self,
        conv_id: str,
        *,
        title: str | None = ...,
        persona_id: str | None = ...,
        project_id: str | None = ...,
        retrieval: str | None = ...,
        filters: Filters | dict[str, Any] | None = ...,
    ) -> Conversation: ...
    def delete_conversation(self, conv_id: str) -> Conversation: ...
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
    ) -> ChatMessage: ...
    def update_message(
        self,
        message_id: str,
        *,
        content: str | None = None,
        status: str | None = None,
        sources: list[dict[str, Any]] | None = None,
    ) -> None: ...
    def set_tool_call_status(self, message_id: str, call_id: str, status: str, error: str | None = None) -> None: ...
    def get_message(self, message_id: str) -> ChatMessage: ...
    def messages(self, channel_id: str, *, limit: int | None = None) -> list[ChatMessage]: ...
    def channel_kbs(self, channel_id: str) -> list[dict[str, Any]]: ...
    def set_channel_kb(self, channel_id: str, kb_id: str, enabled: bool) -> None: ...
    def set_channel_kbs(self, channel_id: str, enabled: Iterable[str], disabled: Iterable[str] = ()) -> None: ...


class PersonaRows(Protocol):
    """Personas and projects with their KB bindings."""

    def create_persona(
        self,
        name: str,
        system_prompt: str = "",
        *,
        provider: str | None = None,
        model: str | None = None,
        retrieval: str | None = None,
        max_tokens: int | None = None,
        filters: Filters | dict[str, Any] | None = None,
    ) -> Persona: ...
    def find_persona(self, ref: str) -> Persona: ...
    def list_personas(self) -> list[Persona]: ...
    def update_persona(
        self,
        persona_id: str,
        *,
        name: str | None = None,
        system_prompt: str | None = None,
        provider: str | None = ...,
        model: str | None = ...,
        retrieval: str | None = ...,
        max_tokens: int | None = ...,
        kbs: Sequence[tuple[str, bool]] | None = None,
        filters: Filters | dict[str, Any] | None = ...,
    ) -> Persona: ...
    def delete_persona(self, persona_id: str) -> Persona: ...
    def create_project(self, name: str, description: str = "") -> Project: ...
    def find_project(self, ref: str) -> Project: ...
    def list_projects(self) -> list[Project]: ...
    def update_project(
        self,
        project_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        kbs: Sequence[str] | None = None,
    ) -> Project: ...
    def delete_project(self, project_id: str) -> Project: ...


class NoteRows(Protocol):
    """Notes, one vector per note, and their two rankings."""

    def create_note(self, content: str, title: str = "") -> Note: ...
    def update_note(self, note_id: str, *, content: str | None = None, title: str | None = None) -> Note: ...
    def delete_note(self, note_id: str) -> Note: ...
    def find_note(self, ref: str) -> Note: ...
    def list_notes(self, limit: int | None = None) -> list[Note]: ...
    def notes_by_id(self, ids: Sequence[str]) -> dict[str, Note]: ...
    def note_count(self) -> int: ...
    def note_keyword_candidates(self, text: str, k: int) -> list[tuple[str, float]]: ...
    def note_vector_candidates(self, model: str, query: np.ndarray, k: int) -> list[tuple[str, float]]: ...
    def notes_without_vector(self, model: str, limit: int) -> list[Note]: ...
    def put_note_vectors(self, model: str, items: Sequence[tuple[str, str, np.ndarray]]) -> int: ...


class Settings(Protocol):
    """The chat's small settings (what kbdesk learned about models): a local file keeps
    its one user's, a team server one set per user."""

    def get_setting(self, key: str) -> str | None: ...
    def set_setting(self, key: str, value: str) -> None: ...
