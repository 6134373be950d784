"""What every kbdesk screen shares: the desk, and thread workers routed to the app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Static

from kbdesk.textsafe import inert_line
from kbdesk.tui.widgets.keys_footer import KeysFooter
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
        cast(Widget, self).mount(KeysFooter())


class FormError(Static):
    """A dialog's error line: what was wrong with what was typed, shown beside it (the
    dialog stays open with the input as it was). Hidden while there is nothing to say."""

    def show(self, message: str) -> None:
        self.update(Text(inert_line(message)))
        self.display = bool(message)

    def on_mount(self) -> None:
        self.display = False


class DeskModal(OwnKeys, Blocking, ModalScreen[Any]):
    """A dialog over the app's desk; Escape cancels it (returns None)."""

    def show_error(self, message: str) -> None:
        """Say what is wrong in the dialog's :class:`FormError` line."""
        self.query_one(FormError).show(message)

    @property
    def desk(self) -> Desk:
        return self.kb_app.desk

    def action_cancel(self) -> None:
        self.dismiss(None)
