"""A line (or a few) of text that is replaced often, without a layout pass each time."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static


class Readout(Static):
    """A :class:`~textual.widgets.Static` whose text is set with :meth:`show`.

    ``Static.update`` asks for a layout pass of the whole screen, which at real sizes
    costs tens of milliseconds, and progress moves four times a second while keys wait.
    :meth:`show` does nothing when the text is the same, and lays out again only when
    the text's size may change (another width or number of lines).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: Text | None = None

    def show(self, text: Text) -> None:
        old = self._shown
        if old is not None and old == text:
            return
        same_size = (
            old is not None and old.cell_len == text.cell_len and old.plain.count("\n") == text.plain.count("\n")
        )
        self._shown = text.copy()
        self.update(text, layout=not same_size)
