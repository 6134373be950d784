"""What every kbdesk screen shares: the desk, and thread workers routed to the app."""

from __future__ import annotations

from typing import Any

from textual.screen import ModalScreen, Screen

from kbdesk.tui.workers import Blocking


class DeskScreen(Blocking, Screen[Any]):
    """A full screen over the app's desk."""

    @property
    def desk(self) -> Any:
        return self.app.desk  # type: ignore[attr-defined]


class DeskModal(Blocking, ModalScreen[Any]):
    """A dialog over the app's desk; Escape cancels it (returns None)."""

    @property
    def desk(self) -> Any:
        return self.app.desk  # type: ignore[attr-defined]

    def action_cancel(self) -> None:
        self.dismiss(None)
