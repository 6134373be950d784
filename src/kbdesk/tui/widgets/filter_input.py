"""The search screen's filter line (``tag:q3 path:work/** type:md since:2026-11-01``) with
completion of keys, tags, folders and file types of the KBs being searched (→ accepts)."""

from __future__ import annotations

from textual.suggester import Suggester
from textual.widgets import Input

from kbdesk.desk import FilterHints
from kbdesk.filters_text import complete_line

PLACEHOLDER = "filter… tag:q3 path:work/** type:md since:2026-11-01 (→ completes)"


class FilterSuggester(Suggester):
    """Completes the last word of the line from :attr:`hints` (set when the KBs change)."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.hints = FilterHints()

    async def get_suggestion(self, value: str) -> str | None:
        hints = self.hints
        return complete_line(value, tags=hints.tags, folders=hints.folders, types=hints.types)


class FilterInput(Input):
    def __init__(self, *, id: str | None = None) -> None:
        self.filter_suggester = FilterSuggester()
        super().__init__(placeholder=PLACEHOLDER, id=id, suggester=self.filter_suggester, compact=True)

    def set_hints(self, hints: FilterHints) -> None:
        self.filter_suggester.hints = hints
