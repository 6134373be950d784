"""Chat with the knowledge bases: the tool loop, ``kb_search`` and ``note_search``, the KB
resolution chain, conversations, personas, projects and notes. No UI toolkit here.

Start from :class:`ChatService` (``desk.chat()``); a turn is a stream of
:mod:`kbdesk.chat.events` ending in a :class:`TurnFinished` with the :class:`Answer`.
"""

from kbdesk.chat.engine import MAX_ROUNDS, ChatTarget, chat_target
from kbdesk.chat.events import (
    Answer,
    ChatEvent,
    Notice,
    Retrieval,
    Source,
    TextDelta,
    ToolCallFinished,
    ToolCallInfo,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Waiting,
)
from kbdesk.chat.notes import NoteHit, NoteSearch, NoteService
from kbdesk.chat.resolve import ActiveKB, KbToggle, kb_hint, resolve_kbs
from kbdesk.chat.service import ChatService
from kbdesk.chat.tools import KB_SEARCH_TOOL, NOTE_SEARCH_TOOL
from kbdesk.providers.chat import CancelToken, ChatCancelled
from kbdesk.store.chat import ChatMessage, Conversation, Persona, Project, ToolCallRecord
from kbdesk.store.notes import Note

__all__ = [
    "KB_SEARCH_TOOL",
    "MAX_ROUNDS",
    "NOTE_SEARCH_TOOL",
    "ActiveKB",
    "Answer",
    "CancelToken",
    "ChatCancelled",
    "ChatEvent",
    "ChatMessage",
    "ChatService",
    "ChatTarget",
    "Conversation",
    "KbToggle",
    "Note",
    "NoteHit",
    "NoteSearch",
    "NoteService",
    "Notice",
    "Persona",
    "Project",
    "Retrieval",
    "Source",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallInfo",
    "ToolCallRecord",
    "ToolCallStarted",
    "TurnFinished",
    "TurnStarted",
    "Waiting",
    "chat_target",
    "kb_hint",
    "resolve_kbs",
]
