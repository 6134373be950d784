"""Printing for people (rich tables) and for scripts (``--json``)."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def stdout() -> Console:
    # document text is data, never markup: callers pass Text objects or markup=False
    return Console(file=sys.stdout, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def table(*columns: str, title: str | None = None) -> Table:
    t = Table(title=title, show_edge=False, header_style="bold", pad_edge=False)
    for col in columns:
        t.add_column(col, overflow="fold")
    return t


def plain(value: Any) -> Text:
    return Text("" if value is None else str(value))
