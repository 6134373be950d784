"""Create or edit a knowledge base: name, description, chunking, and (new KBs) the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Select, Static

from kbdesk.errors import KbdeskError
from kbdesk.models import KnowledgeBase
from kbdesk.textsafe import inert_line
from kbdesk.tui.screens.base import DeskModal, FormError
from kbdesk.tui.widgets.model_picker import ModelPicker

KEYWORD_ONLY = "\x00keyword"
KEYWORD_LABEL = "none: keyword search only"
KEYWORD_HINT = "Found by their words. Choose a provider to also search by meaning."


@dataclass
class KbFormResult:
    name: str
    description: str
    chunk_size: int
    chunk_overlap: int
    provider: str | None = None
    model_id: str | None = None
    keyword_only: bool = False


class KbFormScreen(DeskModal):
    """``KbFormScreen()`` creates, ``KbFormScreen(kb)`` edits; dismisses with the KB created or
    saved. A refusal (a name taken, bad chunking) is shown in the dialog, which stays open
    with what was typed."""

    DEFAULT_CSS = """
    KbFormScreen #chunking { height: auto; }
    KbFormScreen #chunking > Input { width: 10; }
    KbFormScreen #chunking > .between { width: auto; margin: 0 1; color: $text-muted; }
    KbFormScreen #embedding-box { height: auto; }
    KbFormScreen #embedding-box > .hint { color: $text-muted; height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="form.cancel"),
        Binding("ctrl+s", "save", "Save", id="form.save"),
    ]

    def __init__(self, kb: KnowledgeBase | None = None) -> None:
        super().__init__()
        self.kb = kb

    def compose(self) -> ComposeResult:
        config = self.desk.config
        kb = self.kb
        with VerticalScroll(classes="dialog", id="kb-form"):
            title = f"Edit '{kb.name}'" if kb else "New knowledge base"
            yield Static(Text(inert_line(title)), classes="dialog-title")
            with Container(classes="form"):
                yield Label("Name")
                yield Input(kb.name if kb else "", placeholder="e.g. notes", id="name", compact=True)
                yield Label("Description")
                yield Input(
                    kb.description if kb else "", placeholder="what it holds (optional)", id="description", compact=True
                )
                yield Label("Chunks")
                with Horizontal(id="chunking"):
                    yield Input(
                        str(kb.chunk_size if kb else config.chunking.chunk_size),
                        type="integer",
                        id="chunk_size",
                        compact=True,
                    )
                    yield Label("characters, overlap", classes="between")
                    yield Input(
                        str(kb.chunk_overlap if kb else config.chunking.chunk_overlap),
                        type="integer",
                        id="chunk_overlap",
                        compact=True,
                    )
                if kb is None:
                    yield from self._embedding_fields()
            if kb is not None:
                yield Static(
                    Text(
                        f"Embedding model: {inert_line(kb.model_id or 'none (keyword search)')}. "
                        "New chunking applies to documents added or rebuilt from now on."
                    ),
                    classes="note",
                )
            yield FormError(classes="form-error")
            with Horizontal(classes="buttons"):
                yield Button("Save" if kb else "Create", variant="primary", id="ok", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def _embedding_fields(self) -> ComposeResult:
        """How the new KB is searched: by keyword only (first, and the default unless an
        embedding model is set), or also by meaning with a provider's embedding model —
        whose list never offers a chat model."""
        config = self.desk.config
        role = config.roles.embedding
        options: list[tuple[Any, str]] = [(KEYWORD_LABEL, KEYWORD_ONLY)]
        options += [(Text(name), name) for name in sorted(config.providers)]
        default = role.provider if role.model and role.provider in config.providers else KEYWORD_ONLY
        yield Label("Embeddings")
        with Vertical(id="embedding-box"):
            yield Select(options, value=default, allow_blank=False, id="provider", compact=True)
            hint = Static(Text(KEYWORD_HINT), id="keyword-hint", classes="hint")
            hint.display = default == KEYWORD_ONLY
            yield hint
        label = Label("Model", id="model-label")
        label.display = default != KEYWORD_ONLY
        yield label
        picker = ModelPicker(
            "embedding",
            None if default == KEYWORD_ONLY else default,
            role.model if default == role.provider else None,
            autoload=default != KEYWORD_ONLY,
            exclude=self._chat_models(),
            id="model",
        )
        picker.display = default != KEYWORD_ONLY
        yield picker

    def _chat_models(self) -> frozenset[str]:
        """Model ids known to be chat models here: the chat role's (never an embedding model)."""
        chat = self.desk.config.roles.chat
        return frozenset({chat.model}) if chat.model else frozenset()

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus()

    @on(Select.Changed, "#provider")
    def provider_changed(self, event: Select.Changed) -> None:
        picker = self.query_one("#model", ModelPicker)
        keyword = event.value == KEYWORD_ONLY
        picker.display = not keyword
        self.query_one("#model-label", Label).display = not keyword
        self.query_one("#keyword-hint", Static).display = keyword
        if not keyword and (event.value != picker.provider or not picker.loaded):
            picker.load(str(event.value))

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted)
    def action_save(self) -> None:
        form = self._read()
        if form is None:
            return
        self.show_error("")
        if self.kb is None:
            self.in_thread(
                self.desk.create_kb,
                form.name,
                form.description,
                model_id=form.model_id,
                provider=form.provider,
                chunk_size=form.chunk_size,
                chunk_overlap=form.chunk_overlap,
                keyword_only=form.keyword_only,
                doing=f"creating '{form.name}'",
                done=self.dismiss,
                failed=self._refused,
                inline=KbdeskError,
            )
        else:
            self.in_thread(
                self.desk.edit_kb,
                self.kb.id,
                name=form.name,
                description=form.description,
                chunk_size=form.chunk_size,
                chunk_overlap=form.chunk_overlap,
                doing=f"saving '{inert_line(self.kb.name)}'",
                done=self.dismiss,
                failed=self._refused,
                inline=KbdeskError,
            )

    def _refused(self, error: BaseException) -> None:
        if isinstance(error, KbdeskError):
            self.show_error(str(error))

    def _read(self) -> KbFormResult | None:
        def text(widget_id: str) -> str:
            return self.query_one(f"#{widget_id}", Input).value.strip()

        name = text("name")
        if not name:
            self._invalid("give the knowledge base a name")
            return None
        try:
            size, overlap = int(text("chunk_size")), int(text("chunk_overlap"))
        except ValueError:
            self._invalid("chunk size and overlap are whole numbers")
            return None
        if size < 1 or not 0 <= overlap < size:
            self._invalid("chunk size must be at least 1, and overlap between 0 and the size")
            return None
        result = KbFormResult(name, text("description"), size, overlap)
        if self.kb is None:
            provider: Any = self.query_one("#provider", Select).value
            if provider == KEYWORD_ONLY:
                result.keyword_only = True
            else:
                model = self.query_one("#model", ModelPicker).value
                if not model:
                    self._invalid(f"choose or type an embedding model, or pick '{KEYWORD_LABEL}' under Embeddings")
                    return None
                result.provider, result.model_id = str(provider), model
        return result

    def _invalid(self, message: str) -> None:
        self.show_error(message)
