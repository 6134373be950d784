"""What screens and widgets ask of the running app, as a type (the app itself is
:class:`kbdesk.tui.app.KbdeskApp`, which imports every screen: they know it only by this)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kbdesk.desk import Desk
    from kbdesk.tui.doc_cache import DocRowsCache


class DeskApp(Protocol):
    desk: Desk
    """The desk every screen works on."""
    doc_rows: DocRowsCache
    """Each KB's document rows, read once and kept while they are current."""

    def report_error(self, error: BaseException | None, doing: str = "") -> None:
        """One notification for a failed piece of work, never a traceback."""

    def ingesting(self, kb_id: str | None = None) -> bool:
        """Whether the app is indexing (that KB, or any)."""
        ...

    def action_resume_all(self) -> None:
        """Resume every KB's unfinished documents."""
