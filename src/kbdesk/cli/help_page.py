"""``kbdesk --help`` without click: the top-level help page, laid out the way click lays it out.

Importing click alone costs three bare interpreter starts, and ``--help`` is asked often
(people, shell completion, scripts), so :mod:`kbdesk.cli.entry` answers it from
:mod:`kbdesk.cli.commands` with this page; click's own rendering of the same group (which
also takes its command list from :func:`command_rows`) is what any other way of asking prints.
tests/test_cli_startup.py holds the two equal at several terminal widths.
"""

from __future__ import annotations

import os
import sys
import textwrap

from kbdesk.cli.commands import CLI_HELP, COMMANDS, DB_HELP, HIDDEN, HOME_HELP

USAGE_PREFIX = "Usage: kbdesk "
USAGE_ARGS = "[OPTIONS] [COMMAND] [ARGS]..."
OPTIONS = [
    ("--db PATH", DB_HELP),
    ("--home DIR", HOME_HELP),
    ("--version", "Show the version and exit."),
    ("-h, --help", "Show this message and exit."),
]


def help_width() -> int:
    """The width click gives help: the terminal's (``COLUMNS`` first), at most 78, at least 50."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return max(min(columns or 80, 80) - 2, 50)


def short_help(text: str, limit: int) -> str:
    """A command's help in the command list: its first sentence, cut to ``limit`` with "..."."""
    words = text.partition("\n\n")[0].split()
    for i, word in enumerate(words):  # a period ends the sentence unless a lowercase word follows
        if word.endswith(".") and (i == len(words) - 1 or not words[i + 1][0].islower()):
            words = words[: i + 1]
            break
    line = " ".join(words)
    if len(line) <= limit:
        return line
    return textwrap.shorten(line, limit, placeholder="...", break_on_hyphens=False) if limit >= 3 else "..."


def command_rows(width: int) -> list[tuple[str, str]]:
    """(name, short help) of every shown command, cut as click cuts a command list ``width`` wide."""
    shown = [(name, text) for name, (_, text) in sorted(COMMANDS.items()) if name not in HIDDEN]
    limit = width - 6 - max(len(name) for name, _ in shown)
    return [(name, short_help(text, limit)) for name, text in shown]


def _fill(text: str, width: int, first: str, rest: str) -> list[str]:
    wrapper = textwrap.TextWrapper(width, initial_indent=first, subsequent_indent=rest, replace_whitespace=False)
    return wrapper.wrap(text)


def _definitions(rows: list[tuple[str, str]], width: int, indent: int = 2) -> list[str]:
    """Two columns as click's ``write_dl`` writes them (the first at most 30 wide)."""
    first_col = min(max(len(term) for term, _ in rows), 30) + 2
    lines: list[str] = []
    for term, text in rows:
        lead = " " * indent + term
        if len(term) > first_col - 2:
            lines.append(lead)
            lead = " " * (first_col + indent)
        else:
            lead += " " * (first_col - len(term))
        wrapped = _fill(text, max(width - first_col - 2, 10), "", "")
        lines.append(lead + wrapped[0])
        lines.extend(" " * (first_col + indent) + line for line in wrapped[1:])
    return lines


def page(width: int) -> str:
    """The whole top-level help, ``width`` columns wide, ending with a newline."""
    lines = _fill(USAGE_ARGS, width, USAGE_PREFIX, " " * len(USAGE_PREFIX))
    for paragraph in CLI_HELP.split("\n\n"):
        lines += ["", *_fill(paragraph, width, "  ", "  ")]
    lines += ["", "Options:", *_definitions(OPTIONS, width)]
    lines += ["", "Commands:", *_definitions(command_rows(width), width)]
    return "\n".join(lines) + "\n"
