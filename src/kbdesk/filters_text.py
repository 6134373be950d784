"""Filters as one line of text, for people: ``tag:q3 path:work/** type:md since:2026-11-01``.

The TUI's search screen and the chat's ``/filter`` read this line; :func:`format_line`
writes a :class:`~kbdesk.filters.Filters` back the same way. Words are ``key:value``
(values with spaces in quotes: ``path:"My Notes/**"``; ``#q3`` is ``tag:q3``):

* ``path:GLOB`` (repeatable: any of them), ``not:GLOB`` (none of them)
* ``type:pdf,md`` — file types
* ``since:DAY`` / ``until:DAY`` — ISO days or times; ``date:indexed`` compares when
  kbdesk indexed a document instead of the file's modified time, ``date:document`` the
  date the document gives itself (front matter ``date:``, an e-mail's or Office file's date)
* ``tag:T`` (repeatable or ``tag:a,b``: all of them), ``any:T`` (at least one),
  ``nottag:T`` (none of them)

The words are those :data:`kbdesk.filter_fields.FIELDS` declares for each field.

:func:`complete_line` offers the rest of a word from known tags, folders and types (the
TUI's suggester). :func:`as_filters` takes what a library caller passes (a Filters, its
JSON dict, a line, or None), and :func:`overlay` lays a search's own filters over a
conversation's defaults. Errors are one line naming the key.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from kbdesk.errors import InvalidInputError
from kbdesk.filter_fields import BY_KEY, DATE_FIELDS, FIELDS
from kbdesk.filters import Filters, named_field

KEYS: dict[str, str] = {word: spec.key for spec in FIELDS for word in spec.words}
"""Words of the line and the JSON field each one fills."""
SHOWN_KEYS = tuple(f"{spec.words[0]}:" for spec in FIELDS)
"""The keys offered for completion, in the order help text lists them."""
_LINE_NAME = {key: spec.words[0] for key, spec in BY_KEY.items()}
"""A JSON field's (or alias's) word in the line."""


def parse_line(text: str) -> Filters:
    """The filters a line says (an empty line: no filter). Raises InvalidInputError with one
    line naming the word at fault."""
    try:
        words = shlex.split(text or "")
    except ValueError:
        raise InvalidInputError('filter: a quote is not closed (write path:"My Notes/**")') from None
    data: dict[str, Any] = {}
    for word in words:
        if word.startswith("#") and len(word) > 1:
            key, value = "tag", word[1:]
        elif ":" in word:
            key, _, value = word.partition(":")
        else:
            raise InvalidInputError(
                f"filter: {word!r} is not key:value (for example tag:q3 path:work/** type:md since:2026-11-01)"
            )
        field = KEYS.get(key.strip().lower())
        if field is None:
            known = ", ".join(k.rstrip(":") for k in SHOWN_KEYS)
            raise InvalidInputError(f"filter: unknown key {key!r} in {word!r} (keys: {known})")
        value = value.strip()
        if not value:
            raise InvalidInputError(f"filter: {key}: needs a value")
        spec = BY_KEY[field]
        if spec.many:
            parts = [value] if spec.kind == "globs" else [v for v in value.split(",") if v.strip()]
            data.setdefault(field, []).extend(parts)
        elif field in data:
            raise InvalidInputError(f"filter: {key}: is given twice")
        else:
            data[field] = value
    try:
        return Filters.from_dict(data)
    except InvalidInputError as exc:
        raise InvalidInputError(_line_words(str(exc))) from None


def _line_words(message: str) -> str:
    """A JSON-form error (``filters: 'any_tags' must …``) in the line's words (``filter any: must …``)."""
    named = named_field(message)
    if named is None:
        return message.replace("filters:", "filter:", 1)
    name, rest = named
    return f"filter {_LINE_NAME.get(name, name)}:{rest}"


def format_line(filters: Filters | None) -> str:
    """The line that :func:`parse_line` reads back into ``filters``."""
    if not filters:
        return ""
    words: list[str] = []
    dated = filters.since is not None or filters.until is not None
    for spec in FIELDS:
        word, value = spec.words[0], getattr(filters, spec.attr)
        if spec.kind == "types" and value:
            words.append(f"{word}:" + ",".join(value))
        elif spec.many:
            words += [f"{word}:{_quoted(v)}" for v in value]
        elif isinstance(value, datetime):
            words.append(f"{word}:" + _moment(value, end=spec.kind == "until"))
        elif spec.kind == "choice" and dated and value != spec.choices[0]:
            words.append(f"{word}:{value}")
    return " ".join(words)


