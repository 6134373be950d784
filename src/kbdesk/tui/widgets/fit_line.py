"""One line that fits its width: the parts that must show stay whole, hints are left out, and
the others are cut (ending with …) from the least needed on, so a status line never runs off
its edge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import events
from textual.widgets import Static

# (text, style, rank): rank 0 is never cut; a higher rank is cut before a lower one, and a
# HINT is left out whole (a key to press is no use cut in half)
Part = tuple[str, str, int]
HINT = 9
FLOOR = 12  # cells a cut part keeps while another can give way


def fit(parts: Sequence[Part], width: int) -> Text:
    """``parts`` joined into one line at most ``width`` cells wide (uncut while ``width`` is unknown).

    Hints go first; then each cuttable part, highest rank first, keeps at least ``FLOOR`` cells;
    only when that is not enough are they cut further, down to the … alone.
    """
    pieces = [Text(text, style=style) for text, style, _ in parts]
    over = sum(piece.cell_len for piece in pieces) - width
    order = sorted((i for i, part in enumerate(parts) if part[2]), key=lambda i: (-parts[i][2], -i))
    for floor in (FLOOR, 1):
        for i in order:
            if width <= 0 or over <= 0:
                return Text().join(pieces)
            length = pieces[i].cell_len
            keep = 0 if parts[i][2] == HINT else max(length - over, min(floor, length))
            if keep < length:
                over -= length - keep
                pieces[i] = pieces[i][:0] if keep == 0 else pieces[i]
                pieces[i].truncate(keep, overflow="ellipsis")
    return Text().join(pieces)


class FitLine(Static):
    """A :class:`~textual.widgets.Static` of :data:`Part` s, laid out again to its width on every resize."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("", *args, **kwargs)
        self._parts: list[Part] = []

    def show(self, parts: Sequence[Part]) -> None:
        self._parts = list(parts)
        self._refit()

    def on_resize(self, event: events.Resize) -> None:
        self._refit()

    def _refit(self) -> None:
        self.update(fit(self._parts, self.content_size.width))
