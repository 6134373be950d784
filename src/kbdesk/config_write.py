"""Changing config.toml from kbdesk itself (``kbdesk provider add`` …).

The file is rewritten whole (comments are not kept), validated before it is written,
and written atomically with mode 0600 because it may hold API keys.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from kbdesk.config import Config, parse_config
from kbdesk.errors import ConfigError
from kbdesk.providers.settings import write_config_file

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are valid TOML basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise ConfigError(f"config: cannot write a value of type {type(value).__name__}")


def dump_toml(data: dict[str, Any]) -> str:
    """TOML for kbdesk's config shape: scalars, tables, and tables of tables."""
    lines: list[str] = []

    def table(prefix: list[str], body: dict[str, Any]) -> None:
        scalars = {k: v for k, v in body.items() if not isinstance(v, dict) and v is not None}
        tables = {k: v for k, v in body.items() if isinstance(v, dict)}
        if prefix and (scalars or not tables):
            lines.append(f"[{'.'.join(_key(p) for p in prefix)}]")
        for k, v in scalars.items():
            lines.append(f"{_key(k)} = {_value(v)}")
        if prefix and (scalars or not tables):
            lines.append("")
        for k, v in tables.items():
            table([*prefix, k], v)

    table([], data)
    return "\n".join(lines).rstrip() + "\n"


def load_raw(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config: {path} is not valid TOML: {exc}") from None


def update_config(path: Path, change: Any) -> Config:
    """Apply ``change(raw_dict)`` to the file, validate the result, write it (0600)."""
    raw = load_raw(path)
    change(raw)
    config = parse_config(raw)  # refuse to write a file kbdesk could not read back
    write_config_file(path, dump_toml(raw))
    return config
