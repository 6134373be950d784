"""Changing config.toml from kbdesk itself (``kbdesk provider add`` …).

What the user wrote stays as written: the change is made on a plain dict (the rules
live in the callers), then only the keys it added, changed or removed are carried
into the parsed document (tomlkit), so comments, blank lines, key order and the
tables' layout survive. The result is validated before it is written, and written
atomically with mode 0600 because it may hold API keys.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table
from tomlkit.toml_document import TOMLDocument

from kbdesk.config import Config, parse_config
from kbdesk.errors import ConfigError
from kbdesk.providers.settings import write_config_file


def _plain(value: Any) -> Any:
    """A tomlkit item as the plain Python value it stands for."""
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _check_writable(value: Any, key: str) -> None:
    if value is None or isinstance(value, bool | int | float | str):
        return
    if isinstance(value, list):
        for item in value:
            _check_writable(item, key)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _check_writable(v, f"{key}.{k}")
        return
    raise ConfigError(f"config: cannot write a value of type {type(value).__name__} ({key})")


def _carry(target: MutableMapping[str, Any], new: dict[str, Any]) -> None:
    """Make ``target`` (a table of the parsed file) hold ``new``, touching only what differs."""
    for key in [k for k in target if k not in new or new[k] is None]:
        del target[key]
    for key, value in new.items():
        if value is None:
            continue
        if key in target:
            old = target[key]
            if isinstance(value, dict) and isinstance(old, MutableMapping):
                _carry(old, value)
                continue
            if _plain(old) == value:
                continue
        target[key] = _new_item(value, inline=isinstance(target, InlineTable))


def _new_item(value: Any, *, inline: bool) -> Any:
    """A value for the file: inside an inline table, inline; a new table ends with a
    blank line, as hand-written ones do."""
    if isinstance(value, dict) and inline:
        table = tomlkit.inline_table()
        for k, v in value.items():
            if v is not None:
                table[k] = _new_item(v, inline=True)
        return table
    item = tomlkit.item(value)
    if isinstance(item, Table) and not all(isinstance(v, dict) for v in value.values()):
        item.add(tomlkit.nl())
    return item


def _render(document: TOMLDocument, raw: dict[str, Any]) -> str:
    """The edited file's text, checked by reading it back: layouts tomlkit cannot extend
    faithfully (tables added among dotted keys) are written afresh instead."""
    _carry(document, raw)
    text = tomlkit.dumps(document)
    try:
        if tomllib.loads(text) == _without_none(raw):
            return text
    except tomllib.TOMLDecodeError:
        pass
    fresh = tomlkit.document()
    _carry(fresh, raw)
    return tomlkit.dumps(fresh)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


def _read_document(path: Path) -> TOMLDocument:
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return tomlkit.document()
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config: {path} is not valid TOML: {exc}") from None


def load_raw(path: Path) -> dict[str, Any]:
    """The file as plain dicts and values (``{}`` when there is none)."""
    return _read_document(path).unwrap()


def update_config(path: Path, change: Callable[[dict[str, Any]], None]) -> Config:
    """Apply ``change(raw_dict)`` to the file, validate the result, write it (0600),
    keeping the comments and layout of everything the change left alone."""
    document = _read_document(path)
    raw = document.unwrap()
    change(raw)
    config = parse_config(raw)  # refuse to write a file kbdesk could not read back
    _check_writable(raw, "config")
    write_config_file(path, _render(document, raw))
    return config
