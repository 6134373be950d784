"""The filter flags of ``kbdesk search``, ``ask`` and ``chat``: one filter language
(:mod:`kbdesk.filters`) written as options, made from its declared fields
(:data:`kbdesk.filter_fields.FIELDS`). A bad value is one line naming the flag."""

from __future__ import annotations

from typing import Any

import click

from kbdesk.errors import InvalidInputError
from kbdesk.filter_fields import BY_KEY, FIELDS, FilterField
from kbdesk.filters import Filters, named_field

FLAGS = {key: spec.flag for key, spec in BY_KEY.items()}
"""A JSON key (or alias) and the flag that gives it, for errors."""

_MORE = {
    "globs": " (repeatable: {which} of them)",
    "types": " (comma-separated or repeated)",
    "tags": " (repeatable)",
}


def _option(spec: FilterField) -> Any:
    if spec.choices:
        return click.option(spec.flag, spec.param, type=click.Choice(spec.choices), help=spec.help)
    which = "none" if spec.key == "exclude" else "any"
    return click.option(
        spec.flag,
        spec.param,
        multiple=spec.many,
        metavar=spec.metavar,
        help=spec.help + _MORE.get(spec.kind, "").format(which=which),
    )


filter_options = [_option(spec) for spec in FIELDS]


def with_filter_options(fn: Any) -> Any:
    for option in reversed(filter_options):
        fn = option(fn)
    return fn


def pop_filters(kwargs: dict[str, Any]) -> Filters:
    """The filters the flags in ``kwargs`` say (taken out of it); errors name the flag."""
    data: dict[str, Any] = {}
    for spec in FIELDS:
        value = kwargs.pop(spec.param, None)
        if not value:
            continue
        if spec.many:
            data[spec.key] = list(value) if spec.kind == "globs" else ",".join(value)
        else:
            data[spec.key] = value
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
