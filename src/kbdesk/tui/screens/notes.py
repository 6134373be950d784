"""Notes (seed 000 §7): write, edit and delete short notes; search them by keyword, and by
meaning when an embedding model is set."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Checkbox, Header, Input, OptionList, Static
from textual.widgets.option_list import Option

from kbdesk.chat.notes import NoteSearch
from kbdesk.chat.safety import clean, one_line
from kbdesk.store.notes import Note
from kbdesk.tui.screens.base import DeskScreen
from kbdesk.tui.widgets.keys_footer import KeysFooter

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService

EMPTY = "No notes yet. Press n to write one: the chat's note_search tool finds them too."


def note_title(note: Note) -> str:
    return one_line(note.title or note.content, 70) or "(empty)"


class NotesScreen(DeskScreen):
    CSS_PATH = "notes.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="notes.back"),
        Binding("n", "new_note", "New", id="notes.new"),
        Binding("e", "edit_note", "Edit", id="notes.edit"),
        Binding("d,delete", "delete_note", "Delete", id="notes.delete"),
        Binding("slash", "focus_search", "Search", id="notes.search"),
        Binding("down", "to_list", "Notes list", id="notes.to_list", show=False),
    ]

    def __init__(self, chat: ChatService) -> None:
        super().__init__()
        self.chat = chat
        self.notes: list[Note] = []
        self.found: NoteSearch | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="notes-search"):
            yield Input(placeholder="search notes… (Enter; empty lists them all)", id="notes-query")
            yield Checkbox("by meaning", bool(self.desk.config.roles.embedding.model), id="semantic", compact=True)
        yield OptionList(id="notes-list")
        yield Static("", id="note-preview")
        yield Static("", id="notes-status")
        yield KeysFooter()

    @property
    def listing(self) -> OptionList:
        return self.query_one("#notes-list", OptionList)

    def on_mount(self) -> None:
        self.sub_title = "notes"
        self.listing.focus()
        self.reload()

    # ── listing and searching ──────────────────────────────────────────────────
    def reload(self, select: str | None = None) -> None:
        query = self.query_one("#notes-query", Input).value.strip()
        if not query:
            self.in_thread(
                self.chat.notes.list,
                doing="loading notes",
                group="notes",
                exclusive=True,
                done=lambda notes: self._show(notes, None, select),
            )
            return
        semantic = self.query_one("#semantic", Checkbox).value
        self._status(Text("searching…", style="dim"))
        self.in_thread(
            self.chat.notes.search,
            query,
            semantic=semantic,
            doing="searching notes",
            group="notes",
            exclusive=True,
            done=lambda found: self._show([h.note for h in found.hits], found, select),
        )

    def _show(self, notes: list[Note], found: NoteSearch | None, select: str | None) -> None:
        keep = select or (self.selected.id if self.selected else None)
        self.notes, self.found = notes, found
        listing = self.listing
        listing.clear_options()
        matched = {h.note.id: h for h in found.hits} if found else {}
        options = []
        for note in notes:
            prompt = Text(note_title(note), no_wrap=True, overflow="ellipsis")
            hit = matched.get(note.id)
            if hit is not None:
                prompt.append(f"  {'+'.join(hit.matched)} {hit.score:.2f}", style="dim")
            options.append(Option(prompt, id=note.id))
        listing.add_options(options)
        ids = [n.id for n in notes]
        listing.highlighted = ids.index(keep) if keep in ids else (0 if notes else None)
        self._preview()
        if found is None:
            self._status(Text(f"{len(notes)} note{'' if len(notes) == 1 else 's'}", style="dim"))
        else:
            text = Text(
                f"{len(notes)} match{'' if len(notes) == 1 else 'es'} for “{one_line(found.query, 60)}”"
                + (" by keyword and meaning" if found.semantic else " by keyword"),
                style="dim",
            )
            for line in found.notes:
                text.append("\n" + one_line(line, 300), style="italic")
            self._status(text)
        self.refresh_bindings()

    def _status(self, text: Text) -> None:
        self.query_one("#notes-status", Static).update(text)

    @property
    def selected(self) -> Note | None:
        index = self.listing.highlighted
        return self.notes[index] if index is not None and index < len(self.notes) else None

    @on(OptionList.OptionHighlighted, "#notes-list")
    def _preview(self) -> None:
        note = self.selected
        preview = self.query_one("#note-preview", Static)
        if note is None:
            preview.update(Text(EMPTY if not self.found and not self.notes else ""))
            return
        text = Text()
        text.append(clean(note.title) or "(untitled)", style="bold")
        text.append("\n" + clean(note.content))
        preview.update(text)

    @on(Input.Submitted, "#notes-query")
    def _search(self) -> None:
        self.reload()  # the box keeps the focus: what is typed next refines the query (Down goes to the list)

    def action_to_list(self) -> None:
        if self.notes:
            self.listing.focus()

    @on(Checkbox.Changed, "#semantic")
    def _semantic(self) -> None:
        if self.query_one("#notes-query", Input).value.strip():
            self.reload()

    def action_focus_search(self) -> None:
        self.query_one("#notes-query", Input).focus()

    # ── writing ────────────────────────────────────────────────────────────────
    @on(OptionList.OptionSelected, "#notes-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_edit_note()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("edit_note", "delete_note") and self.is_mounted and self.selected is None:
            return None  # dimmed: no note to act on
        return True

    def action_new_note(self) -> None:
        from kbdesk.tui.screens.note_form import NoteFormScreen

        self.app.push_screen(NoteFormScreen(), self._create)

    def _create(self, form: tuple[str, str] | None) -> None:
        if form is None:
            return
        title, content = form
        self.in_thread(self.chat.notes.add, content, title, doing="saving the note", done=self._saved)

    def action_edit_note(self) -> None:
        from kbdesk.tui.screens.note_form import NoteFormScreen

        note = self.selected
        if note is not None:
            self.app.push_screen(NoteFormScreen(note), lambda form: self._edit(note, form))

    def _edit(self, note: Note, form: tuple[str, str] | None) -> None:
        if form is None:
            return
        title, content = form
        self.in_thread(
            self.chat.notes.edit, note.id, content=content, title=title, doing="saving the note", done=self._saved
        )

    def _saved(self, result: tuple[Note, str | None]) -> None:
        note, warning = result
        if warning:
            self.notify(warning, severity="warning", markup=False)
        self.reload(select=note.id)

    def action_delete_note(self) -> None:
        from kbdesk.tui.screens.confirm import ConfirmScreen

        note = self.selected
        if note is None:
            return
        self.app.push_screen(
            ConfirmScreen(f"Delete note '{note_title(note)}'?", "It cannot be brought back."),
            lambda yes: self._delete(note, yes),
        )

    def _delete(self, note: Note, yes: bool | None) -> None:
        if yes:
            self.in_thread(self.chat.notes.remove, note.id, doing="deleting the note", done=lambda _: self.reload())

    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("New note", "Write a short note", self.action_new_note)
        if self.selected is not None:
            yield SystemCommand("Edit note", "Change the highlighted note", self.action_edit_note)
            yield SystemCommand("Delete note", "Delete the highlighted note", self.action_delete_note)
