"""The conversations of the chat screen, most recent first."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from kbdesk.chat.safety import one_line
from kbdesk.store.chat import Conversation

UNTITLED = "(new conversation)"


def conversation_title(conv: Conversation | None) -> str:
    return one_line(conv.title, 80) if conv is not None and conv.title else UNTITLED


class ConversationList(OptionList):
    """Enter switches to the highlighted conversation (``OptionList.OptionSelected``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d,delete", "screen.delete_conversation", "Delete", id="chat.list.delete"),
        Binding("r", "screen.rename", "Rename", id="chat.list.rename", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.conversations: list[Conversation] = []

    def load(self, conversations: list[Conversation], current: str | None) -> None:
        self.conversations = list(conversations)
        self.clear_options()
        self.add_options(
            [Option(Text(conversation_title(c), no_wrap=True, overflow="ellipsis"), id=c.id) for c in conversations]
        )
        self.mark(current)

    def mark(self, current: str | None) -> None:
        """Highlight the conversation on screen (none for a new one not saved yet)."""
        ids = [c.id for c in self.conversations]
        self.highlighted = ids.index(current) if current in ids else None

    @property
    def selected(self) -> Conversation | None:
        if self.highlighted is None or not self.conversations:
            return None
        return self.conversations[self.highlighted]
