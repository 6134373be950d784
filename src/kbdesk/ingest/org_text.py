"""Org-mode notes (.org) → sections at their headings, with org's own metadata.

Each heading (``*``, ``**``…) starts a section of the file's own text, its path the
headings above it; a ``TODO``/``DONE`` keyword, a ``[#A]`` priority and the tags are not
part of a heading's name. Tags feed search filters as a Markdown note's do
(:mod:`.front_matter`): ``#+FILETAGS:`` (and org-roam's ``#+ROAM_TAGS:``) are every
section's, a heading's ``:tag1:tag2:`` are its section's and, as org inherits them, its
subheadings'; a document carries them all. ``#+TITLE:``, ``#+AUTHOR:`` and ``#+DATE:`` are
the document's title, author and date; a ``:PROPERTIES:`` drawer's ``CREATED``/``DATE``
give dates too (org timestamps like ``[2024-01-05 Fri 14:30]`` are read as dates), and
its other properties are kept in the section's metadata under ``properties``. Each
section's text begins with a line naming its path (:func:`~.sections.headed`).
"""

from __future__ import annotations

import re

from kbdesk.ingest.front_matter import MAX_VALUE, clean_tags
from kbdesk.ingest.people_dates import as_written_or_iso
from kbdesk.ingest.sections import ExtractionError, Section, headed

# Each pattern matches in time linear in the line (no two quantifiers compete for a run).
_HEADING = re.compile(r"^(\*+)[ \t]+(.*)$")
_TODO = re.compile(r"^(?:TODO|DONE|NEXT|WAITING|HOLD|CANCELL?ED|STARTED|SOMEDAY)\b[ \t]*")
_PRIORITY = re.compile(r"^\[#[A-Za-z0-9]\][ \t]*")
_TAGS = re.compile(r"(?<![^ \t])(:[\w@#%:]+:)$")
_KEYWORD = re.compile(r"^[ \t]*#\+([A-Za-z_]+):(.*)$")
_PROPERTY = re.compile(r"^[ \t]*:([\w-]+)\+?:(.*)$")
_LINK = re.compile(r"\[\[(?:[^\]]*)\]\[([^\]]*)\]\]|\[\[([^\]]*)\]\]")
MAX_PROPERTIES = 50


def _tag_list(value: str) -> list[str]:
    return [t for t in re.split(r"[:\s,]+", value) if t]


def _heading(raw: str) -> tuple[str, list[str]]:
    tags: list[str] = []
    found = _TAGS.search(raw, max(0, len(raw) - 500)) if raw.endswith(":") else None
    if found is not None:
        tags = _tag_list(found.group(1))
        raw = raw[: found.start()]
    raw = _PRIORITY.sub("", _TODO.sub("", raw))
    title = _LINK.sub(lambda m: m.group(1) or m.group(2), raw)
    return " ".join(title.split()), tags


def extract_org(text: str) -> list[Section]:
    lines = text.split("\n")
    doc: dict[str, str] = {}
    file_tags: list[str] = []
    # blocks: (start line, path, own + inherited tags)
    blocks: list[tuple[int, list[str], list[str]]] = [(0, [], [])]
    stack: list[tuple[int, str, list[str]]] = []
    in_block = False
    for i, line in enumerate(lines):
        lowered = line.lstrip().lower()
        if lowered.startswith("#+begin_"):
            in_block = True
        elif lowered.startswith("#+end_"):
            in_block = False
        if in_block:
            continue
        heading = _HEADING.match(line)
        if heading is not None:
            level = len(heading.group(1))
            title, tags = _heading(heading.group(2).strip())
            while stack and stack[-1][0] >= level:
                stack.pop()
            inherited = stack[-1][2] if stack else []
            stack.append((level, title or "(untitled)", [*inherited, *tags]))
            blocks.append((i, [t for _, t, _ in stack], stack[-1][2]))
            continue
        keyword = _KEYWORD.match(line)
        if keyword is not None and not stack:
            name, value = keyword.group(1).lower(), keyword.group(2).strip()
            if name in ("filetags", "roam_tags"):
                file_tags += _tag_list(value)
            elif name in ("title", "author", "date") and value and name not in doc:
                doc[name] = value[:MAX_VALUE]
    sections: list[Section] = []
    for k, (start, path, tags) in enumerate(blocks):
        stop = blocks[k + 1][0] if k + 1 < len(blocks) else len(lines)
        body = "\n".join(lines[start:stop]).strip("\n")
        if not body.strip():
            continue
        meta: dict = {"headings": path}
        props = _properties(lines[start + (1 if path else 0) : stop])
        if "created" in props:
            meta["created"] = as_written_or_iso(props["created"])
        kept = clean_tags([*file_tags, *tags])
        if kept:
            meta["tags"] = kept
        if props:
            meta["properties"] = props
        sections.append(Section(headed(path, body), meta))
    if not sections:
        raise ExtractionError("file has no text")
    whole = {k: (as_written_or_iso(v) if k == "date" else v) for k, v in doc.items()}
    if "title" not in whole and sections[0].metadata.get("properties", {}).get("title"):
        whole["title"] = sections[0].metadata["properties"]["title"]
    for section in sections:
        section.metadata = {**whole, **section.metadata}
    return sections


def _properties(lines: list[str]) -> dict[str, str]:
    """The ``:PROPERTIES:`` drawer at the start of a block (after planning lines), lower-case keys."""
    props: dict[str, str] = {}
    inside = False
    for line in lines[:200]:
        stripped = line.strip().upper()
        if not inside:
            if stripped == ":PROPERTIES:":
                inside = True
            elif stripped and not stripped.startswith(("SCHEDULED:", "DEADLINE:", "CLOSED:", "#+")):
                break
            continue
        if stripped == ":END:":
            break
        found = _PROPERTY.match(line)
        if found is not None and len(props) < MAX_PROPERTIES:
            props[found.group(1).lower()] = found.group(2).strip()[:MAX_VALUE]
    return props
