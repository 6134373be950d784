"""The documents of one KB as a virtual table: only the rows on screen are ever drawn.

A KB of 12,500 documents costs the same to paint as one of 20: the rows are plain data
(:mod:`kbdesk.tui.widgets.doc_rows`, built in a worker), and :meth:`render_line` draws
the few that are visible. Live progress changes rows by document id; the cursor follows
a document, not a row number, so a key pressed on the highlighted document acts on it
even when rows appear or disappear around it. A filter shows all documents, only the
failed ones, or only those in progress.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kbdesk.tui.format import human_size, palette, status_text
from kbdesk.tui.progress import DocProgress
from kbdesk.tui.widgets.doc_rows import FILTERS, FINAL, DocRow, RowSet, merge, new_row

SIZE_W, STATUS_W = 9, 17
GAP = 1  # blank cells between columns
LINES_KEPT = 400  # rows kept as drawn (a few screens of them)


class DocumentsTable(ScrollView, can_focus=True):
    """Filename, folder, size, chunks and live status of every document of a KB."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False, id="documents.up"),
        Binding("down", "cursor(1)", "Down", show=False, id="documents.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="documents.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="documents.page_down"),
        Binding("home", "first", "First", show=False, id="documents.first"),
        Binding("end", "last", "Last", show=False, id="documents.last"),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"documents--header", "documents--cursor", "documents--stripe"}
    DEFAULT_CSS = """
    DocumentsTable {
        background: $surface;
        & > .documents--header { text-style: bold; background: $panel; color: $foreground; }
        & > .documents--stripe { background: $surface-lighten-1 50%; }
        & > .documents--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
        }
        &:focus > .documents--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """

    class Highlighted(Message):
        """The cursor is on another document (or on none)."""

        def __init__(self, table: DocumentsTable, row: DocRow | None) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> DocumentsTable:
            return self.table

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows_by_id: dict[str, DocRow] = {}
        self._order: list[tuple[str, str, str]] = []  # every row's key, sorted
        self._view: list[tuple[str, str, str]] = []  # the keys the filter lets through, sorted
        self.filter = "all"
        self.cursor_row = 0
        self._cursor_id: str | None = None
        self._status_counts: dict[str, int] = {}
        self._longest = (0, 0, 0)  # cells of the longest name, folder and chunk count (never shrinks)
        self._lines: dict[tuple[object, ...], Strip] = {}  # rows as drawn, by what they were drawn from

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._repaint, init=False)

    def _repaint(self) -> None:
        self.refresh()

    # ── what the screen reads ──────────────────────────────────────────────────
    @property
    def row_count(self) -> int:
        """Rows shown (under the filter)."""
        return len(self._view)

    @property
    def selected(self) -> DocRow | None:
        return self.rows_by_id.get(self._cursor_id) if self._cursor_id else None

    def counts(self) -> dict[str, int]:
        """Documents by status (all of them, whatever the filter)."""
        return dict(self._status_counts)

    def get_row_index(self, doc_id: str) -> int:
        """Where a document is shown (ValueError when the filter hides it)."""
        row = self.rows_by_id.get(doc_id)
        index = bisect_left(self._view, row.key) if row else len(self._view)
        if row is None or index >= len(self._view) or self._view[index] != row.key:
            raise ValueError(f"document {doc_id} is not shown")
        return index

    def get_row_at(self, index: int) -> list[Text]:
        """The cells of the row shown at ``index``."""
        return self._cells(self.rows_by_id[self._view[index][2]])

    # ── filling ────────────────────────────────────────────────────────────────
    def load(self, rows: RowSet, live: dict[str, DocProgress]) -> None:
        """Show ``rows`` (built in a worker by :func:`doc_rows.build_rows`; the table keeps them and
        changes them), with the documents in flight as ``live`` has them."""
        self.rows_by_id = rows.rows
        self._order = rows.keys
        self._status_counts = rows.counts
        self._longest = rows.longest
        self.apply(
            {
                doc_id: progress
                for doc_id, progress in live.items()
                if doc_id in rows.rows and rows.rows[doc_id].status not in FINAL
            },
            settle=False,
        )
        self._refilter()

    def apply(self, changes: dict[str, DocProgress | None], *, settle: bool = True) -> bool:
        """Apply live changes by document id; True when a document not known to the table appeared."""
        new = False
        allowed = FILTERS[self.filter][1]
        for doc_id, progress in changes.items():
            old = self.rows_by_id.get(doc_id)
            if progress is None:
                if old is not None:
                    self._drop(old)
                continue
            if old is None:
                new = True
                row = new_row(progress)
                insort(self._order, row.key)
            else:
                row = merge(old, progress)
                if row == old:
                    continue
                self._count(old.status, -1)
                if allowed is not None and (old.status in allowed) != (row.status in allowed):
                    self._toggle(old.key, row.status in allowed)
            self.rows_by_id[doc_id] = row
            self._measure((row,))
            self._count(row.status, 1)
            if old is None and (allowed is None or row.status in allowed):
                insort(self._view, row.key)
        if settle:
            self._settle()
        return new

    def set_filter(self, name: str) -> None:
        if name not in FILTERS:
            raise ValueError(name)
        self.filter = name
        self._refilter()

    def _drop(self, row: DocRow) -> None:
        del self.rows_by_id[row.doc_id]
        self._count(row.status, -1)
        for keys in (self._order, self._view):
            index = bisect_left(keys, row.key)
            if index < len(keys) and keys[index] == row.key:
                del keys[index]

    def _toggle(self, key: tuple[str, str, str], show: bool) -> None:
        index = bisect_left(self._view, key)
        present = index < len(self._view) and self._view[index] == key
        if show and not present:
            self._view.insert(index, key)
        elif not show and present:
            del self._view[index]

    def _measure(self, rows: Iterable[DocRow]) -> None:
        name, folder, chunks = self._longest
        for row in rows:
            name = max(name, len(row.filename))
            folder = max(folder, len(row.folder))
            chunks = max(chunks, row.chunks or 0)
        self._longest = (name, folder, chunks)

    def _count(self, status: str, delta: int) -> None:
        self._status_counts[status] = self._status_counts.get(status, 0) + delta

    def _refilter(self) -> None:
        allowed = FILTERS[self.filter][1]
        rows = self.rows_by_id
        self._view = list(self._order) if allowed is None else [k for k in self._order if rows[k[2]].status in allowed]
        self._settle()

    def _settle(self) -> None:
        """After a change: the cursor back on its document (or the nearest row), sizes, a repaint."""
        before = self._cursor_id
        if before is not None and before in self.rows_by_id:
            key = self.rows_by_id[before].key
            index = bisect_left(self._view, key)
            if index < len(self._view) and self._view[index] == key:
                self.cursor_row = index
            else:  # hidden by the filter or removed: the row now in its place
                self.cursor_row = min(index, len(self._view) - 1)
        self.cursor_row = max(0, min(self.cursor_row, len(self._view) - 1))
        self._cursor_id = self._view[self.cursor_row][2] if self._view else None
        self.virtual_size = Size(self.size.width, len(self._view) + 1)
        self._keep_cursor_visible()
        self.refresh()
        if self._cursor_id != before:
            self.post_message(self.Highlighted(self, self.selected))

    # ── the cursor ─────────────────────────────────────────────────────────────
    def move_cursor(self, *, row: int) -> None:
        if not self._view:
            return
        self.cursor_row = max(0, min(row, len(self._view) - 1))
        self._cursor_id = self._view[self.cursor_row][2]
        self._settle()

    def select_document(self, doc_id: str) -> bool:
        """Put the cursor on a document, in the middle of the view (a jump, not a step); False when
        the filter hides it."""
        try:
            index = self.get_row_index(doc_id)
        except ValueError:
            return False
        self.scroll_to(y=max(0, index - self._body_height() // 2), animate=False, immediate=True)
        self.move_cursor(row=index)
        return True

    def first_with_status(self, status: str) -> str | None:
        """The id of the first shown document (after the cursor, wrapping) in ``status``."""
        count = len(self._view)
        for step in range(1, count + 1):
            doc_id = self._view[(self.cursor_row + step) % count][2]
            if self.rows_by_id[doc_id].status == status:
                return doc_id
        return None

    def action_cursor(self, step: int) -> None:
        self.move_cursor(row=self.cursor_row + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(row=self.cursor_row + direction * max(1, self._body_height() - 1))

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=len(self._view) - 1)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and offset.y >= 1:
            self.move_cursor(row=int(self.scroll_y) + offset.y - 1)

    def _body_height(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _keep_cursor_visible(self) -> None:
        top, height = int(self.scroll_y), self._body_height()
        if self.cursor_row < top:
            top = self.cursor_row
        elif self.cursor_row >= top + height:
            top = self.cursor_row - height + 1
        if top != int(self.scroll_y):
            self.scroll_to(y=top, animate=False, immediate=True)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self._view) + 1)
        self._keep_cursor_visible()

    # ── drawing ────────────────────────────────────────────────────────────────
    def _widths(self, width: int) -> tuple[int, int, int, int, int]:
        """Filename, folder, size, chunks, status: numbers never cut, names as wide as the longest
        one while there is room, then ellipsised."""
        name, folder, chunks = self._longest
        chunks_w = max(len("Chunks"), len(str(chunks)))
        rest = max(8, width - SIZE_W - chunks_w - STATUS_W - 6 * GAP)
        folder_w = 0 if folder == 0 else max(len("Folder"), folder)
        name_w = max(len("Filename"), name)
        if name_w + folder_w > rest:  # both give way, the folder more (the name says most)
            folder_w = 0 if not folder_w else min(folder_w, max(len("Folder"), rest // 3))
            name_w = rest - folder_w
        return name_w, folder_w, SIZE_W, chunks_w, STATUS_W

    def _cells(self, row: DocRow) -> list[Text]:
        return [
            Text(row.filename),
            Text(row.folder, style="dim"),
            Text(human_size(row.size), justify="right"),
            Text("" if row.chunks is None else str(row.chunks), justify="right"),
            status_text(row.status, palette(self.app), row.done, row.total),
        ]

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        widths = self._widths(width)
        base = self.rich_style
        if y == 0:
            labels = [
                Text("Filename"),
                Text("Folder" if widths[1] else ""),
                Text("Size", justify="right"),
                Text("Chunks", justify="right"),
                Text("Status"),
            ]
            return self._strip(labels, widths, base + self.get_component_rich_style("documents--header"), width)
        index = int(self.scroll_y) + y - 1
        if index >= len(self._view):
            return Strip.blank(width, base)
        row = self.rows_by_id[self._view[index][2]]
        style = base
        if index % 2:
            style = style + self.get_component_rich_style("documents--stripe")
        if index == self.cursor_row:
            style = style + self.get_component_rich_style("documents--cursor")
        # a row drawn before, unchanged, is not drawn again (a key or a progress tick redraws the
        # whole visible table; most of its rows are as they were)
        drawn = (row.filename, row.folder, row.size, row.chunks, row.status, row.done, row.total)
        key: tuple[object, ...] = (*drawn, widths, style, width, self.app.theme)
        strip = self._lines.get(key)
        if strip is None:
            if len(self._lines) >= LINES_KEPT:
                del self._lines[next(iter(self._lines))]
            strip = self._lines[key] = self._strip(self._cells(row), widths, style, width)
        return strip

    def _strip(self, cells: list[Text], widths: Sequence[int], style: Style, width: int) -> Strip:
        segments: list[Segment] = [Segment(" " * GAP, style)]
        for cell, cell_width in zip(cells, widths, strict=True):
            if not cell_width:
                continue
            text = cell.copy()
            text.truncate(cell_width, overflow="ellipsis", pad=True)
            if cell.justify == "right":
                text = Text(" " * (cell_width - cell.cell_len)) + cell if cell.cell_len < cell_width else text
            segments.extend(
                Segment(seg.text, style + seg.style if seg.style else style) for seg in text.render(self.app.console)
            )
            segments.append(Segment(" " * GAP, style))
        return Strip(segments).adjust_cell_length(width, style)
