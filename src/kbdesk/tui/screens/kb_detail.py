"""One knowledge base: its documents with live status, and what can be done to them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Header, ProgressBar, Static

from kbdesk.models import Document, KnowledgeBase
from kbdesk.textsafe import inert_line
from kbdesk.tui.format import human_size, model_label, palette
from kbdesk.tui.progress import DocProgress, IngestTracker
from kbdesk.tui.screens.base import DeskScreen
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.widgets.documents_table import DocumentsTable

EMPTY = "No documents yet. Press a to add files or a whole folder (with include/exclude patterns)."


class KbDetailScreen(DeskScreen):
    CSS_PATH = "kb_detail.tcss"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="kb.back"),
        Binding("a", "add_files", "Add", id="kb.add"),
        Binding("x,delete", "remove_document", "Remove", id="kb.remove"),
        Binding("slash", "search", "Search", id="kb.search"),
        Binding("b", "rebuild", "Rebuild", id="kb.rebuild"),
        Binding("m", "reembed", "Re-embed", id="kb.reembed"),
        Binding("u", "resume", "Resume", id="kb.resume", show=False),
        Binding("r", "refresh", "Refresh", id="kb.refresh", show=False),
    ]

    def __init__(self, kb: KnowledgeBase, *, hint: bool = False) -> None:
        super().__init__()
        self.kb = kb
        self.hint = hint
        self._reload_due = False

    @property
    def app_(self) -> Any:
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="kb-head")
        yield DocumentsTable(id="docs")
        yield Static(Text(EMPTY), id="empty", classes="hidden")
        yield Static("", id="doc-error")
        with Horizontal(id="progress-row"):
            yield Static("", id="progress-label")
            yield ProgressBar(total=None, show_eta=False, id="progress")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = inert_line(self.kb.name)
        self._show_head()
        self.reload()
        tracker = self.app_.trackers.get(self.kb.id)
        self._show_progress(tracker if tracker and self.app_.ingesting(self.kb.id) else None)

    @property
    def table(self) -> DocumentsTable:
        return self.query_one(DocumentsTable)

    # ── loading ────────────────────────────────────────────────────────────────
    def reload(self) -> None:
        self._reload_due = False
        self.in_thread(self._read, doing=f"loading '{inert_line(self.kb.name)}'", group="load", exclusive=True,
                       done=self._loaded)

    def _read(self) -> tuple[KnowledgeBase, list[Document]]:
        kb = self.desk.kb(self.kb.id)
        return kb, self.desk.documents(kb.id)

    def _loaded(self, result: tuple[KnowledgeBase, list[Document]]) -> None:
        self.kb, docs = result
        tracker = self.app_.trackers.get(self.kb.id)
        self.table.load(docs, tracker.snapshot() if tracker and self.app_.ingesting(self.kb.id) else {})
        self._show_head()
        self._after_change()

    def _show_head(self) -> None:
        kb = self.kb
        head = Text()
        head.append(inert_line(kb.name), style="bold")
        if kb.description:
            head.append("  " + inert_line(kb.description))
        head.append(f"\n{model_label(kb)} · chunks of {kb.chunk_size}, overlap {kb.chunk_overlap} · "
                    f"{kb.document_count} documents, {kb.chunk_count} chunks, {human_size(kb.total_bytes)}",
                    style="dim")
        self.query_one("#kb-head", Static).update(head)

    def _after_change(self) -> None:
        empty = self.table.row_count == 0
        self.query_one("#empty").set_class(not empty, "hidden")
        self.table.set_class(empty, "hidden")
        if not empty and self.focused is None:
            self.table.focus()
        self._show_error()

    @on(DataTable.RowHighlighted)
    def _show_error(self) -> None:
        row = self.table.selected
        error = self.query_one("#doc-error", Static)
        if row is not None and row.status == "error":
            error.update(Text(f"✗ {inert_line(row.filename)}: {inert_line(row.error or 'failed')}",
                              style=palette(self.app)["bad"]))
        else:
            failed = self.table.counts().get("error", 0)
            error.update(Text(f"{failed} document(s) failed: highlight one to see why", style="dim")
                         if failed else "")

    # ── live progress (the app calls these) ────────────────────────────────────
    def show_ingest(self, tracker: IngestTracker, changes: dict[str, DocProgress | None]) -> None:
        if tracker.kb_id != self.kb.id:
            return
        if self.table.apply(changes) and not self._reload_due:
            self._reload_due = True  # new documents: fetch sizes soon, not on every tick
            self.set_timer(1.0, self.reload)
        self._after_change()
        self._show_progress(tracker)

    def ingest_finished(self, kb_id: str) -> None:
        if kb_id == self.kb.id:
            self._show_progress(None)
            self.reload()

    def _show_progress(self, tracker: IngestTracker | None) -> None:
        row = self.query_one("#progress-row")
        if tracker is None or tracker.finished:
            row.display = False
            return
        done, total = tracker.counts()
        row.display = True
        self.query_one("#progress-label", Static).update(Text(f"{tracker.what}: {done}/{total}"))
        self.query_one(ProgressBar).update(total=total or None, progress=done)

    # ── actions ────────────────────────────────────────────────────────────────
    def palette_commands(self) -> Iterable[SystemCommand]:
        name = escape(inert_line(self.kb.name))  # the palette reads titles as markup; a KB name is data
        yield SystemCommand(f"Add files or a folder to '{name}'", "Index documents (TXT, MD, CSV, HTML, PDF)",
                            self.action_add_files)
        yield SystemCommand(f"Rebuild '{name}'", "Re-chunk and re-embed every document", self.action_rebuild)
        yield SystemCommand(f"Re-embed '{name}' with another model", "Change the KB's embedding model",
                            self.action_reembed)
        yield SystemCommand(f"Search '{name}'", "Search this KB with scores", self.action_search)

    def action_refresh(self) -> None:
        self.reload()

    def action_search(self) -> None:
        self.app_.action_open_search([self.kb.name])

    def action_add_files(self) -> None:
        from kbdesk.tui.screens.add_files import AddFilesScreen

        self.app.push_screen(AddFilesScreen(self.kb.name), self._add)

    def _add(self, request: Any) -> None:
        if request is None:
            return
        desk, kb_id = self.desk, self.kb.id
        self.app_.start_ingest(self.kb, "Indexing", lambda on_event: desk.add(
            kb_id, request.paths, include=request.include, exclude=request.exclude, sync=request.sync,
            on_event=on_event))

    def action_resume(self) -> None:
        desk, kb_id = self.desk, self.kb.id
        self.app_.start_ingest(self.kb, "Resuming", lambda on_event: desk.ingestor(on_event=on_event).resume(kb_id))

    def action_rebuild(self) -> None:
        kb = self.kb
        detail = (f"Every document with stored text ({kb.document_count} in all) is chunked again with chunks of "
                  f"{kb.chunk_size} (overlap {kb.chunk_overlap}) and embedded again; cached vectors are reused.")
        self.app.push_screen(ConfirmScreen(f"Rebuild '{kb.name}'?", detail, confirm="Rebuild"), self._rebuild)

    def _rebuild(self, yes: bool | None) -> None:
        if yes:
            desk, kb_id = self.desk, self.kb.id
            self.app_.start_ingest(self.kb, "Rebuilding", lambda on_event: desk.ingestor(
                on_event=on_event).rebuild(kb_id), expected=self.kb.document_count)

    def action_reembed(self) -> None:
        from kbdesk.tui.screens.reembed import ReembedScreen

        self.app.push_screen(ReembedScreen(self.kb), self._reembed)

    def _reembed(self, choice: tuple[str, str] | None) -> None:
        if choice is None:
            return
        provider, model = choice
        desk, kb_id = self.desk, self.kb.id
        self.app_.start_ingest(self.kb, "Re-embedding", lambda on_event: desk.ingestor(
            on_event=on_event).reembed(kb_id, provider, model))

    def action_remove_document(self) -> None:
        row = self.table.selected
        if row is None:
            return
        if self.app_.ingesting(self.kb.id):
            self.notify("Indexing is running in this KB; remove documents when it is done", severity="warning")
            return
        detail = (f"Its {row.chunks or 0} chunks, their vectors and keyword entries and the stored copy are deleted. "
                  "The original file is not touched.")
        self.app.push_screen(ConfirmScreen(f"Remove '{row.filename}' from '{self.kb.name}'?", detail,
                                           confirm="Remove"), lambda yes: self._remove(row.doc_id, yes))

    def _remove(self, doc_id: str, yes: bool | None) -> None:
        if yes:
            self.in_thread(self.desk.delete_document, doc_id, doing="removing a document",
                           done=lambda doc: (self.notify(f"Removed '{inert_line(doc.filename)}'", markup=False),
                                             self.reload()))
