"""One source of an answer in full: the chunk with its neighbours, or the note."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from kbdesk.chat.safety import clean
from kbdesk.tui.screens.base import DeskModal
from kbdesk.tui.widgets.transcript import source_label

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService


class SourceScreen(DeskModal):
    CSS_PATH = "source.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "cancel", "Close", id="source.close"),
        Binding("plus,equals_sign", "wider", "More context", id="source.more"),
    ]

    def __init__(self, chat: ChatService, source: dict[str, Any]) -> None:
        super().__init__()
        self.chat = chat
        self.source = source
        self.radius = 1

    def compose(self) -> ComposeResult:
        source = self.source
        with Vertical(classes="dialog", id="source-dialog"):
            yield Static(Text(f"[{source.get('n', '?')}] {source_label(source)}"), classes="dialog-title")
            yield VerticalScroll(id="passages")
            hint = "Esc close" if source.get("kind") == "note" else "+ more context · Esc close"
            yield Static(Text(hint, style="dim"))

    def on_mount(self) -> None:
        self.load()

    def load(self) -> None:
        self.in_thread(self.chat.open_source, self.source, self.radius, doing="reading the source", done=self._show)

    def _show(self, passages: list[dict[str, Any]]) -> None:
        box = self.query_one("#passages", VerticalScroll)
        box.remove_children()
        current = None
        index = self.source.get("chunk_index")
        for passage in passages:
            widget = Static(
                Text(clean(passage.get("content", ""))),
                classes="passage current" if passage.get("current") else "passage",
            )
            if "chunk_index" in passage and index is not None:
                where = (
                    "this passage" if passage["current"] else ("before" if passage["chunk_index"] < index else "after")
                )
                widget.border_title = f"chunk {int(passage['chunk_index'])} · {where}"
            box.mount(widget)
            if passage.get("current"):
                current = widget
        if current is not None:
            self.call_after_refresh(box.scroll_to_widget, current, animate=False, top=True)

    def action_wider(self) -> None:
        if self.source.get("kind") != "note":
            self.radius += 1
            self.load()
