"""Remote names and the refs that name a remote KB.

A remote KB is named ``REMOTE:KB`` — the remote's name, a colon, the KB's name (or id,
or id prefix) on that server: ``team:Product Docs``. ``team:*`` is every KB the token
may read there. Remote names are short lowercase words (``[a-z][a-z0-9_-]*``, at most
32 characters) so a ref is read one way only: a ref is remote when the text before its
first colon is a configured remote's name. A local KB whose name starts with a remote's
name and a colon would be ambiguous, so ``remote add`` refuses such a remote and
creating or renaming a local KB to such a name is refused (docs/REMOTES.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kbdesk.errors import InvalidInputError

NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
RESERVED = frozenset({"local", "all"})
EVERY = "*"


def check_remote_name(name: str) -> str:
    """``name`` if it can name a remote, else one line saying what can."""
    clean = (name or "").strip()
    if not NAME.match(clean) or clean in RESERVED:
        raise InvalidInputError(
            f"a remote's name is a lowercase word (a-z, digits, '-' or '_', at most 32 characters, "
            f"not 'local' or 'all'), got {clean!r}"
        )
    return clean


@dataclass(frozen=True)
class RemoteRef:
    remote: str
    kb: str  # a KB name, id or id prefix on that server, or "*"

    def __str__(self) -> str:
        return f"{self.remote}:{self.kb}"


def split_ref(ref: str, remotes: Iterable[str]) -> RemoteRef | None:
    """The remote part of ``ref`` when it names a KB of one of ``remotes``, else None."""
    head, colon, rest = (ref or "").partition(":")
    if not colon:
        return None
    name = head.strip().lower()
    if name not in set(remotes):
        return None
    kb = rest.strip()
    if not kb:
        raise InvalidInputError(f"name a knowledge base of the remote '{name}': {name}:NAME (or {name}:* for all)")
    return RemoteRef(name, kb)


def split_refs(refs: Sequence[str], remotes: Iterable[str]) -> tuple[list[str], list[RemoteRef]]:
    """(local refs, remote refs), each in the order given."""
    names = set(remotes)
    local: list[str] = []
    remote: list[RemoteRef] = []
    for ref in refs:
        found = split_ref(ref, names) if names else None
        if found is None:
            local.append(ref)
        else:
            remote.append(found)
    return local, remote


def display_name(remote: str, kb_name: str) -> str:
    """How a remote KB is shown and cited: ``team:Product Docs``."""
    return f"{remote}:{kb_name}"


def clashing_prefix(kb_name: str, remotes: Iterable[str]) -> str | None:
    """The remote whose refs a local KB named ``kb_name`` would be taken for, if any."""
    head, colon, _ = kb_name.partition(":")
    name = head.strip().lower()
    return name if colon and name in set(remotes) else None
