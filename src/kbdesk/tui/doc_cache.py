"""The documents table's rows of each KB, read in a worker and kept for the next look.

Reading 12,500 documents (:meth:`kbdesk.desk.Desk.document_briefs`: a few columns each,
from an index) and building their rows takes a worker ~50 ms of CPU, ~100-150 ms on a
busy machine. The KB list starts that read for the highlighted KB
while the user is still looking at the list (:meth:`DocRowsCache.prefetch`), and the KB
screen paints from what is kept at once, then reads again in the background when what
it painted may be old (:meth:`DocRowsCache.get`), while it is open. Rows are handed out as
copies, so a screen may change its own freely.

A read is Python work in a thread of the app's process: it takes turns on the interpreter
lock with the UI thread, so it runs only when it is needed — a KB the list has no rows of
yet, or the KB screen that painted old ones — never again merely because the list
highlighted a KB it has rows of (leaving the KB screen did that, and slowed the next key).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbdesk.models import KnowledgeBase
from kbdesk.tui.widgets.doc_rows import RowSet, build_rows

FRESH_S = 3.0
"""Rows read this recently are shown without reading again."""
REVALIDATE_AFTER_S = 0.3
"""Older rows are painted first and read again this long after (the read would slow the first frame)."""


@dataclass
class DocRows:
    kb: KnowledgeBase
    rows: RowSet
    read_at: float

    def copy(self) -> DocRows:
        return DocRows(self.kb, self.rows.copy(), self.read_at)

    @property
    def fresh(self) -> bool:
        return time.monotonic() - self.read_at < FRESH_S


Waiter = Callable[[DocRows], None]


class DocRowsCache:
    """Rows by KB id; at most one read per KB at a time, its result going to everyone waiting."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._kept: dict[str, DocRows] = {}
        self._waiting: dict[str, list[Waiter]] = {}

    def kept(self, kb_id: str) -> bool:
        """Whether rows of the KB are kept (perhaps old: :meth:`get` reads them again then)."""
        return kb_id in self._kept

    def prefetch(self, kb_id: str) -> None:
        """Read the KB's rows ahead, unless some are kept (the KB screen paints those and reads again)."""
        if kb_id not in self._waiting and kb_id not in self._kept:
            self._read(kb_id)

    def get(self, kb_id: str, done: Waiter, owner: Any = None) -> bool:
        """Call ``done`` with the KB's rows: now when some are kept (True; a read follows when they
        may be old, if ``owner`` — the screen showing them — is still there), else when the read
        under way or a new one ends (False)."""
        kept = self._kept.get(kb_id)
        if kept is not None:
            done(kept.copy())
            if not kept.fresh:
                (owner or self._app).set_timer(REVALIDATE_AFTER_S, lambda: self.refresh(kb_id, done))
            return True
        self.refresh(kb_id, done)
        return False

    def refresh(self, kb_id: str, done: Waiter) -> None:
        """Read again (or join the read under way) and call ``done`` with the result."""
        waiting = self._waiting.get(kb_id)
        if waiting is not None:
            waiting.append(done)
            return
        self._read(kb_id, done)

    def forget(self, kb_id: str) -> None:
        self._kept.pop(kb_id, None)

    def _read(self, kb_id: str, *waiters: Waiter) -> None:
        self._waiting[kb_id] = list(waiters)
        desk = self._app.desk

        def read() -> DocRows:
            kb = desk.kb(kb_id)
            return DocRows(kb, build_rows(desk.document_briefs(kb.id)), time.monotonic())

        def finished(result: DocRows) -> None:
            self._kept[kb_id] = result
            for waiter in self._waiting.pop(kb_id, []):
                waiter(result.copy())

        self._app.in_thread(
            read, doing="loading documents", done=finished, failed=lambda _: self._waiting.pop(kb_id, None)
        )
