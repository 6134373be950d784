"""Remote KBs bound to a conversation.

A conversation's local KBs are rows of ``channel_knowledge_bases`` (a foreign key to
``knowledge_bases``); a remote KB has no row there, so its binding is kept as one of the
user's settings, ``remote_kbs:<conversation id>``: a JSON list of ``{ref, name,
documents, model_id}``. The ref is ``team:<id>`` when the remote answered at binding
time, else the ref as typed (``team:Product Docs``, found by name at each search). The
turn reads the list without asking the remote (offline first): a remote that is down
then shows in the turn's search notes, not as a failed turn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kbdesk.errors import KbdeskError, NotFoundError
from kbdesk.models import KnowledgeBase
from kbdesk.remote.names import RemoteRef
from kbdesk.remote.registry import remote_kb

PREFIX = "remote_kbs:"


def bound(store: Any, conversation_id: str) -> list[dict[str, Any]]:
    try:
        raw = json.loads(store.get_setting(PREFIX + conversation_id) or "[]")
    except ValueError:
        return []
    return [e for e in raw if isinstance(e, dict) and isinstance(e.get("ref"), str)] if isinstance(raw, list) else []


def bound_kbs(store: Any, conversation_id: str) -> list[KnowledgeBase]:
    """The remote KBs bound to the conversation, as :class:`KnowledgeBase` objects."""
    return [
        remote_kb(e["ref"], str(e.get("name") or e["ref"]), e.get("model_id"), int(e.get("documents") or 1))
        for e in bound(store, conversation_id)
    ]


def bind(desk: Any, conversation_id: str, refs: Sequence[RemoteRef]) -> None:
    """Bind exactly these remote KBs to the conversation (an empty list unbinds them all).
    Each is looked up on its remote (within its budget); one that cannot be reached now is
    kept by the name given, and one the remote says it does not have is refused."""
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for ref in refs:
        try:
            found = desk.remotes.resolve(ref.remote, [ref.kb])
        except NotFoundError:
            raise
        except KbdeskError:
            found = []
            if str(ref) not in seen:
                seen.add(str(ref))
                entries.append({"ref": str(ref), "name": str(ref), "documents": 1, "model_id": None})
        for kb in found:
            if kb.ref not in seen:
                seen.add(kb.ref)
                entries.append(
                    {"ref": kb.ref, "name": kb.display, "documents": kb.document_count, "model_id": kb.model_id}
                )
    if entries or bound(desk.store, conversation_id):
        desk.store.set_setting(PREFIX + conversation_id, json.dumps(entries))
