"""Printing for people (rich tables) and for scripts (``--json``).

Text from documents, file names and the database is data: it reaches the terminal only
through :func:`plain` (one line) or :func:`passage` (text with its line breaks), which
show control characters as visible escapes (:mod:`kbdesk.textsafe`). The console of
:func:`stdout` does the same to anything that slips past them, as a last line of
defence. ``--json`` keeps the exact text; JSON escapes C0 controls itself, and
:func:`print_json` escapes the rest a terminal could obey (DEL, C1 such as the one-byte
CSI ``\\x9b``, bidi overrides, lone surrogates) as ``\\uXXXX``, which every JSON
reader turns back into the same characters.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from kbdesk.textsafe import inert, inert_line


class InertConsole(Console):
    """A console that never passes a control character of the text it prints to the
    terminal: ESC, CSI, OSC, C1, BEL and the rest are shown escaped (``\\x1b``).
    rich itself removes only BEL, BS, VT, FF and CR from text, and lets ESC through.
    Its own control segments (cursor moves of live displays) are left alone."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None:
                safe = inert(segment.text)
                if safe != segment.text:
                    segment = Segment(safe, segment.style)
            yield segment


def stdout() -> Console:
    # document text is data, never markup: callers pass Text objects or markup=False
    return InertConsole(file=sys.stdout, highlight=False, soft_wrap=True)


def stderr() -> Console:
    """The same console for errors and notes (stderr)."""
    return InertConsole(file=sys.stderr, highlight=False, soft_wrap=True)


# what json.dumps(ensure_ascii=False) leaves raw but a terminal may obey or choke on;
# these characters can only stand inside JSON strings, where \uXXXX means the same
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def json_text(data: Any) -> str:
    """``data`` as indented JSON that shows safely on a terminal and reads back exactly."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def print_json(data: Any) -> None:
    sys.stdout.write(json_text(data) + "\n")


def print_json_line(data: Any) -> None:
    """``data`` as one line of JSON (a stream of events), flushed at once."""
    text = json.dumps(data, ensure_ascii=False)
    sys.stdout.write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text) + "\n")
    sys.stdout.flush()


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def table(*columns: str, title: str | None = None) -> Table:
    t = Table(title=None if title is None else plain(title), show_edge=False, header_style="bold", pad_edge=False)
    for col in columns:
        t.add_column(col, overflow="fold")
    return t


def plain(value: Any, style: str = "") -> Text:
    """``value`` as one line of plain text: never markup, control characters escaped."""
    return Text(inert_line("" if value is None else value), style=style)


def passage(value: Any, style: str = "") -> Text:
    """Document text with its line breaks and tabs, every other control character escaped."""
    return Text(inert("" if value is None else value), style=style)
