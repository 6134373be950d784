"""Keys of the screen below, and a short guide."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from kbdesk.tui.screens.base import OwnKeys

GUIDE = (
    "kbdesk keeps knowledge bases (KBs) in one SQLite file. Create a KB (n), open it (Enter), add a file "
    "or a whole folder (a) and watch every document go pending → extracting → chunking → embedding → "
    "ready, or error with its reason (f filters the documents to errors or to those in progress, g goes to "
    "the next error). Indexing stopped half-way (a quit, a crash) leaves unfinished documents: kbdesk says "
    "so at launch and on the KB, and u resumes them (ingest.auto_resume = true in config.toml, or "
    "KBDESK_AUTO_RESUME=1, resumes without asking). "
    "Search (/) by meaning and by keyword: each hit shows its similarity, "
    "its vector and keyword ranks and the fused score, and the candidates the threshold or the limit cut, "
    "so you can see why something ranked where it did. Settings (s) hold the providers (any "
    "OpenAI-compatible server) and the model roles. Chat (c) asks the knowledge bases: the model searches "
    "them and each answer lists its sources. Notes (j) are short texts the chat can search too. "
    "ctrl+p opens the command palette."
)
ALWAYS_LISTED = {"app.chat", "app.notes", "chat.retrieval", "chat.model", "kb.refresh", "kbs.refresh"}
"""Bindings kept out of the footers (no room) but listed here."""


class HelpScreen(OwnKeys, ModalScreen[None]):
    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,f1,question_mark", "dismiss", "Close", id="help.close")]

    def __init__(self, below: Screen[Any]) -> None:
        super().__init__()
        self.below = below

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="help-dialog"):
            yield Static(Text("Help"), classes="dialog-title")
            with VerticalScroll():
                yield Static(self._keys())
                yield Static(Text(GUIDE), id="guide")

    def _keys(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        seen: set[str] = set()
        for active in self.below.active_bindings.values():
            binding = active.binding
            shown = binding.show or binding.id in ALWAYS_LISTED
            if not shown or not binding.description or binding.description in seen:
                continue  # widget navigation (arrows, paging) is left out: it is what you expect
            seen.add(binding.description)
            table.add_row(Text(self.app.get_key_display(binding)), Text(binding.description))
        table.add_row(Text("ctrl+p"), Text("Command palette: every action by name"))
        table.add_row(Text("tab"), Text("Next field or panel"))
        return table

    async def action_dismiss(self, result: Any = None) -> None:
        self.dismiss(None)
