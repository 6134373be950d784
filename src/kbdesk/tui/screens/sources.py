"""The sources of a conversation's answers, the latest answer first; Enter opens one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kbdesk.chat.safety import one_line
from kbdesk.tui.screens.base import DeskModal
from kbdesk.tui.widgets.transcript import source_label

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService


class SourcesScreen(DeskModal):
    CSS_PATH = "sources.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "cancel", "Close", id="sources.close")]

    def __init__(self, chat: ChatService, groups: list[tuple[str, list[dict[str, Any]]]]) -> None:
        super().__init__()
        self.chat = chat
        self.groups = groups
        self.by_id: dict[str, dict[str, Any]] = {}

    def compose(self) -> ComposeResult:
        options: list[Option] = []
        for g, (question, sources) in enumerate(self.groups):
            options.append(Option(Text(f"“{one_line(question, 70)}”", style="dim italic"), disabled=True))
            for s, source in enumerate(sources):
                key = f"{g}.{s}"
                self.by_id[key] = source
                prompt = Text()
                prompt.append(f"[{source.get('n', '?')}] ", style="bold")
                prompt.append(source_label(source))
                options.append(Option(prompt, id=key))
        with Vertical(classes="dialog", id="sources-dialog"):
            yield Static(Text("Sources"), classes="dialog-title")
            yield OptionList(*options, id="sources-list")
            yield Static(Text("Enter opens the passage with its neighbours · Esc closes", style="dim"))

    def on_mount(self) -> None:
        sources = self.query_one(OptionList)
        sources.highlighted = 1 if sources.option_count > 1 else None
        sources.focus()

    @on(OptionList.OptionSelected)
    def _open(self, event: OptionList.OptionSelected) -> None:
        from kbdesk.tui.screens.source import SourceScreen

        source = self.by_id.get(event.option_id or "")
        if source is not None:
            self.app.push_screen(SourceScreen(self.chat, source))
