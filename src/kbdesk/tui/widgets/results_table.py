"""Search results as a retrieval debugger: every candidate, its ranks, scores and fate."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from kbdesk.textsafe import inert_line
from kbdesk.tui.format import line, palette, score, where_label

COLUMNS = (
    ("#", "rank", 2),
    ("Sim", "sim", 5),
    ("Vec", "vec", 3),
    ("Kw", "kw", 3),
    ("Fused", "fused", 6),
    ("Kept?", "cut", 9),
    ("Source", "source", 24),
    ("KB", "kb", 10),
)

FIXED = sum(width for _, key, width in COLUMNS if key not in ("source", "kb"))
"""Cells of the columns whose width never changes; Source and KB share what is left."""

CUT_LABELS = {"threshold": "threshold", "limit": "limit", "keyword floor": "kw floor", "no vector": "no vector"}


class ResultsTable(DataTable[Text]):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.hits: list[dict[str, Any]] = []
        self._last: tuple[list[dict[str, Any]], bool] | None = None
        self._widths = {key: width for _, key, width in COLUMNS}

    def on_mount(self) -> None:
        self._add_columns()
        self.watch(self.app, "theme", self._restyle, init=False)

    def _add_columns(self) -> None:
        for label, key, _ in COLUMNS:
            self.add_column(label, key=key, width=self._widths[key])

    def on_resize(self) -> None:
        """Source and KB take the width the terminal has (the source gets two thirds)."""
        room = self.size.width - FIXED - 2 * len(COLUMNS) - 1  # cell padding, a scrollbar's cell
        kb = max(10, min(30, room // 3))
        widths = {**self._widths, "kb": kb, "source": max(24, room - kb)}
        if widths != self._widths:
            self._widths = widths
            row = self.cursor_row
            self.clear(columns=True)
            self._add_columns()
            if self._last is not None:
                self.show(*self._last)
                self.move_cursor(row=row)

    def _restyle(self) -> None:
        if self._last is not None:
            row = self.cursor_row
            self.show(*self._last)
            self.move_cursor(row=row)

    @property
    def selected(self) -> dict[str, Any] | None:
        if not self.row_count:
            return None
        return self.hits[self.cursor_row] if 0 <= self.cursor_row < len(self.hits) else None

    def show(self, explain: list[dict[str, Any]], show_cut: bool) -> None:
        self._last = (explain, show_cut)
        colours = palette(self.app)
        self.clear()
        self.hits = []
        rank = 0
        for hit in explain:
            kept = hit.get("cut") is None
            if kept:
                rank += 1
                hit = {**hit, "rank": rank}
            elif not show_cut:
                continue
            self.hits.append(hit)
            dim = "" if kept else "dim"
            fate = (
                Text("✓ result", style=colours["ok"])
                if kept
                else Text(
                    CUT_LABELS.get(hit["cut"], inert_line(hit["cut"])),
                    style=colours["bad"] if hit["cut"] == "threshold" else "dim",
                )
            )
            source = hit.get("source", "")
            where = where_label(hit.get("metadata") or {})
            self.add_row(
                Text(str(hit["rank"]) if kept else "", style=dim, justify="right"),
                Text(score(hit.get("similarity")), style=dim or "bold", justify="right"),
                Text(str(hit["vector_rank"] or "–"), style=dim, justify="right"),
                Text(str(hit["keyword_rank"] or "–"), style=dim, justify="right"),
                Text(score(hit.get("fused"), 4), style=dim, justify="right"),
                fate,
                _fit(line(f"{source} · {where}" if where else source, style=dim), self._widths["source"]),
                _fit(line(hit.get("kb", ""), style=dim), self._widths["kb"]),
            )


def _fit(text: Text, width: int) -> Text:
    """``text`` cut to ``width`` cells with an ellipsis, so a cut name shows that it is cut."""
    text.truncate(width, overflow="ellipsis")
    return text
