"""Write or change a note: a title and its text."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static, TextArea

from kbdesk.store.notes import Note
from kbdesk.tui.screens.base import OwnKeys


class NoteFormScreen(OwnKeys, ModalScreen[tuple[str, str] | None]):
    """``NoteFormScreen()`` writes a new note, ``NoteFormScreen(note)`` edits one; dismisses
    with (title, content) or None."""

    CSS_PATH = "note_form.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="noteform.cancel"),
        Binding("ctrl+s", "save", "Save", id="noteform.save"),
    ]

    def __init__(self, note: Note | None = None) -> None:
        super().__init__()
        self.note = note

    def compose(self) -> ComposeResult:
        note = self.note
        with Vertical(classes="dialog", id="note-form"):
            yield Static(Text("Edit note" if note else "New note"), classes="dialog-title")
            yield Input(note.title if note else "", placeholder="title (optional)", id="note-title", compact=True)
            yield TextArea(note.content if note else "", id="note-content", soft_wrap=True)
            yield Static(Text("ctrl+s saves · Esc cancels", style="dim"))
            with Horizontal(classes="buttons"):
                yield Button("Save", variant="primary", id="save", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#note-content" if self.note else "#note-title").focus()

    @on(Input.Submitted, "#note-title")
    def _next(self) -> None:
        self.query_one("#note-content", TextArea).focus()

    @on(Button.Pressed, "#save")
    def action_save(self) -> None:
        title = self.query_one("#note-title", Input).value.strip()
        content = self.query_one("#note-content", TextArea).text.strip()
        if not content:
            self.notify("a note needs some text", severity="warning")
            return
        self.dismiss((title, content))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
