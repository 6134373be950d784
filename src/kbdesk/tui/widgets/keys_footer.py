"""The footer of every screen: its keys in one line that is never cut mid-word.

Textual's footer lays its keys out in a row and lets the last ones run off the edge on a
narrow terminal ("f1 Hel"). This one is compact, and when the keys do not fit it leaves
out the last ones (the app's own keys, which ``?`` lists with every other), so what it
shows is always whole, with the command palette's key at the right.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PALETTE_ROOM = 12
"""Cells the command palette's key takes at the right ("^p palette" and its gap)."""


class KeysFooter(Footer):
    def __init__(self) -> None:
        super().__init__(compact=True)
        self._width = 0

    def compose(self) -> ComposeResult:
        items = list(super().compose())
        width = self.size.width or self.app.size.width
        keys = [i for i in items if isinstance(i, FooterKey) and "-command-palette" not in i.classes]
        room = width - (PALETTE_ROOM if len(keys) < len(items) else 0)
        used, shown = 0, set()
        for key in keys:
            need = len(key.key_display) + len(key.description) + 2  # "k desc" and the gap after it, compact
            if used + need > room:
                break
            used += need
            shown.add(id(key))
        yield from (i for i in items if not isinstance(i, FooterKey) or id(i) in shown or i not in keys)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            self.call_after_refresh(self.recompose)
