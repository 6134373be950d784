"""The filter flags of ``kbdesk search``, ``ask`` and ``chat``: one filter language
(:mod:`kbdesk.filters`) written as options. A bad value is one line naming the flag."""

from __future__ import annotations

from typing import Any

import click

from kbdesk.errors import InvalidInputError
from kbdesk.filters import DATE_FIELDS, Filters, named_field

FLAGS = {
    "path": "--path",
    "exclude": "--exclude",
    "type": "--type",
    "types": "--type",
    "since": "--since",
    "until": "--until",
    "date": "--date",
    "tags": "--tag",
    "any_tags": "--any-tag",
}
NAMES = ("path_globs", "exclude_globs", "file_types", "since", "until", "date_field", "tags", "any_tags")

filter_options = [
    click.option(
        "--path",
        "path_globs",
        multiple=True,
        metavar="GLOB",
        help="Only documents whose path (relative to the folder they were added from) matches GLOB "
        "('projects/**', '*.md'; repeatable: any of them).",
    ),
    click.option(
        "--exclude",
        "exclude_globs",
        multiple=True,
        metavar="GLOB",
        help="Leave out documents whose path matches GLOB (repeatable).",
    ),
    click.option(
        "--type",
        "file_types",
        multiple=True,
        metavar="TYPES",
        help="Only these file types, comma-separated or repeated (pdf,md).",
    ),
    click.option("--since", metavar="DATE", help="Only documents dated on or after DATE (2026-11-01, or a time)."),
    click.option("--until", metavar="DATE", help="Only documents dated on or before DATE (a day counts whole)."),
    click.option(
        "--date",
        "date_field",
        type=click.Choice(DATE_FIELDS),
        help="What --since/--until compare: the file's modified time (default), when it was indexed, or "
        "the date the document gives itself (front matter date: or created:, an e-mail's or Office file's "
        "date; documents without one are left out).",
    ),
    click.option(
        "--tag",
        "tags",
        multiple=True,
        metavar="TAG",
        help="Only documents tagged TAG (front matter tags: or inline #tags; a nested tag work/infra also counts as "
        "work; repeatable: all of them).",
    ),
    click.option(
        "--any-tag",
        "any_tags",
        multiple=True,
        metavar="TAG",
        help="Only documents carrying at least one of these tags (repeatable).",
    ),
]


def with_filter_options(fn: Any) -> Any:
    for option in reversed(filter_options):
        fn = option(fn)
    return fn


def pop_filters(kwargs: dict[str, Any]) -> Filters:
    """The filters the flags in ``kwargs`` say (taken out of it); errors name the flag."""
    values = {name: kwargs.pop(name, None) for name in NAMES}
    data: dict[str, Any] = {}
    for key, name in (
        ("path", "path_globs"),
        ("exclude", "exclude_globs"),
        ("type", "file_types"),
        ("tags", "tags"),
        ("any_tags", "any_tags"),
    ):
        if values[name]:
            data[key] = list(values[name]) if key in ("path", "exclude") else ",".join(values[name])
    for key in ("since", "until"):
        if values[key]:
            data[key] = values[key]
    if values["date_field"]:
        data["date"] = values["date_field"]
    try:
        return Filters.from_dict(data)
    except InvalidInputError as exc:
        raise InvalidInputError(flag_words(str(exc))) from None


def flag_words(message: str) -> str:
    """``filters: 'since' must be …`` as ``--since must be …``."""
    named = named_field(message)
    if named is None:
        return message
    name, rest = named
    return f"{FLAGS.get(name, name)}{rest}"
