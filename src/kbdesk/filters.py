"""The one filter language of every search face: which documents a search may return.

A :class:`Filters` narrows a search to documents by their path (relative to the folder
they were added from; globs, with ``**`` across folders), file type, dates and tags. The
CLI's flags, the library's ``desk.search(…, filters=…)``, the HTTP search body's
``filters`` object, MCP's and the chat pane's ``kb_search`` all read into this one type
(:meth:`Filters.from_dict` takes the JSON form), so a filter means the same wherever it is
written, and a bad one is one line naming the field. The fields are declared once, in
:mod:`kbdesk.filter_fields`; each face's form is made from that table.

Fields combine with AND; within ``path``, ``types`` and ``any_tags`` a document needs to
match one value, within ``tags`` every value. An empty :class:`Filters` lets everything
through. Dates are ISO-8601 days or times; a day means its start for ``since`` and its
whole for ``until``.

Tags nest as in Obsidian: a document tagged ``work/infra`` also counts as tagged ``work``
(:func:`with_parents`), so ``tags=("work",)`` finds it; ``tags=("work/infra",)`` does not
find a document tagged only ``work``.
"""

from __future__ import annotations

import email.utils
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import UTC, datetime, time, timedelta
from functools import cached_property
from typing import Any

from kbdesk.errors import InvalidInputError
from kbdesk.filter_fields import BY_KEY, DATE_FIELDS, FIELDS, FilterField
from kbdesk.globs import check_globs, glob_matcher

DOCUMENT_DATE_KEYS = ("date", "created")
"""The properties a document's own date is read from, the first that parses: Markdown front
matter ``date:`` (else ``created:``), an e-mail's ``Date:``, the created property of Office,
OpenDocument and EPUB files."""


