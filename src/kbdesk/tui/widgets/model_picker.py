"""The model role picker of seed 000 §0: a dropdown of the provider's models, or a text input.

- The dropdown is filled from the provider's model list with the role's tolerant filter
  (models without a type count as embedding candidates).
- The pencil button toggles between the dropdown and a text input for any model id.
- With an empty list, or a provider that cannot list, the picker switches to the input.
- A saved model id that is not in the list is shown in the input, never lost.
- With ``exclude`` (the new-KB dialog), only models of the role's kind are offered —
  the server's word, else their name — and never the ids excluded (the chat model).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Button, Input, Select, Static

from kbdesk.providers import ModelInfo
from kbdesk.providers.model_kinds import model_kind
from kbdesk.textsafe import inert_line
from kbdesk.tui.services import list_models, role_candidates
from kbdesk.tui.workers import Blocking

LIST, MANUAL = "list", "manual"


class ModelPicker(Blocking, Widget):
    DEFAULT_CSS = """
    ModelPicker { height: auto; }
    ModelPicker > Horizontal { height: auto; }
    ModelPicker Select { width: 1fr; }
    ModelPicker Input { width: 1fr; }
    ModelPicker #toggle { width: 5; min-width: 5; margin-left: 1; }
    ModelPicker.-manual Select { display: none; }
    ModelPicker.-list Input { display: none; }
    ModelPicker #note { color: $text-muted; height: auto; }
    """

    mode: reactive[str] = reactive(LIST)

    class Changed(Message):
        """The chosen model id changed (None: nothing chosen)."""

        def __init__(self, picker: ModelPicker, value: str | None) -> None:
            super().__init__()
            self.picker = picker
            self.value = value

        @property
        def control(self) -> ModelPicker:
            return self.picker

    def __init__(
        self,
        role: str,
        provider: str | None,
        saved: str | None = None,
        *,
        autoload: bool = True,
        exclude: frozenset[str] | None = None,
        id: str | None = None,
    ) -> None:
        """``exclude`` (the embedding role): ids never offered — and with it, models that
        are chat models by the server's word or by their name are not offered either
        (they can still be typed)."""
        super().__init__(id=id)
        self.role = role
        self.exclude = exclude
        self.provider = provider
        self.saved = saved or None
        self.autoload = autoload
        self.loaded = False
        self.models: list[ModelInfo] = []
        self.loading = False

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Select[str]([], prompt="choose a model", id="choice", compact=True)
            example = "text-embedding-3-small" if self.role == "embedding" else "llama3.2"
            yield Input(
                value=self.saved or "", placeholder=f"type a model id, e.g. {example}", id="manual", compact=True
            )
            yield Button("✎", id="toggle", compact=True, tooltip="Switch between the list and typing an id")
        yield Static("", id="note")

    def on_mount(self) -> None:
        self.set_class(True, "-list")
        if self.autoload:
            self.load(self.provider, self.saved)

    def ensure_loaded(self) -> None:
        """Load the list now unless it was loaded (or is loading) already."""
        if not self.loaded:
            self.load(self.provider, self.saved)

    # ── the value ──────────────────────────────────────────────────────────────
    @property
    def value(self) -> str | None:
        if self.mode == MANUAL:
            return self.query_one("#manual", Input).value.strip() or None
        if not self.models:  # the list is not in (not asked for yet, or loading): the saved id stands
            return self.saved
        chosen = self.query_one("#choice", Select).value
        return chosen if isinstance(chosen, str) and chosen else None

    def watch_mode(self, mode: str) -> None:
        self.set_class(mode == MANUAL, "-manual")
        self.set_class(mode == LIST, "-list")

    # ── loading the list ───────────────────────────────────────────────────────
    def load(self, provider: str | None, saved: str | None = None) -> None:
        """List ``provider``'s models in a worker; ``saved`` is the id to show chosen."""
        self.loaded = True
        self.provider = provider
        self.saved = saved if saved is not None else (self.value if self.mode == MANUAL or self.models else self.saved)
        self.models = []
        select = self.query_one("#choice", Select)
        select.set_options([])
        if not provider:
            self._manual("no provider chosen: type a model id")
            return
        self.loading = True
        self._note(f"listing the models of '{provider}'…")
        self.in_thread(
            list_models,
            self.kb_app.desk.config,
            provider,
            doing=f"listing models of '{provider}'",
            done=self._listed,
            failed=self._list_failed,
            group="models",
            exclusive=True,
        )

    def _listed(self, models: list[ModelInfo]) -> None:
        self.loading = False
        # this role's kind first (the server's word, then guesses by name), the rest after
        candidates = role_candidates(models, self.role)
        if self.exclude is not None:
            candidates = [m for m in candidates if m.id not in self.exclude and model_kind(m).kind == self.role]
        self.models = sorted(
            candidates, key=lambda m: (model_kind(m).kind != self.role, not model_kind(m).said_by_server)
        )
        ids = [m.id for m in self.models]
        select = self.query_one("#choice", Select)
        select.set_options([(self._label(m), m.id) for m in self.models])
        if not ids:
            self._manual(f"'{self.provider}' lists no {self.role} models: type a model id")
        elif self.saved and self.saved not in ids:
            self._manual(f"'{self.saved}' is not in the provider's list; kept as typed")
        else:
            if self.saved:
                select.value = self.saved
            self.mode = LIST
            self._note(f"{len(ids)} {self.role} candidates from '{self.provider}'")
        self._changed()

    def _list_failed(self, error: BaseException) -> None:
        self.loading = False
        self._manual(f"could not list models: {error}")
        self._changed()

    @staticmethod
    def _label(model: ModelInfo) -> Text:
        """The id and its kind: the server's word, or a guess from the id marked as one."""
        return Text(inert_line(model.id)) + Text(f"  {model_kind(model).label}", style="dim")

    def _manual(self, note: str) -> None:
        manual = self.query_one("#manual", Input)
        if self.saved and not manual.value.strip():
            manual.value = self.saved
        self.mode = MANUAL
        self._note(note)

    def _note(self, text: str) -> None:
        self.query_one("#note", Static).update(Text(text))

    # ── switching by hand ──────────────────────────────────────────────────────
    @on(Button.Pressed, "#toggle")
    def toggle(self, event: Button.Pressed | None = None) -> None:
        if event is not None:
            event.stop()
        current = self.value
        if self.mode == LIST:
            self.query_one("#manual", Input).value = current or ""
            self.mode = MANUAL
            self.query_one("#manual", Input).focus()
            return
        if not self.models:
            self._note("no models to pick from: type a model id")
            return
        select = self.query_one("#choice", Select)
        if current in {m.id for m in self.models}:
            select.value = current
        self.mode = LIST
        select.focus()
        self._changed()

    @on(Select.Changed, "#choice")
    @on(Input.Changed, "#manual")
    def _inner_changed(self, event: Any) -> None:
        event.stop()
        self._changed()

    def _changed(self) -> None:
        self.post_message(self.Changed(self, self.value))
