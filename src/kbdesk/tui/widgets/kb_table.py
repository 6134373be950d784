"""The table of knowledge bases (seed 000 §12's list, for one user).

Columns are as wide as what they hold: counts and sizes are never cut (12,500 documents
read "12500"); the name gets the width that is left and ends in a visible "…" when it
does not fit.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from kbdesk.models import KnowledgeBase
from kbdesk.tui.format import human_size, line, model_label, palette, status_text
from kbdesk.tui.progress import IngestTracker

# label, key; the name's column takes what the others leave
COLUMNS = (
    ("Name", "name"),
    ("Scope", "scope"),
    ("Docs", "docs"),
    ("Chunks", "chunks"),
    ("Size", "size"),
    ("Status", "status"),
    ("Embedding", "model"),
)
NAME_MIN, MODEL_MAX = 8, 28
CELL_PADDING = 2  # DataTable pads each cell by one column on either side


class KbTable(DataTable[Text]):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.kbs: dict[str, KnowledgeBase] = {}
        self.unfinished: dict[str, int] = {}
        self.deleting: set[str] = set()
        self._last: tuple[list[KnowledgeBase], dict[str, IngestTracker], set[str]] | None = None
        self._shown_widths: list[int] = []

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._restyle, init=False)

    def _restyle(self) -> None:
        if self._last is not None:
            self.load(*self._last)

    def on_resize(self) -> None:
        if self._last is not None and self._widths(self._cells_of(*self._last)) != self._shown_widths:
            self._restyle()  # names get more (or less) room

    @property
    def selected(self) -> KnowledgeBase | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self.kbs.get(key) if key else None

    def load(
        self, kbs: list[KnowledgeBase], trackers: dict[str, IngestTracker], running: set[str], select: str | None = None
    ) -> None:
        self._last = (kbs, trackers, running)
        keep = select or (self.selected.id if self.selected else None)
        rows = list(zip((kb.id for kb in kbs), self._cells_of(kbs, trackers, running), strict=True))
        widths = self._shown_widths = self._widths([cells for _, cells in rows])
        self.clear(columns=True)
        for (label, key), width in zip(COLUMNS, widths, strict=True):
            self.add_column(label, key=key, width=width)
        self.kbs = {kb.id: kb for kb in kbs}
        for kb_id, cells in rows:
            name, scope, docs, chunks, size, status, model = cells
            self.add_row(
                _fit(name, widths[0]),
                line(scope),
                Text(docs, justify="right"),
                Text(chunks, justify="right"),
                Text(size, justify="right"),
                status,
                _fit(model, widths[6]),
                key=kb_id,
            )
        if keep in self.kbs:
            self.move_cursor(row=self.get_row_index(keep))

    def _cells_of(
        self, kbs: list[KnowledgeBase], trackers: dict[str, IngestTracker], running: set[str]
    ) -> list[list[Any]]:
        colours = palette(self.app)
        return [
            [
                kb.name,
                kb.scope,
                str(kb.document_count),
                str(kb.chunk_count),
                human_size(kb.total_bytes),
                self._status(kb, trackers.get(kb.id) if kb.id in running else None, colours),
                model_label(kb),
            ]
            for kb in kbs
        ]

    def _widths(self, rows: list[list[Any]]) -> list[int]:
        """Every column as wide as its widest cell; the name (then the model) gives way."""
        widths = [max([len(label)] + [_len(cells[i]) for cells in rows]) for i, (label, _) in enumerate(COLUMNS)]
        widths[6] = min(widths[6], MODEL_MAX)
        room = self.size.width - CELL_PADDING * len(COLUMNS) - 2  # 2: the vertical scrollbar
        if room <= 0:
            return widths
        fixed = sum(widths) - widths[0]
        widths[0] = max(NAME_MIN, min(widths[0], room - fixed))
        if sum(widths) > room:  # still too wide: the model's column shrinks too
            widths[6] = max(len("Embedding"), widths[6] - (sum(widths) - room))
        return widths

    def _status(self, kb: KnowledgeBase, tracker: IngestTracker | None, colours: dict[str, str]) -> Text:
        if kb.id in self.deleting:
            return Text("deleting…", style=colours["busy"])
        if tracker is not None:
            return self._progress(tracker, colours)
        if self.unfinished.get(kb.id):
            return Text(f"⚠ {self.unfinished[kb.id]} unfinished", style=f"bold {colours['busy']}")
        if kb.failed_documents and kb.health == "error":
            return Text(f"✗ all {kb.failed_documents} failed", style=f"bold {colours['bad']}")
        if kb.failed_documents:
            return Text(f"⚠ {kb.failed_documents} failed", style=colours["busy"])
        return status_text(kb.status, colours)

    def show_progress(self, tracker: IngestTracker) -> None:
        if tracker.kb_id in self.kbs:
            cell = self._progress(tracker, palette(self.app))
            column = self.columns.get("status")  # type: ignore[call-overload]
            self.update_cell(
                tracker.kb_id, "status", cell, update_width=column is not None and cell.cell_len > column.width
            )

    @staticmethod
    def _progress(tracker: IngestTracker, colours: dict[str, str]) -> Text:
        done, total = tracker.counts()
        return Text(f"indexing {done}/{total}" if total else "indexing…", style=colours["busy"])


def _len(cell: object) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(line(cell).plain)


def _fit(value: str, width: int) -> Text:
    """A name cut to ``width`` cells with a visible "…" (never silently)."""
    text = line(value)
    text.truncate(width, overflow="ellipsis")
    return text
