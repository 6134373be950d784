"""Persona and project of the conversation on screen, as two selects."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Label, Select

from kbdesk.chat.safety import one_line

WHICH = ("persona", "project")


class ChoiceBar(Horizontal):
    """Posts :class:`ChoiceBar.Chosen` when the user (or :meth:`choose`) changes a choice;
    showing a conversation's own choices (:meth:`show`) posts nothing."""

    class Chosen(Message):
        def __init__(self, which: str, value: str | None) -> None:
            super().__init__()
            self.which = which
            """persona or project."""
            self.value = value
            """Its id, None for none."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.known: dict[str, set[str]] = {w: set() for w in WHICH}

    def compose(self) -> ComposeResult:
        for which in WHICH:
            yield Label(which.capitalize())
            yield Select([], prompt="none", id=which, compact=True)

    def fill(self, personas: list[Any], projects: list[Any]) -> None:
        with self.prevent(Select.Changed):
            for which, items in zip(WHICH, (personas, projects), strict=True):
                self.known[which] = {i.id for i in items}
                self.query_one(f"#{which}", Select).set_options([(Text(one_line(i.name, 40)), i.id) for i in items])

    def show(self, persona_id: str | None, project_id: str | None) -> None:
        with self.prevent(Select.Changed):
            for which, value in zip(WHICH, (persona_id, project_id), strict=True):
                select = self.query_one(f"#{which}", Select)
                if value in self.known[which]:
                    select.value = value
                else:
                    select.clear()

    def value(self, which: str) -> str | None:
        value = self.query_one(f"#{which}", Select).value
        return value if isinstance(value, str) else None

    def choose(self, which: str, value: str | None) -> None:
        select = self.query_one(f"#{which}", Select)
        if value is None:
            select.clear()
        else:
            select.value = value

    @on(Select.Changed)
    def _changed(self, event: Select.Changed) -> None:
        event.stop()
        which = str(event.select.id)
        self.post_message(self.Chosen(which, self.value(which)))
