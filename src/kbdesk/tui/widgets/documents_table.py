"""The documents of one KB: filename, size, chunks and a live status."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import DataTable

from kbdesk.models import Document
from kbdesk.tui.format import human_size, line, palette, status_text
from kbdesk.tui.progress import DocProgress

COLUMNS = (("Filename", "filename", 38), ("Size", "size", 9), ("Chunks", "chunks", 6), ("Status", "status", 16))


@dataclass
class DocRow:
    doc_id: str
    filename: str
    size: int | None
    chunks: int | None
    status: str
    error: str | None = None
    done: int = 0
    total: int = 0


class DocumentsTable(DataTable[Text]):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.rows_by_id: dict[str, DocRow] = {}

    def on_mount(self) -> None:
        for label, key, width in COLUMNS:
            self.add_column(label, key=key, width=width)
        self.watch(self.app, "theme", self._restyle, init=False)

    def _restyle(self) -> None:
        """Status colours follow the theme: draw every status cell again."""
        for row in self.rows_by_id.values():
            self.update_cell(row.doc_id, "status", self._cells(row)[3])

    @property
    def selected(self) -> DocRow | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self.rows_by_id.get(key) if key else None

    # ── filling ────────────────────────────────────────────────────────────────
    def load(self, docs: list[Document], live: dict[str, DocProgress]) -> None:
        """Show ``docs`` (from the store), with the live state of documents in flight on top."""
        fresh: dict[str, DocRow] = {}
        for doc in docs:
            row = DocRow(doc.id, doc.filename, doc.size_bytes, doc.chunk_count, doc.status, doc.error)
            progress = live.get(doc.id)
            if progress is not None and doc.status not in ("ready", "error"):
                row = self._merge(row, progress)
            fresh[doc.id] = row
        for gone in set(self.rows_by_id) - set(fresh):
            self.remove_row(gone)
            del self.rows_by_id[gone]
        for row in fresh.values():
            self._put(row)
        self.sort("filename", key=lambda name: name.plain.lower())

    def apply(self, changes: dict[str, DocProgress | None]) -> bool:
        """Apply live changes; True when a document not known to the table appeared."""
        new = False
        for doc_id, progress in changes.items():
            if progress is None:
                if doc_id in self.rows_by_id:
                    self.remove_row(doc_id)
                    del self.rows_by_id[doc_id]
                continue
            old = self.rows_by_id.get(doc_id)
            if old is None:
                new = True
                old = DocRow(doc_id, progress.filename, None, None, progress.status)
            self._put(self._merge(old, progress))
        return new

    @staticmethod
    def _merge(row: DocRow, progress: DocProgress) -> DocRow:
        chunks = progress.total if progress.status in ("ready", "embedding") and progress.total else row.chunks
        return DocRow(row.doc_id, row.filename, row.size, chunks, progress.status,
                      progress.error if progress.status == "error" else None, progress.done, progress.total)

    def _put(self, row: DocRow) -> None:
        old = self.rows_by_id.get(row.doc_id)
        if old == row:
            return
        cells = self._cells(row)
        if old is not None:
            for (_, key, _), before, after in zip(COLUMNS, self._cells(old), cells):
                if before != after:
                    self.update_cell(row.doc_id, key, after)
        else:
            self.add_row(*cells, key=row.doc_id)
        self.rows_by_id[row.doc_id] = row

    def _cells(self, row: DocRow) -> list[Text]:
        return [line(row.filename), Text(human_size(row.size), justify="right"),
                Text("" if row.chunks is None else str(row.chunks), justify="right"),
                status_text(row.status, palette(self.app), row.done, row.total)]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows_by_id.values():
            out[row.status] = out.get(row.status, 0) + 1
        return out
