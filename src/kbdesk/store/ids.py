"""Ids, clocks and name checks: the small rules every engine and table share."""

from __future__ import annotations

import os
import re
import uuid
from datetime import datetime, timezone

from kbdesk.errors import InvalidInputError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
ID_PREFIX = re.compile(r"^[0-9a-fA-F-]{4,36}$")
"""What may be a unique prefix of an id (ids are UUIDs on both engines)."""


def new_id() -> str:
    return str(uuid.uuid4())


def new_ids(count: int) -> list[str]:
    """``count`` random (version 4) UUIDs from one read of the system's randomness
    (one system call for a batch, not one each)."""
    raw = os.urandom(16 * count)
    return [str(uuid.UUID(bytes=raw[i:i + 16], version=4)) for i in range(0, 16 * count, 16)]


def utcnow() -> str:
    """ISO-8601 UTC with milliseconds and ``Z``: the form of every timestamp kbdesk shows."""
    return iso(datetime.now(timezone.utc))


def iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def check_name(name: str, what: str = "knowledge base name") -> str:
    """A display name, stripped: not empty, at most 200 characters, no control characters."""
    clean = (name or "").strip()
    if not clean:
        raise InvalidInputError(f"{what} must not be empty")
    if len(clean) > 200:
        raise InvalidInputError(f"{what} is longer than 200 characters")
    if _CONTROL.search(clean):
        raise InvalidInputError(f"{what} must not contain control characters")
    return clean
