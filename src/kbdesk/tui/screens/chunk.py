"""One search hit in full, with the chunks before and after it in its document."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from kbdesk.textsafe import inert_line
from kbdesk.tui.format import passage, score, where_label
from kbdesk.tui.screens.base import DeskModal


class ChunkScreen(DeskModal):
    CSS_PATH = "chunk.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "cancel", "Close", id="chunk.close"),
        Binding("plus,equals_sign", "wider", "More context", id="chunk.more"),
    ]

    def __init__(self, hit: dict[str, Any]) -> None:
        super().__init__()
        self.hit = hit
        self.radius = 1

    def compose(self) -> ComposeResult:
        hit = self.hit
        where = where_label(hit.get("metadata") or {})
        with Vertical(classes="dialog", id="chunk-dialog"):
            title = Text(inert_line(hit["source"]) + (f" · {where}" if where else "") + f" · {inert_line(hit['kb'])}")
            yield Static(title, classes="dialog-title")
            yield Static(
                Text(
                    f"chunk {hit['chunk_index']} · similarity {score(hit['similarity'])} · "
                    f"vector rank {hit['vector_rank'] or '–'} · keyword rank {hit['keyword_rank'] or '–'}"
                    f" · fused {score(hit['fused'], 4)}" + (f" · cut by {hit['cut']}" if hit["cut"] else ""),
                    style="dim",
                )
            )
            yield VerticalScroll(id="chunks")
            yield Static(Text("+ more context · Esc close", style="dim"))

    def on_mount(self) -> None:
        self.load()

    def load(self) -> None:
        self.in_thread(
            self.desk.chunk_neighbours,
            self.hit["document_id"],
            self.hit["chunk_index"],
            self.radius,
            doing="reading the chunk",
            done=self._show,
        )

    def _show(self, chunks: list[dict[str, Any]]) -> None:
        box = self.query_one("#chunks", VerticalScroll)
        box.remove_children()
        current = None
        for chunk in chunks:
            label = (
                "this hit"
                if chunk["current"]
                else ("before" if chunk["chunk_index"] < self.hit["chunk_index"] else "after")
            )
            widget = Static(passage(chunk["content"]), classes="chunk current" if chunk["current"] else "chunk")
            widget.border_title = f"chunk {chunk['chunk_index']} · {label}"
            box.mount(widget)
            if chunk["current"]:
                current = widget
        if current is not None:
            self.call_after_refresh(box.scroll_to_widget, current, animate=False, top=True)

    def action_wider(self) -> None:
        self.radius += 1
        self.load()
