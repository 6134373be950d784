"""A path input that completes file and folder names as you type (→ accepts)."""

from __future__ import annotations

import os
from pathlib import Path

from textual.suggester import Suggester
from textual.widgets import Input

MAX_ENTRIES = 2000


class PathSuggester(Suggester):
    """Suggests the first entry of the typed folder that starts with what follows the last /."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        typed = os.path.expanduser(value)
        folder, _, stem = typed.rpartition(os.sep)
        base = Path(folder or (os.sep if typed.startswith(os.sep) else "."))
        try:
            with os.scandir(base) as entries:
                names = []
                for n, entry in enumerate(entries):
                    if n >= MAX_ENTRIES:
                        break
                    if entry.name.startswith(stem) and (stem.startswith(".") or not entry.name.startswith(".")):
                        names.append(entry.name + (os.sep if entry.is_dir() else ""))
        except OSError:
            return None
        if not names:
            return None
        best = sorted(names)[0]
        return value[: len(value) - len(stem)] + best


class PathInput(Input):
    def __init__(self, value: str = "", *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(value, placeholder=placeholder, id=id, suggester=PathSuggester(), compact=True)