def _quoted(value: str) -> str:
    return shlex.quote(value) if any(c.isspace() or c in "'\"" for c in value) else value


def _moment(moment: datetime, *, end: bool = False) -> str:
    """A day when the moment is midnight UTC (for ``until``: the day before it), else the full time."""
    if (moment.hour, moment.minute, moment.second, moment.microsecond) == (0, 0, 0, 0):
        return (moment - timedelta(days=1) if end else moment).date().isoformat()
    return moment.isoformat()


def as_filters(value: Filters | dict[str, Any] | str | None) -> Filters:
    """What a caller passes as ``filters`` — a Filters, its JSON form, a filter line or None —
    as a Filters (bad ones: InvalidInputError naming the field)."""
    if value is None:
        return Filters()
    if isinstance(value, Filters):
        return value
    if isinstance(value, str):
        return parse_line(value)
    if isinstance(value, dict):
        return Filters.from_dict(value)
    raise InvalidInputError(f"filters must be an object ({', '.join(spec.key for spec in FIELDS)})")


def overlay(base: Filters | None, extra: Filters | None) -> Filters:
    """``extra`` (a search's own filters) over ``base`` (a conversation's or persona's
    defaults): a field ``extra`` sets replaces the same field of ``base``, except
    ``exclude``, ``tags`` and ``not_tags``, which add up (still every one of them)."""
    base, extra = base or Filters(), extra or Filters()
    if not extra:
        return base
    if not base:
        return extra
    changes: dict[str, Any] = {}
    for name in ("path", "types", "any_tags"):
        if getattr(extra, name):
            changes[name] = getattr(extra, name)
    for name in ("exclude", "tags", "not_tags"):
        changes[name] = _union(getattr(base, name), getattr(extra, name))
    if extra.since is not None or extra.until is not None:
        changes.update(since=extra.since, until=extra.until, date_field=extra.date_field)
    return replace(base, **changes)


def _union(a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*a, *b]))


def complete_line(
    text: str, *, tags: Iterable[str] = (), folders: Iterable[str] = (), types: Iterable[str] = ()
) -> str | None:
    """The whole line with its last word completed from the known ``tags``, ``folders``
    (offered as ``folder/**``) and file ``types``, or a key; None when nothing fits."""
    if not text or text.endswith((" ", '"')):
        return None
    head, _, word = text.rpartition(" ")
    prefix = f"{head} " if head else ""
    low = word.lower()
    if ":" not in word:
        if word.startswith("#"):
            found = _first(word[1:], tags)
            return f"{prefix}#{found}" if found else None
        key = next((k for k in SHOWN_KEYS if k.startswith(low) and k != low), None)
        return prefix + key if key else None
    key, _, value = word.partition(":")
    field = KEYS.get(key.lower())
    choices: Iterable[str]
    if field in ("tags", "any_tags", "not_tags"):
        head_values, _, value = value.rpartition(",")
        key = f"{key}:{head_values}," if head_values else f"{key}:"
        choices = tags
    elif field in ("path", "exclude"):
        key, choices = f"{key}:", [f"{f.rstrip('/')}/**" for f in folders]
    elif field == "type":
        head_values, _, value = value.rpartition(",")
        key, choices = (f"{key}:{head_values}," if head_values else f"{key}:"), types
    elif field == "date":
        key, choices = f"{key}:", DATE_FIELDS
    else:
        return None
    found = _first(value, choices)
    return f"{prefix}{key}{_quoted(found)}" if found else None


def _first(start: str, choices: Iterable[str]) -> str | None:
    """The first choice (sorted) that starts with ``start`` and is longer (any case)."""
    low = start.lower()
    return next((c for c in sorted(set(choices)) if c.lower().startswith(low) and len(c) > len(start)), None)


__all__ = ["KEYS", "SHOWN_KEYS", "as_filters", "complete_line", "format_line", "overlay", "parse_line"]
