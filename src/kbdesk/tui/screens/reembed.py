"""Re-embed a KB with another model: every chunk is embedded anew, then switched at once."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.widgets import Button, Label, Select, Static

from kbdesk.models import KnowledgeBase
from kbdesk.tui.format import line, model_label
from kbdesk.tui.screens.base import DeskModal
from kbdesk.tui.widgets.model_picker import ModelPicker


class ReembedScreen(DeskModal):
    """Dismisses with (provider, model_id), or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="reembed.cancel")]

    def __init__(self, kb: KnowledgeBase) -> None:
        super().__init__()
        self.kb = kb

    def compose(self) -> ComposeResult:
        providers = sorted(self.desk.config.providers)
        current = self.kb.embedding_config.get("provider")
        role = self.desk.config.roles.embedding
        default = (
            current
            if current in providers
            else role.provider
            if role.provider in providers
            else (providers[0] if providers else None)
        )
        with Vertical(classes="dialog"):
            yield Static(line(f"Re-embed '{self.kb.name}'"), classes="dialog-title")
            yield Static(
                Text(
                    f"Now: {model_label(self.kb)}. Every chunk is embedded with the new model (cached "
                    "vectors are reused); the KB switches only when all are done, so search keeps "
                    "working meanwhile."
                ),
                classes="dialog-body",
            )
            if not providers:
                yield Static(
                    Text("No provider is set up. Add one in Settings (s on the first screen)."), classes="note"
                )
            else:
                with Container(classes="form"):
                    yield Label("Provider")
                    yield Select(
                        [(Text(p), p) for p in providers], value=default, allow_blank=False, id="provider", compact=True
                    )
                    yield Label("Model")
                    yield ModelPicker("embedding", default, None, id="model")
            with Horizontal(classes="buttons"):
                yield Button("Re-embed", variant="warning", id="ok", compact=True, disabled=not providers)
                yield Button("Cancel", id="cancel", compact=True)

    @on(Select.Changed, "#provider")
    def provider_changed(self, event: Select.Changed) -> None:
        picker = self.query_one("#model", ModelPicker)
        if event.value != picker.provider:
            picker.load(str(event.value))

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#ok")
    def ok(self) -> None:
        provider = self.query_one("#provider", Select).value
        model = self.query_one("#model", ModelPicker).value
        if not model:
            self.notify("choose or type a model id", severity="warning")
            return
        self.dismiss((str(provider), model))
