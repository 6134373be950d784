"""The table of knowledge bases (seed 000 §12's list, for one user)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from kbdesk.models import KnowledgeBase
from kbdesk.tui.format import human_size, line, model_label, palette, status_text
from kbdesk.tui.progress import IngestTracker

# 78 cells with padding: fits 80 columns beside the scrollbar
COLUMNS = (("Name", "name", 14), ("Scope", "scope", 8), ("Docs", "docs", 4), ("Chunks", "chunks", 6),
           ("Size", "size", 8), ("Status", "status", 12), ("Embedding", "model", 12))


class KbTable(DataTable[Text]):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.kbs: dict[str, KnowledgeBase] = {}
        self._last: tuple[list[KnowledgeBase], dict[str, IngestTracker], set[str]] | None = None

    def on_mount(self) -> None:
        for label, key, width in COLUMNS:
            self.add_column(label, key=key, width=width)
        self.watch(self.app, "theme", self._restyle, init=False)

    def _restyle(self) -> None:
        if self._last is not None:
            self.load(*self._last)

    @property
    def selected(self) -> KnowledgeBase | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self.kbs.get(key) if key else None

    def load(self, kbs: list[KnowledgeBase], trackers: dict[str, IngestTracker], running: set[str],
             select: str | None = None) -> None:
        self._last = (kbs, trackers, running)
        keep = select or (self.selected.id if self.selected else None)
        colours = palette(self.app)
        self.clear()
        self.kbs = {kb.id: kb for kb in kbs}
        for kb in kbs:
            status = status_text(kb.status, colours)
            if kb.id in running and kb.id in trackers:
                status = self._progress(trackers[kb.id], colours)
            self.add_row(line(kb.name), line(kb.scope), Text(str(kb.document_count), justify="right"),
                         Text(str(kb.chunk_count), justify="right"), Text(human_size(kb.total_bytes),
                                                                          justify="right"),
                         status, Text(model_label(kb)), key=kb.id)
        if keep in self.kbs:
            self.move_cursor(row=self.get_row_index(keep))

    def show_progress(self, tracker: IngestTracker) -> None:
        if tracker.kb_id in self.kbs:
            self.update_cell(tracker.kb_id, "status", self._progress(tracker, palette(self.app)))

    @staticmethod
    def _progress(tracker: IngestTracker, colours: dict[str, str]) -> Text:
        done, total = tracker.counts()
        return Text(f"indexing {done}/{total}" if total else "indexing…", style=colours["busy"])
