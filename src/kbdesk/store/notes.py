"""Notes: the record and the rules for its text.

The SQL that keeps notes, their keyword index and one vector per note is written once
for both engines in :mod:`kbdesk.store.core.notes`; embedding and the merged search
live in :mod:`kbdesk.chat.notes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kbdesk.errors import InvalidInputError
from kbdesk.textnorm import nfkc

MAX_NOTE_CHARS = 20_000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass
class Note:
    id: str
    title: str
    content: str
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def clean_note_text(text: str, what: str = "note") -> str:
    """A note's text as it is kept: in NFKC (as extracted documents and queries are, so a
    ligature or a full-width letter is found by its plain spelling), without control
    characters other than newlines and tabs."""
    text = _CONTROL.sub("", nfkc((text or "").replace("\r\n", "\n"))).strip()
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInputError(f"a {what} holds at most {MAX_NOTE_CHARS} characters, this one has {len(text)}")
    return text


def note_text(title: str, content: str) -> str:
    """What a note's vector is made from."""
    return f"{title}\n\n{content}" if title else content
