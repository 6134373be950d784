"""The conversation as it reads: questions and answers (:mod:`.answer_view`). A question is
shown as plain :class:`Text`, never markup, cleaned of control characters once more."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from kbdesk.chat.safety import clean
from kbdesk.tui.chat_state import Block, UserBlock
from kbdesk.tui.widgets.answer_view import AnswerView, source_label

__all__ = ["EMPTY", "AnswerView", "Transcript", "UserView", "source_label"]

EMPTY = (
    "Ask a question about your knowledge bases. The model searches them with kb_search, and each "
    "answer lists the passages it used: ctrl+y opens one. ctrl+o chooses the knowledge bases of this "
    "conversation."
)


class UserView(Static):
    def __init__(self, block: UserBlock) -> None:
        text = Text()
        text.append("you", style="dim")
        text.append("\n" + clean(block.text))
        super().__init__(text, classes="message user")


class Transcript(VerticalScroll):
    """The blocks of one conversation; follows new text unless the user scrolled up."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.blocks: list[Block] = []

    def show(self, blocks: list[Block]) -> None:
        self.blocks = list(blocks)
        self.remove_children()
        if not blocks:
            self.mount(Static(Text(EMPTY), classes="transcript-empty"))
        else:
            self.mount_all([self._view(b) for b in blocks])
        self.anchor()

    def add(self, block: Block) -> Widget:
        if not self.blocks:
            self.remove_children()
        self.blocks.append(block)
        view = self._view(block)
        self.mount(view)
        self.anchor()
        return view

    @staticmethod
    def _view(block: Block) -> Widget:
        return UserView(block) if isinstance(block, UserBlock) else AnswerView(block)
