"""Add files or a folder to a KB: a path with completion or a picker, and glob filters."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.widgets import Button, Checkbox, DirectoryTree, Input, Label, Static

from kbdesk.ingest.formats import suffix_list
from kbdesk.textsafe import inert_line
from kbdesk.tui.format import line
from kbdesk.tui.screens.base import DeskModal
from kbdesk.tui.widgets.path_input import PathInput
from kbdesk.web.urls import is_url

NOTE_CHARS = 200
"""The longest list of suffixes the dialog's note shows (three lines of an 80-column dialog)."""


@dataclass
class AddRequest:
    paths: list[str]
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    sync: bool = False


def split_globs(text: str) -> list[str]:
    """``*.md, *.txt`` or ``*.md *.txt`` → ["*.md", "*.txt"]."""
    try:
        parts = shlex.split(text.replace(",", " "))
    except ValueError:
        parts = text.replace(",", " ").split()
    return [p for p in parts if p]


def files_read(limit: int = NOTE_CHARS) -> str:
    """The suffixes kbdesk reads (the table of formats), in capitals and alphabetical
    order, within ``limit`` characters ("… and 12 more" past it)."""
    return suffix_list(limit, capitals=True)


class AddFilesScreen(DeskModal):
    CSS_PATH = "add_files.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="add.cancel"),
        Binding("ctrl+b", "browse", "Browse", id="add.browse"),
        Binding("ctrl+s", "add", "Add", id="add.ok"),
    ]

    def __init__(self, kb_name: str) -> None:
        super().__init__()
        self.kb_name = kb_name

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="add-dialog"):
            yield Static(line(f"Add files or a folder to '{self.kb_name}'"), classes="dialog-title")
            with Container(classes="form"):
                yield Label("Path")
                with Horizontal(id="path-row"):
                    yield PathInput(placeholder="a file or folder, e.g. ~/notes (→ completes)", id="path")
                    yield Button("Browse", id="browse", compact=True)
                yield Label("Include")
                yield Input(placeholder="only these globs, e.g. *.md *.pdf (empty: all)", id="include", compact=True)
                yield Label("Exclude")
                yield Input(placeholder="skip these globs, e.g. drafts/* *.csv", id="exclude", compact=True)
                yield Label("")
                yield Checkbox("Remove documents whose files are gone (sync)", id="sync", compact=True)
            yield Static(
                Text(f"Folders are read recursively; unchanged files are skipped. Files read: {files_read()}."),
                classes="note",
            )
            with Horizontal(classes="buttons"):
                yield Button("Add", variant="primary", id="ok", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#path", Input).focus()

    @on(Button.Pressed, "#browse")
    def action_browse(self) -> None:
        """Show a folder tree (made on first use, from the typed folder or the working one)."""
        trees = self.query("#tree")
        if trees:
            trees.first().toggle_class("hidden")
            if trees.first().display:
                trees.first().focus()
            return
        typed = Path(os.path.expanduser(self.query_one("#path", Input).value.strip() or "."))
        root = typed if typed.is_dir() else typed.parent if typed.parent.is_dir() else Path.cwd()
        tree = DirectoryTree(root, id="tree")
        self.query_one("#add-dialog").mount(tree, after=self.query_one(".form"))
        tree.focus()

    @on(DirectoryTree.DirectorySelected)
    @on(DirectoryTree.FileSelected)
    def picked(self, event: DirectoryTree.DirectorySelected | DirectoryTree.FileSelected) -> None:
        event.stop()
        self.query_one("#path", Input).value = str(event.path)

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted)
    def action_add(self) -> None:
        raw = self.query_one("#path", Input).value.strip()
        if not raw:
            self.notify("type or pick a file or folder", severity="warning")
            return
        given = raw if is_url(raw) else os.path.expanduser(raw)  # a web page: fetched by the run
        if not is_url(raw) and not Path(given).exists():
            self.notify(f"{inert_line(raw)} does not exist", severity="warning", markup=False)
            return
        self.dismiss(
            AddRequest(
                [given],
                split_globs(self.query_one("#include", Input).value),
                split_globs(self.query_one("#exclude", Input).value),
                self.query_one("#sync", Checkbox).value,
            )
        )
