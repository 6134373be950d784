"""Text from documents and file names, made safe to show on a terminal.

Everything a person reads (CLI tables and lines, TUI widgets, error messages) passes
through :func:`inert` or :func:`inert_line`: ESC, CSI and OSC sequences, C0 and C1
control characters, DEL and BEL are shown as visible escapes (``\\x1b``, ``\\x9b``,
``\\x07``) instead of reaching the terminal, so a document can never retitle a
window, clear a screen, plant a hyperlink or move the cursor. Bidirectional overrides
are escaped too (they reorder what is shown), and lone surrogates (from file names
that are not UTF-8) are shown as ``\\udcXX``. ``--json`` output keeps the exact text.

Core module: no UI toolkit is imported here.
"""

from __future__ import annotations

import re
from typing import Any

# C0 except \t and \n, DEL, C1, bidi embeddings/overrides/isolates, lone surrogates
_UNSAFE_TEXT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# the same and tab/newline too: for one-line values (file names, table cells, errors)
_UNSAFE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(text: Any) -> str:
    """``text`` with every control character shown as an escape; newlines and tabs kept
    (for passages of document text)."""
    value = "" if text is None else str(text)
    return _UNSAFE_TEXT.sub(_escape, value)


def inert_line(text: Any) -> str:
    """``text`` on one line with every control character, newline and tab escaped
    (for file names, ids, table cells and error messages)."""
    value = "" if text is None else str(text)
    if value.isprintable():  # nothing to escape (every escaped character is unprintable): the usual case, fast
        return value
    return _UNSAFE_LINE.sub(_escape, value)


def is_clean_line(text: str) -> bool:
    """Whether ``text`` shows as itself on one line (nothing :func:`inert_line` would escape)."""
    return _UNSAFE_LINE.search(text) is None
