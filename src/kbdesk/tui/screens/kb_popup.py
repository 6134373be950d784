"""The knowledge bases of one conversation (seed 000 §8): a checkbox per KB with its
document count; a change applies at once. KBs a persona or project binds are shown
checked and cannot be switched here. "Manage KBs…" leads to the KB list."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, SelectionList, Static
from textual.widgets.selection_list import Selection

from kbdesk.chat.resolve import KbToggle
from kbdesk.chat.safety import one_line
from kbdesk.tui.screens.base import DeskModal

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService

EMPTY = "No knowledge bases yet. Manage KBs… (m) creates one and adds documents to it."
HINT = "Space switches a KB on or off for this conversation; it applies at once."


def toggle_label(row: KbToggle) -> Text:
    docs = row.document_count
    text = Text(one_line(row.name, 40))
    text.append(f"  ({docs} doc{'' if docs == 1 else 's'})", style="dim")
    if row.locked:
        text.append(f" · from the {row.origin}", style="italic dim")
    if row.auto_search:
        text.append(" · auto search", style="italic dim")
    return text


class KbPopupScreen(DeskModal):
    """Dismisses with "manage" (go to the KB list) or None."""

    CSS_PATH = "kb_popup.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Close", id="kbpopup.close"),
        Binding("m", "manage", "Manage KBs…", id="kbpopup.manage"),
    ]

    def __init__(self, chat: ChatService, conversation_id: str) -> None:
        super().__init__()
        self.chat = chat
        self.conversation_id = conversation_id
        self.rows: list[KbToggle] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="kb-popup"):
            yield Static(Text("Knowledge bases"), classes="dialog-title")
            yield SelectionList[str](id="kb-toggles")
            yield Static(Text(HINT), id="kb-popup-hint", classes="note")
            with Horizontal(classes="buttons"):
                yield Button("Manage KBs…", id="manage", compact=True)
                yield Button("Close", variant="primary", id="close", compact=True)

    def on_mount(self) -> None:
        self.in_thread(self.chat.kb_toggles, self.conversation_id, doing="loading knowledge bases", done=self._fill)

    def _fill(self, rows: list[KbToggle]) -> None:
        self.rows = rows
        toggles = self.query_one(SelectionList)
        keep = toggles.highlighted
        toggles.clear_options()
        toggles.add_options([Selection(toggle_label(r), r.kb_id, r.enabled, disabled=r.locked) for r in rows])
        self.query_one("#kb-popup-hint", Static).update(Text(HINT if rows else EMPTY))
        toggles.display = bool(rows)
        if rows:
            first = next((i for i, r in enumerate(rows) if not r.locked), 0)
            toggles.highlighted = keep if keep is not None and keep < len(rows) else first
            toggles.focus()
        else:
            self.query_one("#manage", Button).focus()

    @on(SelectionList.SelectionToggled)
    def _toggled(self, event: SelectionList.SelectionToggled) -> None:
        kb_id = event.selection.value
        enabled = kb_id in event.selection_list.selected
        self.in_thread(
            self.chat.set_kb_enabled,
            self.conversation_id,
            kb_id,
            enabled,
            doing="switching the knowledge base",
            group="toggle",
            done=self._fill,
            failed=lambda _: self.on_mount(),
        )

    @on(Button.Pressed, "#manage")
    def action_manage(self) -> None:
        self.dismiss("manage")

    @on(Button.Pressed, "#close")
    def close(self) -> None:
        self.dismiss(None)
