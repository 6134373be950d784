"""Managing the chat screen's conversations: new, rename, filters, delete.

The conversation an action is about is the highlighted one while the list has focus,
else the one open (:meth:`ConversationActions._target`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.widgets import Input

from kbdesk.store.chat import Conversation
from kbdesk.tui.chat_state import ChatContext
from kbdesk.tui.widgets.conversation_list import ConversationList, conversation_title

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService
    from kbdesk.tui.screens.base import DeskScreen
    from kbdesk.tui.screens.chat_turns import Turn

    _Screen = DeskScreen
else:  # a mixin: at run time the screen it is mixed into
    _Screen = object


class ConversationActions(_Screen):
    """The conversation actions of :class:`~kbdesk.tui.screens.chat.ChatScreen` (a mixin):
    the screen provides ``chat``, ``conv``, ``turn``, ``_chat_context``, ``busy_message``,
    ``_show_draft``, ``refresh_list`` and ``_load_context``."""

    chat: ChatService
    conv: Conversation | None
    turn: Turn | None
    _chat_context: ChatContext | None

    if TYPE_CHECKING:

        def busy_message(self) -> str: ...
        def _show_draft(self) -> None: ...
        def refresh_list(self) -> None: ...
        def _load_context(self) -> None: ...

    @property
    def conversations(self) -> ConversationList:
        return self.query_one(ConversationList)

    def _target(self) -> Conversation | None:
        """The conversation an action is about: the highlighted one while the list has focus."""
        if self.conversations.has_focus and self.conversations.selected is not None:
            return self.conversations.selected
        return self.conv

    def action_new_conversation(self) -> None:
        if self.turn is not None:
            self.notify(self.busy_message(), severity="warning")
            return
        self._show_draft()
        self.query_one("#question", Input).focus()

    def action_rename(self) -> None:
        from kbdesk.tui.screens.prompt import PromptScreen

        conv = self._target()
        if conv is None:
            self.notify("Nothing to rename yet: ask a question first", severity="warning")
            return
        self.app.push_screen(
            PromptScreen("Rename conversation", conv.title, placeholder="a title"),
            lambda title: self._rename(conv, title),
        )

    def _rename(self, conv: Conversation, title: str | None) -> None:
        if not title:
            return

        def renamed(new: Conversation) -> None:
            if self.conv is not None and self.conv.id == new.id:
                self.conv = new
            self.refresh_list()

        self.in_thread(self.chat.rename, conv.id, title, doing="renaming the conversation", done=renamed)

    def action_filters(self) -> None:
        """The default filters every search of this conversation keeps to (one line:
        ``tag:q3 path:work/**``; ``none`` removes them)."""
        from kbdesk.filters_text import format_line
        from kbdesk.tui.screens.prompt import PromptScreen

        conv = self._target()
        if conv is None:
            self.notify("No conversation to filter yet: ask a question first", severity="warning")
            return
        shown = self._chat_context is not None and self.conv is not None and conv.id == self.conv.id
        current = format_line(self._chat_context.filters) if shown and self._chat_context else ""
        self.app.push_screen(
            PromptScreen(
                "Search only documents matching (none: every document)",
                current,
                placeholder="tag:q3 path:work/** type:md since:2026-11-01",
            ),
            lambda line: self._set_filters(conv, line),
        )

    def _set_filters(self, conv: Conversation, line: str | None) -> None:
        if line is None:
            return
        value = None if line.lower() in ("none", "off", "clear") else line
        self.in_thread(
            self.chat.set_filters, conv.id, value, doing="setting the filters", done=lambda _: self._load_context()
        )

    def action_delete_conversation(self) -> None:
        from kbdesk.tui.screens.confirm import ConfirmScreen

        conv = self._target()
        if conv is None:
            return
        if self.turn is not None and self.turn.conversation_id == conv.id:
            self.notify(self.busy_message(), severity="warning")
            return
        count = conv.message_count
        detail = (
            f"Its {count} message{'' if count == 1 else 's'} and KB choices are removed. Knowledge bases "
            "and notes are not touched."
        )
        self.app.push_screen(
            ConfirmScreen(f"Delete conversation '{conversation_title(conv)}'?", detail),
            lambda yes: self._delete(conv, yes),
        )

    def _delete(self, conv: Conversation, yes: bool | None) -> None:
        if not yes:
            return

        def deleted(_: Any) -> None:
            self.notify(f"Deleted '{conversation_title(conv)}'", markup=False)
            if self.conv is not None and self.conv.id == conv.id:
                self._show_draft()
            self.refresh_list()

        self.in_thread(self.chat.delete, conv.id, doing="deleting the conversation", done=deleted)
