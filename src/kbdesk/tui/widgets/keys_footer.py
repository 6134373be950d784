"""The footer of every screen: its keys in one line that is never cut mid-word.

Textual's footer lays its keys out in a row and lets the last ones run off the edge on a
narrow terminal ("f1 Hel"). This one is compact, and when the keys do not fit it leaves
out the last ones (the app's own keys, which ``?`` lists with every other), so what it
shows is always whole, with the command palette's key at the right.

Textual's footer also builds its keys anew (a recompose: new widgets, styles applied) on
every ``refresh_bindings`` of its screen, one recompose per call, even when nothing it
shows changed — a dozen times when a screen is left and the one below comes back. This
one recomposes at most once per refresh, and only when the keys it would show differ; when
only some keys became usable or unusable (the KB screen's Open and Remove once its documents
are in), it marks those keys in place, and its first size does not build it a second time.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PALETTE_ROOM = 12
"""Cells the command palette's key takes at the right ("^p palette" and its gap)."""


class KeysFooter(Footer):
    def __init__(self) -> None:
        super().__init__(compact=True)
        self._width = 0  # the width the keys were laid out for
        self._shown: Any = None  # what the keys were composed from
        self._pending = False

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._pending:
            self._pending = True
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        now = self._keys_now()
        if now == self._shown:
            return
        if self._shown is not None and _but_usable(now) == _but_usable(self._shown):
            usable = {(a.binding.key, a.binding.action): a.enabled for a in self.screen.active_bindings.values()}
            for item in self.query(FooterKey):
                enabled = usable.get((item.key, item.action))
                if enabled is not None:  # as FooterKey's constructor marks it (Textual 8.2): dim, and a click rings
                    item._disabled = not enabled
                    item.set_class(not enabled, "-disabled")
            self._shown = now
            return
        await self.recompose()

    def _keys_now(self) -> Any:
        shown = []
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            shown.append((key, binding.action, binding.description, binding.show, active.enabled, active.tooltip))
        return tuple(shown)

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._shown = self._keys_now()
        items = list(super().compose())
        width = self._width = self.size.width or self.app.size.width
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


def _but_usable(keys: Any) -> Any:
    """The keys as shown, whether each one can be used now left out."""
    return tuple((key, action, description, show, tooltip) for key, action, description, show, _, tooltip in keys)