@dataclass(frozen=True)
class Filters:
    path: tuple[str, ...] = ()
    """Globs a document's path must match one of (``projects/**``, ``*.md``, ``notes/2026-*``)."""
    exclude: tuple[str, ...] = ()
    """Globs a document's path must match none of."""
    types: tuple[str, ...] = ()
    """File types (extensions without the dot, any case: ``pdf``, ``md``), one of which must match."""
    since: datetime | None = None
    """Only documents whose date (see ``date_field``) is at or after this."""
    until: datetime | None = None
    """Only documents whose date is before this (a bare day: before the next day)."""
    date_field: str = "modified"
    """``modified`` (the file's mtime), ``indexed`` (when kbdesk last indexed it) or ``document``
    (the date it gives itself: front matter ``date:``, an e-mail's or Office file's date; a
    document without one, or with one that does not parse, is outside any since/until)."""
    tags: tuple[str, ...] = ()
    """Tags a document must carry all of (front matter ``tags:`` and inline ``#tags``; no ``#``, any case;
    a parent of a nested tag counts: ``work`` is carried by a document tagged ``work/infra``)."""
    any_tags: tuple[str, ...] = ()
    """Tags a document must carry at least one of."""
    not_tags: tuple[str, ...] = ()
    """Tags a document must carry none of (a parent counts as above: ``work`` leaves out ``work/infra``)."""

    def __post_init__(self) -> None:
        check_globs(self.path, "path")  # bounded: a filter can never cost more than a look at each path
        check_globs(self.exclude, "exclude")

    def __bool__(self) -> bool:
        """True when the filter narrows anything."""
        return any(getattr(self, f.name) for f in fields(self) if f.name != "date_field")

    def admits(self, doc: DocumentFacts) -> bool:
        """Whether a document with these facts passes the filter (every field, AND)."""
        if self.path and not self._path_match(doc.path):
            return False
        if self.exclude and self._exclude_match(doc.path):
            return False
        if self.types and doc.file_type.lower() not in self.types:
            return False
        if self.since is not None or self.until is not None:
            moment = {"modified": doc.modified, "indexed": doc.indexed}.get(self.date_field, doc.dated)
            if moment is None:
                return False
            if self.since is not None and moment < self.since.timestamp():
                return False
            if self.until is not None and moment >= self.until.timestamp():
                return False
        if self.tags and not all(t in doc.tags for t in self.tags):
            return False
        if self.not_tags and any(t in doc.tags for t in self.not_tags):
            return False
        return not self.any_tags or any(t in doc.tags for t in self.any_tags)

    @cached_property
    def _path_match(self) -> Any:
        return glob_matcher(self.path)

    @cached_property
    def _exclude_match(self) -> Any:
        return glob_matcher(self.exclude)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Filters:
        """The JSON form (the HTTP body's ``filters``, MCP's and the model's ``kb_search``):
        ``{"path": "projects/**" | [...], "exclude": ..., "type": "pdf" | [...], "since":
        "2026-11-01", "until": ..., "date": "modified" | "indexed" | "document", "tags": ..., …}``
        (every key of :data:`~kbdesk.filter_fields.FIELDS`). Unknown keys and wrong types are
        one-line errors naming the field."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise InvalidInputError("filters must be an object")
        unknown = sorted(set(data) - set(BY_KEY))
        if unknown:
            raise InvalidInputError(f"filters: unknown field '{unknown[0]}' (known: {', '.join(sorted(BY_KEY))})")
        values: dict[str, Any] = {}
        for spec in FIELDS:
            given = next((data[k] for k in (spec.key, *spec.aliases) if k in data), None)
            values[spec.attr] = _read(spec, given)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, only the fields that narrow (what :meth:`from_dict` reads back)."""
        out: dict[str, Any] = {}
        dated = self.since is not None or self.until is not None
        for spec in FIELDS:
            value = getattr(self, spec.attr)
            if spec.many and value:
                out[spec.key] = list(value)
            elif isinstance(value, datetime):
                out[spec.key] = value.isoformat()
            elif spec.kind == "choice" and dated and value != spec.choices[0]:
                out[spec.key] = value
        return out

    def describe(self) -> str:
        """One line for a person: ``path projects/** · type pdf, md · since 2026-11-01 · tags q3``."""
        parts = []
        if self.path:
            parts.append("path " + ", ".join(self.path))
        if self.exclude:
            parts.append("not " + ", ".join(self.exclude))
        if self.types:
            parts.append("type " + ", ".join(self.types))
        which = "dated" if self.date_field == "document" else self.date_field
        if self.since is not None:
            parts.append(f"{which} since {self.since.date().isoformat()}")
        if self.until is not None:
            parts.append(f"{which} until {(self.until - timedelta(microseconds=1)).date().isoformat()}")
        if self.tags:
            parts.append("tags " + " and ".join(self.tags))
        if self.any_tags:
            parts.append("any tag of " + ", ".join(self.any_tags))
        if self.not_tags:
            parts.append("no tag of " + ", ".join(self.not_tags))
        return " · ".join(parts)


@dataclass(frozen=True)
class DocumentFacts:
    """What a filter looks at in a document (both engines read these from ``kb_documents``)."""

    path: str
    """Its path relative to the folder it was added from (``work/plans/q3.md``), else its file name."""
    file_type: str = ""
    """Its extension, lower case, without the dot (``md``, ``pdf``); empty without one."""
    modified: float | None = None
    """The file's modified time (seconds since the epoch), when known."""
    indexed: float | None = None
    """When its stored chunks were indexed (seconds since the epoch)."""
    tags: frozenset[str] = frozenset()
    """Its tags, lower case, without ``#``, with the parents of nested ones (:func:`with_parents`)."""
    dated: float | None = None
    """The date it gives itself (seconds since the epoch: :func:`document_date`), when it has one."""


def document_date(properties: dict[str, Any] | None) -> float | None:
    """The date a document gives itself (seconds since the epoch), from the first of its
    ``date`` and ``created`` properties that parses: an ISO-8601 day or time (``2026-11-01``,
    ``2026-11-01 09:30``, ``2026-11-01T09:30:00Z``), a month or a year (``2026-11``,
    ``2026``: its first day) or an e-mail date (``Tue, 1 Dec 2026 10:00:00 +0000``); a time
    without an offset is UTC. None when none parses: such a date is left out of filtering,
    never an error."""
    for key in DOCUMENT_DATE_KEYS:
        moment = _loose_date((properties or {}).get(key))
        if moment is not None:
            return moment
    return None


