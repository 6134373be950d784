"""Configuration and data files → sections by key path.

- **YAML** (.yaml .yml), **TOML** (.toml) and **INI** (.ini .cfg .conf): the file's own
  text, comments included, cut at its keys: a YAML key at the top level and the keys one
  level below it (``services:`` then ``  web:`` is the section ``["services", "web"]``),
  a TOML table or INI section header (``[tool.ruff.lint]`` is ``["tool", "ruff", "lint"]``).
  Nothing is parsed as data, so a file with a syntax error reads the same. Each section
  begins with a line naming its path (:func:`~.sections.headed`: ``services › web``).
- **JSON**: parsed (the standard library's :mod:`json`), each value one line under its
  key path — ``dependencies.click: >=8.1``, ``items[2].name: Ada`` — a section per
  top-level key. JSON has no comments, so nothing is lost; a minified file reads as well
  as a formatted one. A file that is not strict JSON (comments, trailing commas:
  ``tsconfig.json``) is read as text.
- **XML**: read with kbdesk's safe XML reader (:mod:`.xml_tree`: no entities, bounded
  depth), each element's text and attributes one line under its path
  (``dependency/artifactId: click``, ``server@port: 8080``), a section per child of the
  root element. A file the reader refuses or cannot parse, or whose path lines would be
  more than :data:`MAX_GROWTH` times its size, is read as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from kbdesk.ingest.limits import check_time
from kbdesk.ingest.sections import ExtractionError, ResourceLimit, Section, cut_at
from kbdesk.ingest.xml_tree import stream

# Each pattern matches in time linear in the line (no two quantifiers compete for a run).
_YAML_KEY = re.compile(r"^( *)(?:\"([^\"]+)\"|'([^']+)'|([^\s#'\"\-?:{}\[\],&*!|>%@`][^:#]*)):(?:[ \t]+(.*)|[ \t]*)$")
_INI_SECTION = re.compile(r"^[ \t]*\[\[?([^\]]+)\]\]?[ \t]*(?:[#;].*)?$")
_TOML_PART = re.compile(r"\"[^\"]*\"|'[^']*'|[^.\s]+")
MAX_LINE = 2000  # a value longer than this is cut in its line
MAX_GROWTH = 3  # JSON's key-path lines may be this many times the file's size, else its text is read


def extract_yaml(text: str) -> list[Section]:
    lines = text.split("\n")
    marks: list[tuple[int, list[str]]] = []
    top: str | None = None
    child_indent: int | None = None
    block_under: int | None = None  # inside a | or > block scalar of a key this indented
    for i, line in enumerate(lines):
        if line.startswith(("---", "...")):
            top, child_indent, block_under = None, None, None
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if block_under is not None:
            if indent > block_under:
                continue
            block_under = None
        found = _YAML_KEY.match(line)
        if found is None:
            continue
        key = (found.group(2) or found.group(3) or found.group(4) or "").strip()
        value = (found.group(5) or "").strip()
        if value[:1] in ("|", ">"):
            block_under = indent
        if indent == 0:
            top, child_indent = key, None
            marks.append((i, [key]))
        elif top is not None and (child_indent is None or indent == child_indent):
            child_indent = indent
            marks.append((i, [top, key]))
    return cut_at(lines, _with_comments(lines, marks), {})


def _with_comments(lines: list[str], marks: list[tuple[int, list[str]]]) -> list[tuple[int, list[str]]]:
    """Each mark moved up over the comment lines right above it (they describe its key)."""
    out = []
    floor = 0
    for start, path in marks:
        first = start
        while first - 1 >= floor and lines[first - 1].lstrip().startswith(("#", ";")):
            first -= 1
        out.append((first, path))
        floor = start + 1
    return out


def extract_ini(text: str, *, toml: bool = False) -> list[Section]:
    lines = text.split("\n")
    marks = []
    for i, line in enumerate(lines):
        found = _INI_SECTION.match(line)
        if found is None:
            continue
        name = found.group(1).strip()
        path = [p.strip("\"'") for p in _TOML_PART.findall(name)] if toml else [name]
        marks.append((i, [p for p in path if p] or [name]))
    return cut_at(lines, _with_comments(lines, marks), {})


def extract_toml(text: str) -> list[Section]:
    return extract_ini(text, toml=True)


# --------------------------------------------------------------------------- JSON


def _scalar(value: Any) -> str:
    text = " ".join(value.split()) if isinstance(value, str) else json.dumps(value)
    return text[:MAX_LINE]


class _TooLong(Exception):
    """The key-path lines would be much longer than the file: it is read as its text."""


def _flatten(value: Any, path: str, out: list[str], room: list[int]) -> None:
    """``value``'s leaves as ``key.path: value`` lines; ``room[0]``: the characters they may
    still take (else :class:`_TooLong`). Containers are walked lazily: memory grows with
    the nesting, not with the number of values."""
    stack: list[tuple[str, Iterator[tuple[Any, Any]]]] = [(path, iter(((None, value),)))]
    count = 0
    while stack:
        base, children = stack[-1]
        step = next(children, None)
        if step is None:
            stack.pop()
            continue
        key, item = step
        count += 1
        if not count & 4095:
            check_time()
        if key is None:
            where = base
        elif isinstance(key, int):
            where = f"{base}[{key}]"
        else:
            where = f"{base}.{key}" if base else str(key)
        if isinstance(item, (dict, list)):
            if item:
                stack.append((where, iter(item.items()) if isinstance(item, dict) else enumerate(item)))
                continue
            line = f"{where}: {{}}" if isinstance(item, dict) else f"{where}: []"
        else:
            line = f"{where}: {_scalar(item)}"
        room[0] -= len(line) + 1
        if room[0] < 0:
            raise _TooLong
        out.append(line)


def extract_json(text: str) -> list[Section]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return [Section(text.strip(), {})]  # JSON with comments, or not JSON at all: its text
    sections: list[Section] = []
    room = [MAX_GROWTH * len(text) + 1_000_000]  # key paths repeat: a bound on what they add
    try:
        if isinstance(data, dict) and data:
            for key, value in data.items():
                lines: list[str] = []
                _flatten(value, str(key), lines, room)
                sections.append(Section("\n".join(lines), {"headings": [str(key)]}))
        else:
            lines = []
            _flatten(data, "", lines, room)
            sections.append(Section("\n".join(line.lstrip(".") for line in lines), {}))
    except _TooLong:
        return [Section(text.strip(), {})]
    return [s for s in sections if s.text.strip()] or [Section(text.strip(), {})]


# --------------------------------------------------------------------------- XML

_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")


def extract_xml(text: str) -> list[Section]:
    data = _XML_DECLARATION.sub("", text, count=1).encode("utf-8")
    path: list[str] = []
    texts: list[list[str]] = []
    sections: list[tuple[list[str], list[str]]] = []  # heading path, lines
    room = [MAX_GROWTH * len(text) + 1_000_000]  # element paths repeat: a bound on what they add

    def emit(line: str) -> None:
        room[0] -= len(line) + 1
        if room[0] < 0:
            raise _TooLong
        sections[-1][1].append(line)

    def label(tag: str, attrs: dict[str, str]) -> str:
        for key in ("name", "id", "key", "title"):
            if attrs.get(key):
                return f"{tag} {' '.join(attrs[key].split())[:80]}"
        return tag

    def start(tag: str, attrs: dict[str, str]) -> None:
        if len(path) == 1 or not sections:
            sections.append(([path[0], label(tag, attrs)] if path else [label(tag, attrs)], []))
        if texts and "".join(texts[-1]).strip():  # mixed content: the text before this child
            _line(texts[-1])
        path.append(tag)
        texts.append([])
        for key, value in attrs.items():
            if value.strip():
                emit(f"{_rel()}@{key}: {' '.join(value.split())[:MAX_LINE]}")

    def _rel() -> str:
        return "/".join(path[2:] if len(path) > 2 else path[-1:])

    def _line(parts: list[str]) -> None:
        value = " ".join("".join(parts).split())
        if value:
            emit(f"{_rel()}: {value[:MAX_LINE]}")
        parts.clear()

    def end(_tag: str) -> None:
        _line(texts.pop())
        path.pop()

    def text_(data_: str) -> None:
        if texts:
            texts[-1].append(data_)

    try:
        stream(data, "the XML file", start, end, text_)
    except ResourceLimit:
        raise
    except (ExtractionError, _TooLong):
        return [Section(text.strip(), {})]  # entities, damage, paths longer than it: its text as written
    out = [Section("\n".join(lines), {"headings": heads}) for heads, lines in sections if lines]
    return out or [Section(text.strip(), {})]
