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
from typing import Any, cast

from kbdesk.desk_api import DeskApi
from kbdesk.errors import KbdeskError, NotFoundError
from kbdesk.models import KnowledgeBase
from kbdesk.remote.names import RemoteRef
from kbdesk.remote.registry import remote_kb
from kbdesk.store.api import ChatStore

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


def bind(desk: DeskApi, conversation_id: str, refs: Sequence[RemoteRef]) -> None:
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
        # conversations live in a chat store only (ChatService, which binds, checked it has one)
        cast(ChatStore, desk.store).set_setting(PREFIX + conversation_id, json.dumps(entries))


def remote_toggles(desk: DeskApi, conversation_id: str) -> list[tuple[str, str, int, bool]]:
    """``(ref, name, documents, on)`` for the chat's KB toggles: the remote KBs bound to the
    conversation (on), then the other KBs the remotes offer now (off; a remote that does
    not answer offers none)."""
    rows = [
        (e["ref"], str(e.get("name") or e["ref"]), int(e.get("documents") or 0), True)
        for e in bound(desk.store, conversation_id)
    ]
    if desk.config.remotes:
        on = {r[0] for r in rows} | {r[1] for r in rows}
        listed, _states = desk.remotes.list_all()
        rows += [
            (kb.ref, kb.display, kb.document_count, False) for kb in listed if kb.ref not in on and kb.display not in on
        ]
    return rows


def toggle(desk: DeskApi, conversation_id: str, ref: RemoteRef, enabled: bool) -> None:
    """Switch one remote KB on or off in the conversation (the others stay as they are)."""
    kept = [RemoteRef(*e["ref"].split(":", 1)) for e in bound(desk.store, conversation_id)]
    names = {e["ref"]: e.get("name") for e in bound(desk.store, conversation_id)}
    same = {str(ref)}
    if not enabled:
        kept = [k for k in kept if str(k) not in same and names.get(str(k)) != str(ref)]
    elif all(str(k) != str(ref) and names.get(str(k)) != str(ref) for k in kept):
        kept.append(ref)
    bind(desk, conversation_id, kept)