def _loose_date(value: Any) -> float | None:
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        return None
    text = value.strip()
    try:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            part = re.fullmatch(r"(\d{4})(?:-(\d{1,2}))?", text)
            moment = (
                datetime(int(part.group(1)), int(part.group(2) or 1), 1)
                if part is not None
                else email.utils.parsedate_to_datetime(text)
            )
        return (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment).timestamp()
    except (ValueError, TypeError, IndexError, OverflowError):
        return None


def with_parents(tags: Iterable[str]) -> frozenset[str]:
    """Tags with the parents of nested ones: ``work/infra/db`` also counts as ``work/infra``
    and ``work`` (what a filter on a parent tag matches)."""
    given = [str(t) for t in tags]
    if not any("/" in t for t in given):
        return frozenset(given)
    out: set[str] = set()
    for tag in given:
        parts = [p for p in str(tag).split("/") if p]
        out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return frozenset(out)


def file_type_of(name: str) -> str:
    """The file type a filter compares: the extension of ``name``, lower case, no dot."""
    base = name.rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    return ext.lower() if dot and stem and ext and " " not in ext and len(ext) <= 16 else ""


def _read(spec: FilterField, value: Any) -> Any:
    """A field's value from its JSON form (None: the field's default)."""
    if spec.kind == "globs":
        return _strings(value, spec.key, split=spec.split)
    if spec.kind == "types":
        return tuple(t.lower().lstrip(".") for t in _strings(value, spec.key))
    if spec.kind == "tags":
        return _tags(value, spec.key)
    if spec.kind in ("since", "until"):
        return parse_date(value, spec.key, end_of_day=spec.kind == "until")
    return _choice(spec, spec.choices[0] if value is None else value)


def _strings(value: Any, name: str, *, split: bool = True) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v for v in (part.strip() for part in value.split(",")) if v] if split else [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidInputError(f"filters: '{name}' must be a string or a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _tags(value: Any, name: str) -> tuple[str, ...]:
    """Tags as a filter compares them: lower case, no ``#``, no ``/`` at either end."""
    found = tuple(t.lower().lstrip("#").strip("/") for t in _strings(value, name))
    if not all(found):
        raise InvalidInputError(f"filters: '{name}' must name tags (like q3 or work/infra)")
    return found


def _choice(spec: FilterField, value: Any) -> str:
    if value not in spec.choices:
        raise InvalidInputError(f"filters: '{spec.key}' must be one of {', '.join(spec.choices)}, not {value!r}")
    return str(value)


def parse_date(value: Any, name: str, *, end_of_day: bool = False) -> datetime | None:
    """An ISO-8601 day (``2026-11-01``) or time (``2026-11-01T09:30``, offsets allowed) in UTC;
    a bare day means its start, or with ``end_of_day`` the start of the next day."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInputError(
                f"filters: '{name}' must be a date like 2026-11-01 (or 2026-11-01T09:30), not {value!r}"
            ) from None
        if end_of_day and len(text) == 10:  # a bare day: the whole of it
            moment = datetime.combine(moment.date(), time()) + timedelta(days=1)
    else:
        raise InvalidInputError(f"filters: '{name}' must be a date string like 2026-11-01")
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def named_field(message: str) -> tuple[str, str] | None:
    """The field a filter error names and what it says of it (``filters: 'since' must be …``
    → ``("since", " must be …")``), so each face can name the field in its own words; None
    for an error that names no field."""
    prefix = "filters: '"
    if not message.startswith(prefix):
        return None
    name, _, rest = message[len(prefix) :].partition("'")
    return name, rest


__all__ = [
    "DATE_FIELDS",
    "DOCUMENT_DATE_KEYS",
    "DocumentFacts",
    "Filters",
    "document_date",
    "file_type_of",
    "glob_matcher",
    "named_field",
    "parse_date",
    "with_parents",
]
