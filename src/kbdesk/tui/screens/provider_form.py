"""Add or edit a provider: name, kind, base URL, and where its API key comes from.

A stored key is never put back into the form: the key field starts empty, shows dots
while typing, and an empty field keeps the stored key as it is.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from kbdesk.errors import KbdeskError
from kbdesk.providers import DEFAULT_BASE_URLS
from kbdesk.providers.settings import display_url
from kbdesk.tui.screens.base import DeskModal, FormError
from kbdesk.tui.services import KINDS, ProviderForm, save_provider


class ProviderFormScreen(DeskModal):
    """Saves the provider itself and dismisses with the name saved, or None. A refusal (a
    URL with a password in it, a taken name) is shown in the dialog, which keeps what was
    typed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="provider.cancel"),
        Binding("ctrl+s", "save", "Save", id="provider.save"),
    ]

    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        self.original = name

    def compose(self) -> ComposeResult:
        settings: Any = self.desk.config.providers.get(self.original) if self.original else None
        kind = settings.kind if settings else "ollama"
        has_key = bool(settings and settings.api_key)
        with Vertical(classes="dialog"):
            yield Static(
                Text(f"Edit provider '{self.original}'" if self.original else "Add a provider"), classes="dialog-title"
            )
            with Container(classes="form"):
                yield Label("Name")
                yield Input(self.original or "", placeholder="e.g. local, openai", id="name", compact=True)
                yield Label("Kind")
                yield Select([(k, k) for k in KINDS], value=kind, allow_blank=False, id="kind", compact=True)
                yield Label("Base URL")
                # a hand-edited URL's user:password is never shown (saving drops it: keys go in env vars)
                yield Input(
                    display_url(settings.base_url) or "" if settings and settings.base_url else "",
                    placeholder=self._url_hint(kind),
                    id="base_url",
                    compact=True,
                )
                yield Label("Key env var")
                yield Input(
                    settings.api_key_env or "" if settings else "",
                    placeholder="environment variable holding the key, e.g. OPENAI_API_KEY",
                    id="api_key_env",
                    compact=True,
                )
                yield Label("Stored key")
                yield Input(
                    password=True,
                    id="api_key",
                    compact=True,
                    placeholder="(stored key kept; type to replace)"
                    if has_key
                    else "or paste a key to keep in config.toml (mode 0600)",
                )
                if has_key:
                    yield Label("")
                    yield Checkbox("Forget the stored key", id="forget", compact=True)
            yield Static(
                Text(
                    "An environment variable is safer than a stored key; a local server "
                    "(Ollama, LM Studio, llama.cpp, vLLM) needs no key."
                ),
                classes="note",
            )
            yield FormError(classes="form-error")
            with Horizontal(classes="buttons"):
                yield Button("Save", variant="primary", id="ok", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    @staticmethod
    def _url_hint(kind: str) -> str:
        if kind == "local":
            return "none: sentence-transformers in this process"
        default = DEFAULT_BASE_URLS.get(kind)
        return f"default {default}" if default else "http://host:port/v1 (required)"

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus()

    @on(Select.Changed, "#kind")
    def kind_changed(self, event: Select.Changed) -> None:
        self.query_one("#base_url", Input).placeholder = self._url_hint(str(event.value))

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted)
    def action_save(self) -> None:
        def text(widget_id: str) -> str:
            return self.query_one(f"#{widget_id}", Input).value.strip()

        if not text("name"):
            self.show_error("give the provider a name")
            return
        forget = self.query("#forget")
        form = ProviderForm(
            name=text("name"),
            kind=str(self.query_one("#kind", Select).value),
            base_url=text("base_url"),
            api_key_env=text("api_key_env"),
            api_key=text("api_key") or None,
            forget_key=bool(forget and forget.first(Checkbox).value),
            original=self.original,
        )
        self.show_error("")
        self.in_thread(
            save_provider,
            self.desk.paths.config_file,
            form,
            doing=f"saving provider '{form.name}'",
            done=lambda _: self.dismiss(form.name),
            failed=self._refused,
            inline=KbdeskError,
        )

    def _refused(self, error: BaseException) -> None:
        self.show_error(str(error))
