"""Small formatting helpers: sizes, statuses and theme-aware styles. Data is never markup.

Text from documents, file names and the database reaches a widget through :func:`line`
or :func:`passage` (or the plain strings of :func:`kbdesk.textsafe.inert_line`): its
control characters are shown as escapes (``\x1b``). Textual, like rich, removes only
BEL, BS, VT, FF and CR from text and would send ESC, CSI and OSC sequences on to the
terminal.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from kbdesk.models import KnowledgeBase
from kbdesk.textsafe import inert, inert_line

_FALLBACK = {"text-success": "green", "text-error": "red", "text-warning": "yellow", "accent": "cyan"}


_PALETTES: dict[str, dict[str, str]] = {}


def palette(app: Any) -> dict[str, str]:
    """Colours of the current Textual theme by role: ok, bad, busy, info (cached per theme)."""
    theme = str(getattr(app, "theme", ""))
    cached = _PALETTES.get(theme)
    if cached is not None:
        return cached
    try:
        variables = app.get_css_variables()
    except Exception:  # noqa: BLE001 - not running (a unit test): plain colours
        variables = {}

    def pick(name: str) -> str:
        return variables.get(name) or _FALLBACK[name]

    colours = {
        "ok": pick("text-success"),
        "bad": pick("text-error"),
        "busy": pick("text-warning"),
        "info": pick("accent"),
    }
    if theme:
        _PALETTES[theme] = colours
    return colours


def line(value: Any, style: str = "", justify: Any = None) -> Text:
    """One line of data (a name, an id, an error) as plain text, control characters escaped."""
    return Text(inert_line(value), style=style, justify=justify)


def passage(value: Any, style: str = "") -> Text:
    """Document text with its line breaks and tabs; every other control character escaped."""
    return Text(inert(value), style=style)


def human_size(size: int | None) -> str:
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # pragma: no cover


def status_text(status: str, colours: dict[str, str], done: int = 0, total: int = 0) -> Text:
    if status == "ready":
        return Text("✓ ready", style=colours["ok"])
    if status == "error":
        return Text("✗ error", style=f"bold {colours['bad']}")
    if status == "embedding" and total:
        return Text(f"embedding {done}/{total}", style=colours["busy"])
    if status in ("extracting", "chunking", "embedding"):
        return Text(f"{status}…", style=colours["busy"])
    if status == "processing":
        return Text("processing…", style=colours["busy"])
    if status == "active":
        return Text("active", style=colours["ok"])
    return Text(status, style="dim")


def model_label(kb: KnowledgeBase) -> str:
    if not kb.model_id:
        return "keyword only"
    provider = kb.embedding_config.get("provider")
    return inert_line(f"{provider}/{kb.model_id}" if provider else kb.model_id)


def where_label(metadata: dict[str, Any]) -> str:
    """Page or heading of a chunk, from its metadata."""
    if not metadata:
        return ""
    if metadata.get("page") is not None:
        return inert_line(f"p. {metadata['page']}")
    for key in ("heading_path", "headings", "section", "heading"):
        value = metadata.get(key)
        if value:  # headings are document text
            return inert_line(" › ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else value)
    return ""


def score(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def significant(value: float | None, digits: int = 3) -> str:
    """A score on no fixed scale (BM25: tiny on small KBs, large on big ones) with ``digits``
    significant digits, so it never reads 0.00 when it is not zero."""
    return "–" if value is None else f"{value:.{digits}g}"
