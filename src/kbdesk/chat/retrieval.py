"""The retrieval policy of a turn: whether and how the active KBs are consulted.

* ``auto`` (the default): the model is asked to call ``kb_search`` first (a forced tool
  choice) and then answers from what it found — merged with what kbdesk finds for the
  question itself (:mod:`.grounding`: for a follow-up, also the question made
  standalone), so a query the model writes badly (empty, punctuation, finding nothing)
  never leaves the turn without passages. A model or server that does not follow a
  forced tool choice — it answers without the call, or fails in any way (an error
  status, an empty or broken stream) — is asked again once without forcing, with the
  passages kbdesk found; kbdesk remembers that for the provider and model, so later
  turns search first and spare it the wasted round. Either way a question asked with
  KBs attached is answered from them.
* ``tool``: the model may call ``kb_search`` when it sees fit; when it does not, the
  turn says so ("the model did not search …").
* ``always``: kbdesk searches the KBs with the question (a follow-up also in its
  standalone form) before every answer (the passages go into the prompt);
  ``kb_search`` is still offered for more.
* ``off``: the KBs are not offered and not searched.

The policy comes from the turn's own option, else the conversation, else the persona,
else ``[chat] retrieval`` in config.toml.

Every search of a turn (kbdesk's own with the question, and the model's ``kb_search``)
keeps to the conversation's default filters, else its persona's (:func:`filters_for`);
a turn's own filters and a model's ``filters`` argument lie over them
(:func:`kbdesk.filters_text.overlay`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from kbdesk.chat.events import Retrieval, RetrievalHow
from kbdesk.filters import Filters
from kbdesk.store.api import ChatStore
from kbdesk.store.chat import Conversation, Persona

POLICIES = ("auto", "tool", "always", "off")
_IGNORES_KEY = "chat.ignores_forced_tool_choice"
_AUTO_KEY = "chat.fails_on_auto_tool_choice"


def policy_for(option: str | None, conversation: Conversation | None, persona: Persona | None, configured: str) -> str:
    for value in (option, getattr(conversation, "retrieval", None), getattr(persona, "retrieval", None), configured):
        if value:
            return str(value)
    return "auto"


def filters_for(conversation: Conversation | None, persona: Persona | None) -> Filters:
    """The default filters of a conversation's searches: its own, else its persona's, else none."""
    for value in (getattr(conversation, "filters", None), getattr(persona, "filters", None)):
        if value:
            return Filters.from_dict(value)
    return Filters()


def ignores_forcing(store: ChatStore, provider: str, model: str) -> bool:
    """Whether this model was seen answering without the tool call it was told to make."""
    return f"{provider}/{model}" in _ignoring(store)


def remember_ignores_forcing(store: ChatStore, provider: str, model: str) -> None:
    known = _ignoring(store)
    if f"{provider}/{model}" not in known:
        store.set_setting(_IGNORES_KEY, json.dumps(sorted(known | {f"{provider}/{model}"})))


def _ignoring(store: ChatStore, key: str = _IGNORES_KEY) -> set[str]:
    try:
        return set(json.loads(store.get_setting(key) or "[]"))
    except ValueError:
        return set()


def auto_fails(store: ChatStore, provider: str, model: str) -> bool:
    """Whether this model was seen unable to answer while tools were offered with
    ``tool_choice: "auto"`` (llama-cpp-python's chatml-function-calling: an empty answer,
    or an empty stream when the model picks a tool)."""
    return f"{provider}/{model}" in _ignoring(store, _AUTO_KEY)


def remember_auto_fails(store: ChatStore, provider: str, model: str) -> None:
    known = _ignoring(store, _AUTO_KEY)
    if f"{provider}/{model}" not in known:
        store.set_setting(_AUTO_KEY, json.dumps(sorted(known | {f"{provider}/{model}"})))


def describe(
    how: RetrievalHow,
    names: Sequence[str],
    keyword_only: Sequence[str] = (),
    filters: Filters | None = None,
    unreached: Sequence[str] = (),
) -> Retrieval:
    """The line the user sees about this turn's retrieval; ``keyword_only`` names the KBs
    searched by keyword alone because the question could not be embedded for them,
    ``filters`` the default filters the searches kept to, ``unreached`` the remotes a
    search could not reach (``team (unreachable)``)."""
    kbs = ", ".join(names)
    text = {
        "tool": f"searched {kbs} (kb_search)",
        "auto": f"searched {kbs} (kbdesk searched with the question)",
        "skipped": f"the model did not search {kbs}",
        "off": f"did not search {kbs} (retrieval is off)",
        "none": "no knowledge base with searchable documents is active",
        "unreachable": f"not searched: the server could not be reached ({kbs})",
        "stopped": f"stopped before searching {kbs}",
        "failed": f"not searched: the answer failed before {kbs} could be searched",
    }[how]
    if filters and how in ("tool", "auto", "skipped"):
        text += f", within {filters.describe()}"
    if keyword_only and how in ("tool", "auto"):
        text += f"; by keyword only in {', '.join(keyword_only)}: the question could not be embedded"
    if unreached and how in ("tool", "auto"):
        text += f"; remote not reached: {', '.join(unreached)} (its KBs were not searched)"
    return Retrieval(how, tuple(names), text, tuple(keyword_only))
