"""One document of a KB: where it comes from, its status (the whole error when it failed)
and its first chunks as they are searched."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from kbdesk.models import Document
from kbdesk.textsafe import inert_line
from kbdesk.tui.format import human_size, palette, passage, status_text, where_label
from kbdesk.tui.screens.base import DeskModal

SHOWN = 20
"""Chunks shown at first; ``+`` shows as many again."""


class DocumentScreen(DeskModal):
    CSS_PATH = "document.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "cancel", "Close", id="document.close"),
        Binding("plus,equals_sign", "more", "More chunks", id="document.more"),
    ]

    def __init__(self, doc_id: str, title: str | None = None) -> None:
        super().__init__()
        self.doc_id = doc_id
        self.title_text = title  # the path as the KB screen shows it (else the source path)
        self.shown = SHOWN

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="document-dialog"):
            yield Static("", classes="dialog-title", id="document-title")
            yield Static("", id="document-facts")
            yield VerticalScroll(id="document-chunks")
            yield Static(Text("+ more chunks · Esc close", style="dim"))

    def on_mount(self) -> None:
        self.load()

    def load(self) -> None:
        self.in_thread(self._read, doing="reading the document", done=self._show)

    def _read(self) -> tuple[Document, list[dict[str, Any]]]:
        doc = self.desk.document_by_id(self.doc_id)
        # the chunks around chunk 0 with a radius of n are its first n + 1
        chunks = self.desk.chunk_neighbours(self.doc_id, 0, self.shown - 1) if doc.chunk_count else []
        return doc, chunks

    def _show(self, read: tuple[Document, list[dict[str, Any]]]) -> None:
        doc, chunks = read
        colours = palette(self.app)
        title = self.title_text or doc.source_path or doc.filename
        self.query_one("#document-title", Static).update(Text(inert_line(title)))
        facts = Text()
        facts.append_text(status_text(doc.status, colours))
        facts.append(f" · {human_size(doc.size_bytes)} · {doc.chunk_count} chunks · {inert_line(doc.content_type)}")
        if doc.indexed_at:
            facts.append(f" · indexed {doc.indexed_at[:19].replace('T', ' ')}")
        if doc.error:  # the whole reason, wrapped: never cut to a line or two
            kind = f" ({doc.error_kind})" if doc.error_kind else ""
            facts.append(f"\nerror{kind}: {inert_line(doc.error)}", style=colours["bad"])
            if doc.indexed_at:
                facts.append("\nsearch still returns the last version that was indexed", style="dim")
        self.query_one("#document-facts", Static).update(facts)
        box = self.query_one("#document-chunks", VerticalScroll)
        box.remove_children()
        for chunk in chunks:
            where = where_label(chunk.get("metadata") or {})
            widget = Static(passage(chunk["content"]), classes="chunk")
            widget.border_title = f"chunk {chunk['chunk_index']}" + (f" · {where}" if where else "")
            box.mount(widget)
        left = doc.chunk_count - len(chunks)
        if left > 0:
            box.mount(Static(Text(f"… {left} more chunks (+ shows more)", style="dim")))
        elif not chunks:
            box.mount(Static(Text("no chunks: nothing of this document is searchable", style="dim")))

    def action_more(self) -> None:
        self.shown += SHOWN
        self.load()
