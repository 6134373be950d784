"""Reading what servers send without trusting its shape: a field that should be an object
or a string and is something else reads as an empty one."""

from __future__ import annotations

from typing import Any


def obj(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def text(value: object) -> str:
    """``value`` if it is a string, else ""."""
    return value if isinstance(value, str) else ""
