"""A note's own metadata: YAML front matter and inline ``#tags`` (Obsidian-style vaults).

Front matter is the block between a first line ``---`` and the next ``---`` (or ``...``).
It is read by a YAML reader in safe mode (PyYAML's ``CSafeLoader``, else ``SafeLoader``:
plain data only — no code, no custom tags), so quotes, comments, flow and block lists,
nested maps and ``|``/``>`` text read as YAML reads them. A block over
:data:`MAX_BLOCK` bytes, or one the YAML reader refuses (a ``!!python/...`` tag, a
syntax error), is read by a small reader of its own instead, which never executes or
resolves anything: ``key: value``, ``key: [a, b]`` and ``- item`` lists; the rest is left
out, never an error.

From it a document keeps ``title``, ``tags`` (a list, or one string split at commas and
spaces), ``date``, ``author`` and ``created``; a date written as people write it
(``2024/01/05``, ``January 5, 2024``, ``5 Jan 2024``, ISO with a time) is kept in ISO form
(:mod:`.people_dates`), which date filters compare. Inline tags are ``#word`` after the start
of a line or a space (so not ``page#part`` in a URL, nor ``&#38;``), at least one letter
in them (``#1984`` is a number), letters, digits, ``_``, ``-`` and ``/`` (nested tags);
never inside code (fenced blocks and inline code spans), and a heading's ``# Title`` is
not one (``#`` followed by a space).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from kbdesk.ingest.people_dates import iso_date

FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
KEPT = ("title", "tags", "date", "author", "created")
MAX_TAGS = 200
MAX_VALUE = 500
MAX_BLOCK = 64 * 1024
_KEY = re.compile(r"^([A-Za-z_][\w .-]*?)[ \t]*:(?:[ \t]+(.*?))?[ \t]*$")
_ITEM = re.compile(r"^[ \t]*-[ \t]+(.*?)[ \t]*$")
_INLINE_TAG = re.compile(r"(?:^|(?<=[\s(\[,]))#([\w/-]*[^\W\d][\w/-]*)", re.M)
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?\1")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(the front matter's kept fields, the text after it); ``({}, text)`` without one."""
    found = FRONT_MATTER.match(text)
    if found is None:
        return {}, text
    return read_fields(found.group(1) or ""), text[found.end() :]


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    elif " #" in value:  # a YAML comment after a plain value
        value = value.split(" #", 1)[0].rstrip()
    return value[:MAX_VALUE]


def _flow_list(value: str) -> list[str]:
    inner = value.strip()[1:-1]
    return [v for v in (_scalar(part) for part in inner.split(",")) if v]


def read_fields(block: str) -> dict[str, Any]:
    """The kept fields of a front matter block (see the module's docstring)."""
    raw = _yaml(block)
    if raw is None:
        raw = _simple(block)
    return _kept(raw)


def _yaml(block: str) -> dict[str, Any] | None:
    """The block as YAML reads it in safe mode (keys lower case), or None when it is too
    big, refused or not a map."""
    if len(block) > MAX_BLOCK:
        return None
    try:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(block, Loader=loader)
    except Exception:  # noqa: BLE001 - YAML's errors (and a missing PyYAML): the small reader instead
        return None
    if not isinstance(data, dict):
        return None
    return {str(k).strip().lower(): v for k, v in data.items()}


_SCALARS = (str, int, float, bool, date)


def _text(value: Any) -> str:
    """A scalar as text (a date in ISO form); "" for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _SCALARS):
        return " ".join(str(iso_date(value) or value).split())[:MAX_VALUE]
    return ""


def _kept(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in KEPT:
        value = raw.get(name)
        if name == "tags":
            continue
        if isinstance(value, list):
            if name == "author":
                joined = ", ".join(t for t in (_text(v) for v in value) if t)[:MAX_VALUE]
                if joined:
                    out[name] = joined
            continue
        text = _text(value)
        if text:
            out[name] = (iso_date(text) or text) if name in ("date", "created") else text
    for key in ("tags", "tag"):
        value = raw.get(key)
        if isinstance(value, list):
            tags = clean_tags(_text(v) for v in value)  # only scalar items: an alias bomb stays unread
        elif isinstance(value, str):
            tags = clean_tags(re.split(r"[,\s]+", value))
        else:
            continue
        if tags:
            out["tags"] = tags
            break
    return out


def _simple(block: str) -> dict[str, Any]:
    """The small reader: ``key: value``, flow lists and block lists; the rest left out."""
    raw: dict[str, Any] = {}
    key: str | None = None
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _ITEM.match(line)
        if item is not None and key is not None and isinstance(raw.get(key), list):
            raw[key].append(_scalar(item.group(1)))
            continue
        if line[:1] in " \t":
            continue  # inside a nested map or a multi-line value: left out
        found = _KEY.match(line)
        if found is None:
            key = None
            continue
        key, value = found.group(1).strip().lower(), (found.group(2) or "")
        if not value:
            raw[key] = []  # a block list may follow
        elif value.startswith("[") and value.endswith("]"):
            raw[key] = _flow_list(value)
        elif value[:1] in "|>&*{":
            raw[key] = None  # multi-line strings, anchors, maps: left out
        else:
            raw[key] = _scalar(value)
    return raw


def clean_tags(values: Any) -> list[str]:
    """Tags as kept: lower case, no ``#``, no blanks or repeats, in order."""
    out: dict[str, None] = {}
    for value in values or ():
        tag = str(value).strip().lstrip("#").strip().lower()
        if tag and len(tag) <= 100:
            out[tag] = None
    return list(out)[:MAX_TAGS]


def inline_tags(text: str) -> list[str]:
    """The ``#tags`` written in Markdown text, outside code (see the module's docstring)."""
    if "#" not in text:
        return []
    found: list[str] = []
    fence: str | None = None
    prose: list[str] = []
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening is not None and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            continue
        if opening is not None:
            fence = opening.group(1)
            continue
        prose.append(line)
    body = _CODE_SPAN.sub(" ", "\n".join(prose))
    for m in _INLINE_TAG.finditer(body):
        found.append(m.group(1).rstrip("/-"))
    return clean_tags(found)
