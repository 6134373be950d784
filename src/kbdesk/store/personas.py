"""Personas and projects: the records and the checks of their fields.

The SQL that keeps them is written once for both engines in
:mod:`kbdesk.store.core.personas`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kbdesk.errors import InvalidInputError
from kbdesk.filters import Filters

UNSET: Any = object()
"""Leave a field as it is (None means "clear it")."""
RETRIEVAL_POLICIES = ("auto", "tool", "always", "off")


@dataclass
class Persona:
    id: str
    name: str
    system_prompt: str
    provider: str | None
    model: str | None
    created_at: str
    updated_at: str
    retrieval: str | None = None
    """auto, tool, always or off; None: the conversation's or config's policy applies."""
    max_tokens: int | None = None
    """Longest answer in tokens; None: the config's ``[chat] max_tokens``."""
    filters: dict[str, Any] | None = None
    """Default filters of its searches (:class:`kbdesk.filters.Filters`' JSON form); None: none."""
    kbs: list[tuple[str, bool]] = field(default_factory=list)
    """(kb_id, auto_search) of each bound KB."""

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "kbs"}
        out["knowledge_bases"] = [{"kb_id": k, "auto_search": a} for k, a in self.kbs]
        return out


@dataclass
class Project:
    id: str
    name: str
    description: str
    created_at: str
    updated_at: str
    kbs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "kbs"}
        out["knowledge_bases"] = list(self.kbs)
        return out


def check_retrieval(policy: str | None) -> str | None:
    """A retrieval policy (or None: decided by the next level)."""
    if policy in (None, ""):
        return None
    if policy not in RETRIEVAL_POLICIES:
        raise InvalidInputError(f"retrieval must be one of {', '.join(RETRIEVAL_POLICIES)}, not {policy!r}")
    return policy


def filters_in(value: Filters | dict[str, Any] | None) -> str | None:
    """Default filters as the JSON text kept in a ``filters`` column (checked; None or an
    empty filter: none)."""
    checked = value if isinstance(value, Filters) else Filters.from_dict(value)
    return json.dumps(checked.to_dict(), ensure_ascii=False) if checked else None


def filters_out(text: Any) -> dict[str, Any] | None:
    """A ``filters`` column's JSON text as the JSON form (None when empty or unreadable)."""
    if not text:
        return None
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return None
    return value if isinstance(value, dict) and value else None


def check_max_tokens(value: int | None) -> int | None:
    if value in (None, 0):
        return None
    if not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise InvalidInputError("max_tokens must be a whole number from 1 to 1,000,000")
    return value
