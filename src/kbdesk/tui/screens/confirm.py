"""A yes/no dialog that says exactly what will happen."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from kbdesk.textsafe import inert, inert_line
from kbdesk.tui.screens.base import OwnKeys


class ConfirmScreen(OwnKeys, ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "answer(False)", "Cancel", id="confirm.no"),
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
    ]

    def __init__(self, question: str, detail: str = "", *, confirm: str = "Delete") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.confirm = confirm

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            # questions quote KB and file names: shown, never obeyed by the terminal
            yield Static(Text(inert_line(self.question), style="bold"), classes="dialog-title")
            if self.detail:
                yield Static(Text(inert(self.detail)), classes="dialog-body")
            with Horizontal(classes="buttons"):
                yield Button(f"{self.confirm} (y)", variant="error", id="yes", compact=True)
                yield Button("Cancel (n)", id="no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_screen_resume(self) -> None:
        self.query_one("#no", Button).focus()  # shown again (an installed dialog): Cancel first, as new

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
