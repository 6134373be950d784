"""Pick the knowledge bases a search looks in."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, SelectionList, Static

from kbdesk.models import KnowledgeBase
from kbdesk.remote.registry import pickable_kbs
from kbdesk.tui.format import line
from kbdesk.tui.screens.base import DeskModal


class ChooseKbsScreen(DeskModal):
    """Dismisses with the chosen KB names, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="kbs.cancel"),
        Binding("ctrl+a", "all", "All", id="kbs.all"),
        Binding("ctrl+s", "ok", "Save", id="kbs.ok"),
    ]

    def __init__(self, chosen: list[str]) -> None:
        super().__init__()
        self.chosen = set(chosen)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(Text("Search in (space toggles)"), classes="dialog-title")
            yield Static("", id="remote-state")
            yield SelectionList[str](id="choices")
            with Horizontal(classes="buttons"):
                yield Button("Save (ctrl+s)", variant="primary", id="ok", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#remote-state", Static).display = False
        self.in_thread(pickable_kbs, self.desk, doing="loading knowledge bases", done=self._fill_all)

    def _fill_all(self, found: tuple[list[KnowledgeBase], list[Any]]) -> None:
        kbs, states = found
        down = [s for s in states if s.state != "searched"]
        if down:  # a remote that did not answer: its KBs are not offered now, and why
            state = self.query_one("#remote-state", Static)
            state.update(Text("\n".join(f"⚠ remote '{s.remote}' {s.state}: {s.reason}" for s in down), style="bold"))
            state.display = True
        self._fill(kbs)

    def _fill(self, kbs: list[KnowledgeBase]) -> None:
        choices = self.query_one(SelectionList)
        for kb in kbs:
            remote = "  remote, read-only" if kb.scope == "remote" else ""
            label = line(kb.name) + Text(f"  {kb.document_count} docs{remote}", style="dim")
            choices.add_option((label, kb.name, kb.name in self.chosen))
        if kbs:
            choices.highlighted = 0
        choices.focus()

    def action_all(self) -> None:
        self.query_one(SelectionList).select_all()

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#ok")
    def action_ok(self) -> None:
        names = list(self.query_one(SelectionList).selected)
        if not names:
            self.notify("choose at least one knowledge base", severity="warning")
            return
        self.dismiss(names)
