"""Ask for one line of text (a conversation's new title...)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from kbdesk.tui.screens.base import OwnKeys


class PromptScreen(OwnKeys, ModalScreen[str | None]):
    """Dismisses with the text entered (stripped), or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, value: str = "", *, placeholder: str = "", confirm: str = "Save") -> None:
        super().__init__()
        self.title_text = title
        self.value = value
        self.placeholder = placeholder
        self.confirm = confirm

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(Text(self.title_text), classes="dialog-title")
            yield Input(self.value, placeholder=self.placeholder, id="prompt-value", compact=True)
            with Horizontal(classes="buttons"):
                yield Button(self.confirm, variant="primary", id="ok", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def ok(self) -> None:
        value = self.query_one(Input).value.strip()
        if not value:
            self.notify("type something first, or press Esc", severity="warning")
            return
        self.dismiss(value)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
