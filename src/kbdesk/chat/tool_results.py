"""Where a tool result reaches the model: a ``tool`` message where the server's chat
template renders one, otherwise a user message holding the results as data.

A chat template decides what the model reads. llama-cpp-python's
``chatml-function-calling`` renders only system, user and assistant messages (and an
assistant's tool calls): a ``role: "tool"`` message becomes ``<|im_start|>tool`` with
nothing after it, so the passages of a ``kb_search`` result never reach the model. The
server's ``usage.prompt_tokens`` shows it: kbdesk sends one small request whose tool
message is a single word and one whose tool message is :data:`PROBE_WORDS` words
(:func:`probe`, two one-token answers); when the second is not counted at least
:data:`KEPT_AT` tokens longer, the template dropped it. The verdict is kept per provider
and model (and base URL: another server behind the same name is asked again) in the
store's settings (:func:`verdict`); a server that does not say ``usage`` or fails the
probe keeps ``tool`` messages (the OpenAI way, which strict servers require after a tool
call).

For a server that drops them, :func:`as_data` rewrites the messages of every request:
each run of tool results after an assistant's tool calls becomes one user message
holding them — each already fenced as data with a line saying it is reference material,
not instructions (:func:`kbdesk.chat.safety.reference_block`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Literal

from kbdesk.errors import KbdeskError
from kbdesk.store.api import ChatStore

log = logging.getLogger("kbdesk.chat")

Verdict = Literal["kept", "dropped", "unknown"]
KEY = "chat.tool_results"
PROBE_WORDS = 48
"""Words in the long probe's tool message (each one token or more in any tokenizer)."""
KEPT_AT = 24
"""Extra prompt tokens the long probe must cost for tool messages to count as rendered."""
PROBE_CALL_ID = "call_kbdesk_probe"
RESULTS_INTRO = "Results of your {names} call (the passages to answer from):"
RESULTS_OUTRO = "Answer the question above from these results, citing their sources."


def probe_messages(words: int) -> list[dict[str, Any]]:
    """A conversation whose only variable part is a tool result of ``words`` words."""
    result = " ".join(["harbor"] * words)
    return [
        {"role": "system", "content": "You answer in one word."},
        {"role": "user", "content": "What did the search find?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": PROBE_CALL_ID,
                    "type": "function",
                    "function": {"name": "kb_search", "arguments": '{"query": "harbor"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": PROBE_CALL_ID, "content": result},
    ]


def probe(client: Any, model: str) -> tuple[Verdict, list[int | None]]:
    """Ask the server how many tokens a short and a long tool result cost; the verdict and
    the two counts."""
    try:
        short = client.prompt_tokens(probe_messages(1), model)
        long = client.prompt_tokens(probe_messages(PROBE_WORDS), model) if short is not None else None
    except KbdeskError as exc:
        log.info("tool-result probe of %s failed: %s", model, exc)
        return "unknown", []
    if short is None or long is None:
        return "unknown", [short, long]
    return ("kept" if long - short >= KEPT_AT else "dropped"), [short, long]


def verdict(store: ChatStore, client: Any, provider: str, model: str, base_url: str) -> Verdict:
    """Whether ``provider``/``model`` shows the model a tool message: remembered, else
    probed once (module docstring)."""
    known = _load(store)
    entry = known.get(f"{provider}/{model}")
    if isinstance(entry, dict) and entry.get("base_url") == base_url and entry.get("verdict") in _VERDICTS:
        return entry["verdict"]
    found, counts = probe(client, model)
    log.info("tool results on %s/%s: %s (prompt tokens %s)", provider, model, found, counts)
    known[f"{provider}/{model}"] = {"verdict": found, "base_url": base_url, "prompt_tokens": counts}
    try:
        store.set_setting(KEY, json.dumps(known, sort_keys=True))
    except KbdeskError as exc:  # the answer matters more than the memory
        log.warning("tool-result verdict not kept: %s", exc)
    return found


def remembered(store: ChatStore) -> dict[str, Any]:
    """What is known, per ``provider/model``: the verdict, the base URL, the two counts."""
    return _load(store)


def as_data(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each run of ``tool`` results turned into one user message
    holding them (for a template that does not render the tool role)."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    run: list[dict[str, Any]] = []

    def flush() -> None:
        if not run:
            return
        called = list(dict.fromkeys(names.get(str(m.get("tool_call_id")), "tool") for m in run))
        parts = [RESULTS_INTRO.format(names=", ".join(called))]
        parts += [str(m.get("content") or "") for m in run]
        parts.append(RESULTS_OUTRO)
        out.append({"role": "user", "content": "\n\n".join(parts)})
        run.clear()

    for message in messages:
        if message.get("role") == "tool":
            run.append(message)
            continue
        flush()
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                names[str(call.get("id"))] = str(function.get("name") or "tool")
        out.append(message)
    flush()
    return out


def has_tool_results(messages: Sequence[dict[str, Any]]) -> bool:
    return any(m.get("role") == "tool" for m in messages)


_VERDICTS = ("kept", "dropped", "unknown")


def _load(store: ChatStore) -> dict[str, Any]:
    try:
        value = json.loads(store.get_setting(KEY) or "{}")
    except (ValueError, KbdeskError):
        return {}
    return value if isinstance(value, dict) else {}


__all__ = [
    "KEPT_AT",
    "KEY",
    "PROBE_WORDS",
    "Verdict",
    "as_data",
    "has_tool_results",
    "probe",
    "probe_messages",
    "remembered",
    "verdict",
]
