"""The first screen: every knowledge base, with create, edit, delete, open and search."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import DataTable, Header, Static

from kbdesk.models import KnowledgeBase
from kbdesk.textsafe import inert_line
from kbdesk.tui.format import human_size, model_label
from kbdesk.tui.progress import DocProgress, IngestTracker
from kbdesk.tui.screens.base import DeskScreen
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.screens.kb_form import KbFormScreen
from kbdesk.tui.widgets.kb_table import KbTable
from kbdesk.tui.widgets.keys_footer import KeysFooter

OPEN_WAIT_S = 0.2
"""Enter on a KB whose documents are not read yet: its screen waits this long for them at most."""
WELCOME = (
    "No knowledge bases yet.\n\n"
    "Press n to create one, then a to add files or a whole folder to it. "
    "Press s to set up an embedding provider (for search by meaning); "
    "without one, a KB is searched by keyword. Press ? for help."
)


class KbListScreen(DeskScreen):
    CSS_PATH = "kb_list.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new_kb", "New", id="kbs.new"),
        Binding("enter", "open_kb", "Open", id="kbs.open"),
        Binding("e", "edit_kb", "Edit", id="kbs.edit"),
        Binding("d,delete", "delete_kb", "Delete", id="kbs.delete"),
        Binding("slash", "search", "Search", id="kbs.search"),
        Binding("u", "resume", "Resume", id="kbs.resume"),
        Binding("c", "app.open_chat", "Chat", id="kbs.chat"),
        Binding("j", "app.open_notes", "Notes", id="kbs.notes"),
        Binding("s", "app.open_settings", "Settings", id="kbs.settings"),
        Binding("r", "refresh", "Refresh", id="kbs.refresh", show=False),
    ]

    _prefetch: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield KbTable(id="kbs")
        yield Static(Text(WELCOME), id="welcome", classes="hidden")
        yield Static("", id="kb-info")
        yield KeysFooter()

    @property
    def table(self) -> KbTable:
        return self.query_one(KbTable)

    # ── loading ────────────────────────────────────────────────────────────────
    def refresh_kbs(self, select: str | None = None) -> None:
        self.in_thread(
            self.desk.list_kbs,
            doing="loading knowledge bases",
            group="load",
            exclusive=True,
            done=lambda kbs: self._loaded(kbs, select),
        )

    def _loaded(self, kbs: list[KnowledgeBase], select: str | None) -> None:
        app: Any = self.app
        running = {kb.id for kb in kbs if app.ingesting(kb.id)}
        self.table.unfinished = app.unfinished
        self.table.load(kbs, app.trackers, running, select)
        self.query_one("#welcome").set_class(bool(kbs), "hidden")
        self.table.set_class(not kbs, "hidden")
        self._describe(self.table.selected)
        self.refresh_bindings()

    @on(DataTable.RowHighlighted)
    def _highlighted(self) -> None:
        kb = self.table.selected
        self._describe(kb)
        if kb is not None:  # read its documents ahead: opening it then paints at once
            if self._prefetch is not None:
                self._prefetch.stop()
            self._prefetch = self.set_timer(0.15, lambda: self.kb_app.doc_rows.prefetch(kb.id))

    def _describe(self, kb: KnowledgeBase | None) -> None:
        info = self.query_one("#kb-info", Static)
        if kb is None:
            info.update("")
            return
        text = Text()
        text.append(inert_line(kb.name), style="bold")
        text.append("  " + inert_line(kb.description) if kb.description else "  (no description)")
        text.append(
            f"\n{kb.document_count} documents, {kb.chunk_count} chunks, {human_size(kb.total_bytes)}"
            f" · {model_label(kb)} · chunks of {kb.chunk_size}, overlap {kb.chunk_overlap}",
            style="dim",
        )
        info.update(text)

    def on_screen_resume(self) -> None:
        self.refresh_kbs()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open_kb", "edit_kb", "delete_kb") and self.is_mounted and not self.table.kbs:
            return None  # shown dimmed: there is no knowledge base to act on
        if action == "resume":
            return bool(getattr(self.app, "unfinished", None))  # in the footer only when there is something
        return True

    def unfinished_changed(self) -> None:
        """The app counted unfinished documents anew."""
        self.refresh_kbs()
        self.refresh_bindings()

    # ── hooks the app calls ────────────────────────────────────────────────────
    def show_ingest(self, tracker: IngestTracker, changes: dict[str, DocProgress | None]) -> None:
        self.table.show_progress(tracker)

    def ingest_finished(self, kb_id: str) -> None:
        self.refresh_kbs()

    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("New knowledge base", "Create a KB (name, chunking, embedding model)", self.action_new_kb)
        kb = self.table.selected
        if kb is not None:
            name = escape(inert_line(kb.name))  # the palette reads titles as markup; a KB name is data
            yield SystemCommand(f"Open '{name}'", "Documents, live status, add files", self.action_open_kb)
            yield SystemCommand(f"Delete '{name}'", "Delete the KB and everything in it", self.action_delete_kb)

    # ── actions ────────────────────────────────────────────────────────────────
    def action_resume(self) -> None:
        self.kb_app.action_resume_all()

    def action_refresh(self) -> None:
        self.refresh_kbs()

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_kb()

    def action_open_kb(self, kb: KnowledgeBase | None = None, hint: bool = False) -> None:
        from kbdesk.tui.screens.kb_detail import KbDetailScreen

        kb = kb or self.table.selected
        if kb is None or self.app.screen is not self:  # a second Enter before the first one's screen came up
            return
        if kb.id in self.table.deleting:
            self.notify(f"'{inert_line(kb.name)}' is being deleted", severity="warning", markup=False)
            return
        rows = self.kb_app.doc_rows
        if rows.kept(kb.id):  # read ahead: the screen paints them at once
            self.app.push_screen(KbDetailScreen(kb, hint=hint))
            return
        # Not read yet (Enter right after the list came up): the screen comes when the read
        # ends, or after OPEN_WAIT_S. Built meanwhile, it would take turns with the read for
        # the interpreter lock and draw a frame without rows (see docs/BENCHMARKS.md).
        opened = False

        def open_screen(_: object = None) -> None:
            nonlocal opened
            if not opened and self.is_attached and self.app.screen is self:
                opened = True
                self.app.push_screen(KbDetailScreen(kb, hint=hint))

        rows.refresh(kb.id, open_screen)  # joins the read under way, if any
        self.set_timer(OPEN_WAIT_S, open_screen)

    def action_search(self) -> None:
        app: Any = self.app
        kb = self.table.selected
        app.action_open_search([kb.name] if kb else None)

    def action_new_kb(self) -> None:
        self.app.push_screen(KbFormScreen(), self._created)

    def _created(self, kb: KnowledgeBase | None) -> None:
        if kb is None:  # cancelled
            return
        self.notify(f"Created '{inert_line(kb.name)}'. Press a to add files or a folder.", markup=False)
        self.action_open_kb(kb, hint=True)

    def action_edit_kb(self) -> None:
        kb = self.table.selected
        if kb is not None:
            self.app.push_screen(KbFormScreen(kb), self._edited)

    def _edited(self, kb: KnowledgeBase | None) -> None:
        if kb is not None:
            self.refresh_kbs(kb.id)

    def action_delete_kb(self) -> None:
        kb = self.table.selected
        if kb is None or kb.id in self.table.deleting:
            return
        if self.kb_app.ingesting(kb.id):
            self.notify(
                f"'{inert_line(kb.name)}' is being indexed; delete it when that is done",
                severity="warning",
                markup=False,
            )
            return
        detail = (
            f"This removes its {kb.document_count} documents, {kb.chunk_count} chunks with their "
            f"vectors and keyword index, and {human_size(kb.total_bytes)} of stored copies. "
            "Your original files are not touched."
        )
        self.app.push_screen(
            ConfirmScreen(f"Delete knowledge base '{kb.name}'?", detail), lambda yes: self._delete(kb, yes)
        )

    def _delete(self, kb: KnowledgeBase, yes: bool | None) -> None:
        """In a worker: a big KB takes a while, and the list says so meanwhile."""
        if not yes:
            return
        name = inert_line(kb.name)
        self.table.deleting.add(kb.id)
        self.refresh_kbs()
        self.notify(f"Deleting '{name}': {kb.document_count} documents, {kb.chunk_count} chunks…", markup=False)

        def over(_: object) -> None:
            self.table.deleting.discard(kb.id)
            self.refresh_kbs()

        def deleted(_: object) -> None:
            over(None)
            self.notify(f"Deleted '{name}'", markup=False)

        self.kb_app.doc_rows.forget(kb.id)
        self.in_thread(self.desk.delete_kb, kb.id, doing=f"deleting '{name}'", done=deleted, failed=over)
