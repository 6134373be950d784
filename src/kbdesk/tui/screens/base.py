"""What every kbdesk screen shares: the desk, and thread workers routed to the app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Footer

from kbdesk.tui.workers import Blocking

if TYPE_CHECKING:
    from kbdesk.desk import Desk


class DeskScreen(Blocking, Screen[Any]):
    """A full screen over the app's desk. Focus comes back to where it was when a dialog closes."""

    _focus_before: Widget | None = None

    @property
    def desk(self) -> Desk:
        return self.kb_app.desk

    def on_screen_suspend(self) -> None:
        self._focus_before = self.focused

    def on_screen_resume(self) -> None:
        widget, self._focus_before = self._focus_before, None
        if (
            widget is not None
            and widget is not self.focused
            and widget.is_attached
            and widget.display
            and widget.focusable
        ):
            widget.focus()


class OwnKeys:
    """For a dialog: a footer of its own keys (not the keys of the screen behind it). Textual runs
    this ``on_mount`` as well as a dialog's own."""

    def on_mount(self) -> None:
        cast(Widget, self).mount(Footer())


class DeskModal(OwnKeys, Blocking, ModalScreen[Any]):
    """A dialog over the app's desk; Escape cancels it (returns None)."""

    @property
    def desk(self) -> Desk:
        return self.kb_app.desk

    def action_cancel(self) -> None:
        self.dismiss(None)
