"""Which knowledge bases a conversation uses: the resolution chain of seed 002.

Persona KBs → project KBs → conversation KBs → personal KBs, in that priority order,
each KB once (the first place it comes from wins, so a persona's ``auto_search`` flag
is kept). The rules, for one person on one desk:

* **persona** and **project** bindings always apply while the conversation has that
  persona or project; they are changed on the persona or project, not per conversation
  (the toggle list shows them checked and locked). This is how a non-discoverable KB
  is used: through a binding only.
* **conversation** bindings are the rows of ``channel_knowledge_bases``: ``enabled``
  adds a KB (a team or global one, say); ``enabled = 0`` switches one of the personal
  defaults off for this conversation.
* **personal** KBs — the user's own (scope ``personal``) and discoverable — are on by
  default in every conversation, as seed 000 §5 says ("personal KBs owned by user,
  always available"), until switched off in that conversation.

The system-prompt hint of seed 000 §6 lists every active KB with its document count.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbdesk.errors import InvalidInputError
from kbdesk.models import KnowledgeBase
from kbdesk.store.api import ChatStore
from kbdesk.store.chat import Conversation

ORIGINS = ("persona", "project", "conversation", "personal")


@dataclass(frozen=True)
class ActiveKB:
    kb: KnowledgeBase
    origin: str
    """persona, project, conversation or personal: where the KB came from."""
    auto_search: bool = False
    searchable: int = 0
    """Its documents that can be found (they hold chunks): the hint's count."""


@dataclass(frozen=True)
class KbToggle:
    """One row of the conversation's KB popup (seed 000 §8)."""

    kb_id: str
    name: str
    document_count: int
    enabled: bool
    origin: str | None
    """Why it is on (see :data:`ORIGINS`), None when off."""
    locked: bool
    """On through the persona or project: not switchable from the conversation."""
    auto_search: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def resolve_kbs(
    store: ChatStore,
    *,
    conversation_id: str | None = None,
    persona_id: str | None = None,
    project_id: str | None = None,
) -> list[ActiveKB]:
    """The KBs active for a turn, in priority order."""
    kbs = {kb.id: kb for kb in store.list_kbs()}
    counts = store.searchable_counts()
    active: dict[str, ActiveKB] = {}

    def add(kb_id: str, origin: str, auto: bool = False) -> None:
        if kb_id in kbs and kb_id not in active:
            active[kb_id] = ActiveKB(kbs[kb_id], origin, auto, counts.get(kb_id, 0))

    if persona_id:
        for kb_id, auto in store.find_persona(persona_id).kbs:
            add(kb_id, "persona", auto)
    if project_id:
        for kb_id in store.find_project(project_id).kbs:
            add(kb_id, "project")
    switched_off: set[str] = set()
    if conversation_id:
        for row in store.channel_kbs(conversation_id):
            if row["enabled"]:
                add(row["kb_id"], "conversation")
            else:
                switched_off.add(row["kb_id"])
    if conversation_id:  # remote KBs bound to it (kbdesk.remote.bindings)
        from kbdesk.remote.bindings import bound_kbs

        for remote in bound_kbs(store, conversation_id):
            active.setdefault(remote.id, ActiveKB(remote, "conversation", False, remote.document_count))
    for kb in kbs.values():
        if kb.scope == "personal" and kb.discoverable and kb.id not in switched_off:
            add(kb.id, "personal")
    return list(active.values())


def kb_toggles(store: ChatStore, conversation: Conversation) -> list[KbToggle]:
    """Every KB the user can pick for ``conversation`` plus those its persona or project
    bind, with whether each is on, by name."""
    active = {
        a.kb.id: a
        for a in resolve_kbs(
            store,
            conversation_id=conversation.id,
            persona_id=conversation.persona_id,
            project_id=conversation.project_id,
        )
    }
    rows = []
    for kb in store.list_kbs():
        on = active.get(kb.id)
        if not kb.discoverable and on is None:
            continue
        rows.append(
            KbToggle(
                kb.id,
                kb.name,
                kb.document_count,
                on is not None,
                on.origin if on else None,
                bool(on and on.origin in ("persona", "project")),
                bool(on and on.auto_search),
            )
        )
    return rows


def check_switchable(toggles: Sequence[KbToggle], kb: KnowledgeBase) -> None:
    row = next((t for t in toggles if t.kb_id == kb.id), None)
    if row is None:
        raise InvalidInputError(
            f"'{kb.name}' is not discoverable: it can be used only through a persona or project binding"
        )
    if row.locked:
        raise InvalidInputError(f"'{kb.name}' comes from this conversation's {row.origin}; change it there")


def kb_hint(active: Sequence[ActiveKB], *, tools: bool = True) -> str:
    """Seed 000 §6: the system-prompt hint listing the active KBs ("" when there are none)."""
    active = [a for a in active if a.searchable > 0]  # a KB with nothing to find is not offered
    if not active:
        return ""
    lines = ["You have access to the following knowledge bases:"]
    for item in active:
        count = item.searchable
        lines.append(f"- {json.dumps(item.kb.name, ensure_ascii=False)} ({count} document{'' if count == 1 else 's'})")
    lines.append(
        "Use the kb_search tool to find relevant information from these sources."
        if tools
        else "Passages kbdesk retrieved from these sources for the latest question are included below."
    )
    return "\n".join(lines)
