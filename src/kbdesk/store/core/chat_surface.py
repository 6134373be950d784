"""The chat's part of a store's surface: its methods, each a chat repository's.

Both stores inherit :class:`ChatSurface` (methods only, no state and no hooks) and call
:meth:`ChatSurface.compose_chat` once they know who they act as; ``store.create_note(...)``
then answers from ``store.notes``, and so on (:func:`kbdesk.store.core.compose.via`).
"""

from __future__ import annotations

from kbdesk.store.chat_api import Settings
from kbdesk.store.core.chat import Conversations
from kbdesk.store.core.compose import Base, via
from kbdesk.store.core.notes import NoteKeywords, Notes
from kbdesk.store.core.own_rows import OwnRows
from kbdesk.store.core.personas import Personas

__all__ = ["ChatSurface"]


class ChatSurface:
    """The chat repositories of a store, and their methods as the store's."""

    conversations: Conversations
    personas: Personas
    notes: Notes
    settings: Settings

    def compose_chat(self, base: Base, note_keywords: NoteKeywords, settings: Settings) -> None:
        """Build the chat repositories over ``base`` (the store's connections and engine)."""
        rows = OwnRows(base)
        self.conversations = Conversations(base, rows)
        self.personas = Personas(base, rows)
        self.notes = Notes(base, rows, note_keywords)
        self.settings = settings

    # ── conversations (Conversations) ──
    create_conversation = via("conversations", Conversations.create_conversation)
    get_conversation = via("conversations", Conversations.get_conversation)
    find_conversation = via("conversations", Conversations.find_conversation)
    list_conversations = via("conversations", Conversations.list_conversations)
    update_conversation = via("conversations", Conversations.update_conversation)
    delete_conversation = via("conversations", Conversations.delete_conversation)
    add_message = via("conversations", Conversations.add_message)
    update_message = via("conversations", Conversations.update_message)
    set_tool_call_status = via("conversations", Conversations.set_tool_call_status)
    get_message = via("conversations", Conversations.get_message)
    messages = via("conversations", Conversations.messages)
    channel_kbs = via("conversations", Conversations.channel_kbs)
    set_channel_kb = via("conversations", Conversations.set_channel_kb)
    set_channel_kbs = via("conversations", Conversations.set_channel_kbs)

    # ── personas (Personas) ──
    create_persona = via("personas", Personas.create_persona)
    find_persona = via("personas", Personas.find_persona)
    list_personas = via("personas", Personas.list_personas)
    update_persona = via("personas", Personas.update_persona)
    delete_persona = via("personas", Personas.delete_persona)
    create_project = via("personas", Personas.create_project)
    find_project = via("personas", Personas.find_project)
    list_projects = via("personas", Personas.list_projects)
    update_project = via("personas", Personas.update_project)
    delete_project = via("personas", Personas.delete_project)

    # ── notes (Notes) ──
    create_note = via("notes", Notes.create_note)
    update_note = via("notes", Notes.update_note)
    delete_note = via("notes", Notes.delete_note)
    find_note = via("notes", Notes.find_note)
    list_notes = via("notes", Notes.list_notes)
    notes_by_id = via("notes", Notes.notes_by_id)
    note_count = via("notes", Notes.note_count)
    note_keyword_candidates = via("notes", Notes.note_keyword_candidates)
    note_vector_candidates = via("notes", Notes.note_vector_candidates)
    notes_without_vector = via("notes", Notes.notes_without_vector)
    put_note_vectors = via("notes", Notes.put_note_vectors)

    # ── settings (the engine's Settings) ──
    get_setting = via("settings", Settings.get_setting)
    set_setting = via("settings", Settings.set_setting)
