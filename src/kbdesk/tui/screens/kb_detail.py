"""One knowledge base: its documents with live status, and what can be done to them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import Header, ProgressBar, Static

from kbdesk.ingest.child import IngestJob
from kbdesk.ingest.formats import SUPPORTED_SUFFIXES
from kbdesk.models import Document, KnowledgeBase
from kbdesk.textsafe import inert_line
from kbdesk.tui.doc_cache import DocRows
from kbdesk.tui.format import human_size, model_label, palette
from kbdesk.tui.progress import DocProgress, IngestTracker
from kbdesk.tui.screens.base import DeskScreen
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.widgets.doc_rows import FILTER_ORDER, FILTERS, IN_FLIGHT
from kbdesk.tui.widgets.documents_table import DocumentsTable
from kbdesk.tui.widgets.keys_footer import KeysFooter
from kbdesk.tui.widgets.readout import Readout

LOADING_AFTER_S = 0.3
"""A first read of the documents that takes longer says so above the table."""
EMPTY = "No documents yet. Press a to add files or a whole folder (with include/exclude patterns)."


class KbDetailScreen(DeskScreen):
    CSS_PATH = "kb_detail.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="kb.back"),
        Binding("enter", "open_document", "Open", id="kb.open"),
        Binding("a", "add_files", "Add", id="kb.add"),
        Binding("d,delete", "remove_document", "Remove", id="kb.remove"),
        Binding("slash", "search", "Search", id="kb.search"),
        Binding("u", "resume", "Resume", id="kb.resume"),
        Binding("x", "stop_ingest", "Stop", id="kb.stop"),
        Binding("f", "filter", "Filter", id="kb.filter"),
        Binding("g", "next_error", "Next error", id="kb.next_error"),
        Binding("b", "rebuild", "Rebuild", id="kb.rebuild"),
        Binding("m", "reembed", "Re-embed", id="kb.reembed"),
        Binding("r", "refresh", "Refresh", id="kb.refresh", show=False),
    ]

    def __init__(self, kb: KnowledgeBase, *, hint: bool = False) -> None:
        super().__init__()
        self.kb = kb
        self.hint = hint
        self.unfinished = 0
        """Documents a run that is gone left unfinished (resume finishes them)."""
        self._run_shown = False  # the bindings know of the run in progress (Stop)
        self._loading: Timer | None = None

    @property
    def app_(self) -> Any:
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        yield Readout("", id="kb-head")
        yield Readout("", id="kb-info")
        yield Readout("", id="notice", classes="hidden")
        yield DocumentsTable(id="docs")
        yield Static(Text(EMPTY), id="empty", classes="hidden")
        yield Readout("", id="doc-error")
        with Horizontal(id="progress-row"):
            yield Readout("", id="progress-label")
            yield ProgressBar(total=None, show_eta=False, id="progress")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = inert_line(self.kb.name)
        self._show_head()
        self.table.focus()
        # kept rows (the KB list read them ahead) paint at once; a read follows when they may be old
        if not self.app_.doc_rows.get(self.kb.id, self._loaded, owner=self):
            # the first read of this KB is under way: a line says so if it takes a while (an animated
            # indicator drawn at once would take turns with the read for the interpreter lock)
            self._loading = self.set_timer(LOADING_AFTER_S, lambda: self.call_later(self._show_loading))
        tracker = self.app_.trackers.get(self.kb.id)
        self._show_progress(tracker if tracker and self.app_.ingesting(self.kb.id) else None)

    @property
    def table(self) -> DocumentsTable:
        return self.query_one(DocumentsTable)

    # ── loading (in a worker: the documents, their rows and order; then what is unfinished) ──
    def reload(self) -> None:
        self.app_.doc_rows.refresh(self.kb.id, self._loaded)

    def _show_loading(self) -> None:
        if self._loading is None:  # the rows came as the timer fired
            return
        notice = self.query_one("#notice", Readout)  # the rows' arrival puts back what it says (_show_notice)
        count = self.kb.document_count
        notice.show(Text(f"Reading {count} documents…" if count else "Reading the documents…", style="dim"))
        notice.remove_class("hidden")

    def _loaded(self, result: DocRows) -> None:
        if not self.is_attached:  # left before the read ended
            return
        self.kb = result.kb
        if self._loading is not None:
            self._loading.stop()
            self._loading = None
        running = self.app_.ingesting(self.kb.id)
        tracker = self.app_.trackers.get(self.kb.id)
        self.table.load(result.rows, tracker.snapshot() if tracker and running else {})
        self._show_head()
        self._after_change()
        if not running:  # after the table is on screen: what an earlier run left unfinished
            kb_id = self.kb.id
            self.in_thread(
                lambda: len(self.desk.unfinished_documents(kb_id)),
                doing="counting unfinished documents",
                group="unfinished",
                exclusive=True,
                done=self._unfinished,
            )

    def _unfinished(self, count: int) -> None:
        self.unfinished = 0 if self.app_.ingesting(self.kb.id) else count
        self._show_notice()
        self.refresh_bindings()
        if self.unfinished and self.app_.auto_resume:
            self.action_resume()

    def _show_head(self) -> None:
        kb = self.kb
        head = Text()
        head.append(inert_line(kb.name), style="bold")
        if kb.description:
            head.append("  " + inert_line(kb.description))
        self.query_one("#kb-head", Readout).show(head)  # one line, cut with … (e shows it all)
        info = Text(
            f"{model_label(kb)} · chunks of {kb.chunk_size}, overlap {kb.chunk_overlap} · "
            f"{kb.document_count} documents, {kb.chunk_count} chunks, {human_size(kb.total_bytes)}",
            style="dim",
        )
        self.query_one("#kb-info", Readout).show(info)

    def _after_change(self) -> None:
        table = self.table
        empty = not table.rows_by_id
        self.query_one("#empty").set_class(not empty, "hidden")
        table.set_class(empty, "hidden")
        if not empty and self.focused is None:
            table.focus()
        self._show_notice()
        self._show_error()

    def _show_notice(self) -> None:
        """One line above the table: unfinished documents to resume, and the filter in use."""
        notice = self.query_one("#notice", Readout)
        colours = palette(self.app)
        text = Text()
        if self.unfinished:
            text.append(
                f"⚠ {self.unfinished} document(s) were left unfinished when indexing stopped. ",
                style=f"bold {colours['busy']}",
            )
            text.append("Press u to resume them.")
        if self.table.filter != "all":
            if text:
                text.append("  ·  ")
            shown, total = self.table.row_count, len(self.table.rows_by_id)
            text.append(f"Showing {FILTERS[self.table.filter][0]}: {shown} of {total}", style=colours["info"])
            text.append(" (f: next filter)", style="dim")
        notice.show(text)
        notice.set_class(not text, "hidden")

    @on(DocumentsTable.Highlighted)
    def _show_error(self) -> None:
        row = self.table.selected
        error = self.query_one("#doc-error", Readout)
        if row is not None and row.status == "error":
            message = f"✗ {row.path}: {inert_line(row.error or 'failed')}"
            room = 2 * max(20, error.size.width - 2)  # two lines: the table does not jump as the cursor moves
            if len(message) > room:
                more = " … (Enter: the whole error)"
                message = message[: room - len(more)].rstrip() + more
            error.show(Text(message, style=palette(self.app)["bad"]))
            return
        counts = self.table.counts()
        failed = counts.get("error", 0)
        busy = sum(counts.get(status, 0) for status in IN_FLIGHT)
        parts = []
        if failed:
            parts.append(f"{failed} document(s) failed: g goes to the next one, f shows errors only")
        if busy:
            parts.append(f"{busy} in progress")
        error.show(Text(" · ".join(parts), style="dim"))

    # ── live progress (the app calls these) ────────────────────────────────────
    def show_ingest(self, tracker: IngestTracker, changes: dict[str, DocProgress | None]) -> None:
        """Changed documents, by id: the table is never reloaded while a run goes on."""
        if tracker.kb_id != self.kb.id:
            return
        if self.unfinished or not self._run_shown:
            self.unfinished = 0  # a run over this KB picks them up
            self._run_shown = True  # (Stop offered)
            self.refresh_bindings()
        self.table.apply(changes)
        self._after_change()
        self._show_progress(tracker)

    def ingest_finished(self, kb_id: str) -> None:
        if kb_id == self.kb.id:
            self._run_shown = False
            self._show_progress(None)
            self.refresh_bindings()
            self.reload()

    def _show_progress(self, tracker: IngestTracker | None) -> None:
        row = self.query_one("#progress-row")
        if tracker is None or tracker.finished:
            row.display = False
            return
        done, total = tracker.counts()
        row.display = True
        # the count padded to the total's width: the label keeps its size as it moves
        self.query_one("#progress-label", Readout).show(Text(f"{tracker.what}: {done:>{len(str(total))}}/{total}"))
        self.query_one(ProgressBar).update(total=total or None, progress=done)

    # ── actions ────────────────────────────────────────────────────────────────
    def palette_commands(self) -> Iterable[SystemCommand]:
        name = escape(inert_line(self.kb.name))  # the palette reads titles as markup; a KB name is data
        yield SystemCommand(
            f"Add files or a folder to '{name}'",
            f"Index documents (any of the {len(SUPPORTED_SUFFIXES)} file types kbdesk reads)",
            self.action_add_files,
        )
        yield SystemCommand(f"Rebuild '{name}'", "Re-chunk and re-embed every document", self.action_rebuild)
        yield SystemCommand(
            f"Re-embed '{name}' with another model", "Change the KB's embedding model", self.action_reembed
        )
        yield SystemCommand(f"Search '{name}'", "Search this KB with scores", self.action_search)
        yield SystemCommand("Filter documents", "All → errors only → in progress only (f)", self.action_filter)
        yield SystemCommand(
            "Next failed document", "Move to the next document that failed, with its reason (g)", self.action_next_error
        )
        if self.check_action("stop_ingest", ()):
            yield SystemCommand(
                f"Stop indexing '{name}'",
                "Stop after the batch in flight; resume what is left later (x)",
                self.action_stop_ingest,
            )
        if self.check_action("resume", ()):
            yield SystemCommand(
                f"Resume {self.unfinished} unfinished document(s)",
                "Finish what an earlier indexing run left half-way (u)",
                self.action_resume,
            )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "resume":
            return bool(self.unfinished) and not self.app_.ingesting(self.kb.id)
        if action == "stop_ingest":  # shown only while a run over this KB goes on
            return self.app_.ingesting(self.kb.id)
        if action == "next_error":
            return True if self.table.counts().get("error") else None
        if action in ("remove_document", "open_document"):
            return True if self.table.selected is not None else None
        return True

    def action_refresh(self) -> None:
        self.reload()

    def action_filter(self) -> None:
        """All documents → errors only → in progress only → all."""
        table = self.table
        table.set_filter(FILTER_ORDER[(FILTER_ORDER.index(table.filter) + 1) % len(FILTER_ORDER)])
        self._after_change()

    def action_next_error(self) -> None:
        table = self.table
        doc_id = table.first_with_status("error")
        if doc_id is None and table.filter != "all" and table.counts().get("error"):
            table.set_filter("errors")
            doc_id = table.first_with_status("error")
        if doc_id is None:
            self.notify("No document failed", markup=False)
            return
        table.select_document(doc_id)
        self._after_change()

    def action_search(self) -> None:
        self.app_.action_open_search([self.kb.name])

    def action_add_files(self) -> None:
        from kbdesk.tui.screens.add_files import AddFilesScreen

        self.app.push_screen(AddFilesScreen(self.kb.name), self._add)

    def _add(self, request: Any) -> None:
        if request is None:
            return
        kb_id = self.kb.id
        self.app_.start_ingest(
            self.kb,
            "Indexing",
            IngestJob(
                "add",
                (kb_id, list(request.paths)),
                {"include": list(request.include), "exclude": list(request.exclude), "sync": request.sync},
            ),
        )

    def action_resume(self) -> None:
        if self.app_.resume(self.kb, expected=self.unfinished) is not None:
            self.unfinished = 0
            self._show_notice()
            self.refresh_bindings()

    def action_stop_ingest(self) -> None:
        """Stop this KB's run after the batch in flight; what it had not finished is left
        for a resume (u), as after quitting."""
        if not self.app_.ingesting(self.kb.id):
            return
        self.app_.cancel_ingest(self.kb.id)
        self.notify(
            f"Stopping the indexing of '{inert_line(self.kb.name)}' after the batch in flight; "
            "resume what is left with u",
            markup=False,
        )

    def action_rebuild(self) -> None:
        kb = self.kb
        detail = (
            f"Every document with stored text ({kb.document_count} in all) is chunked again with chunks of "
            f"{kb.chunk_size} (overlap {kb.chunk_overlap}) and embedded again; cached vectors are reused."
        )
        self.app.push_screen(ConfirmScreen(f"Rebuild '{kb.name}'?", detail, confirm="Rebuild"), self._rebuild)

    def _rebuild(self, yes: bool | None) -> None:
        if yes:
            kb_id = self.kb.id
            self.app_.start_ingest(
                self.kb, "Rebuilding", IngestJob("rebuild", (kb_id,)), expected=self.kb.document_count
            )

    def action_reembed(self) -> None:
        from kbdesk.tui.screens.reembed import ReembedScreen

        self.app.push_screen(ReembedScreen(self.kb), self._reembed)

    def _reembed(self, choice: tuple[str, str] | None) -> None:
        if choice is None:
            return
        provider, model = choice
        kb_id = self.kb.id
        self.app_.start_ingest(self.kb, "Re-embedding", IngestJob("reembed", (kb_id, provider, model)))

    def action_open_document(self) -> None:
        """The document under the cursor: its status, whole error and first chunks."""
        from kbdesk.tui.screens.document import DocumentScreen

        row = self.table.selected
        if row is not None:
            self.app.push_screen(DocumentScreen(row.doc_id, row.path))

    def action_remove_document(self) -> None:
        row = self.table.selected
        if row is None:
            return
        if self.app_.ingesting(self.kb.id):
            self.notify("Indexing is running in this KB; remove documents when it is done", severity="warning")
            return
        detail = (
            f"Its {row.chunks or 0} chunks, their vectors and keyword entries and the stored copy are deleted. "
            "The original file is not touched."
        )
        self.app.push_screen(
            ConfirmScreen(f"Remove '{row.path}' from '{self.kb.name}'?", detail, confirm="Remove"),
            lambda yes: self._remove(row.doc_id, yes),
        )

    def _remove(self, doc_id: str, yes: bool | None) -> None:
        if not yes:
            return

        def removed(doc: Document) -> None:
            self.notify(f"Removed '{inert_line(doc.filename)}'", markup=False)
            self.reload()

        self.in_thread(self.desk.delete_document, doc_id, doing="removing a document", done=removed)
