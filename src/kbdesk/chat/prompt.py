"""What a turn sends: the system prompt and the conversation so far, in the wire format.

The system prompt is the persona's prompt, then the KB hint (seed 000 §6), then a line
on notes, then any passages kbdesk retrieved itself (``auto_search``), fenced as data.

The history is rebuilt from the saved messages: ``notice`` rows are never sent; a
question that got no answer (a failed turn) is left out, so user and assistant
alternate as strict chat templates need; a tool exchange is sent only whole (the
assistant's calls and a result for each); and only the newest messages that fit the
budget (:mod:`kbdesk.chat.budget` derives it from the model's context window) are
kept, starting at a question. ``content`` is always a string, never null (strict
servers such as llama-cpp-python refuse a null on an assistant tool-call message).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbdesk.store.chat import ChatMessage

HISTORY_CHARS = 24_000
NOTES_HINT = "Use the note_search tool to search the user's notes (set semantic to true to match by meaning)."
SOURCES_HINT = "When you use retrieved passages, say which source each fact comes from."


def system_prompt(persona_prompt: str, hint: str, *, notes: bool, reference: str = "") -> str:
    parts = [persona_prompt.strip()] if persona_prompt and persona_prompt.strip() else []
    if hint:
        parts.append(hint)
    if notes:
        parts.append(NOTES_HINT)
    if hint or notes or reference:
        parts.append(SOURCES_HINT)
    if reference:
        parts.append(reference)
    return "\n\n".join(parts)


def history(messages: Sequence[Any], *, tools: bool = True, budget: int = HISTORY_CHARS) -> list[dict[str, Any]]:
    """Wire messages for the saved ``messages`` (oldest first). With ``tools=False``
    (a model that refuses tools) tool exchanges are reduced to the assistant's text."""
    return fit_history(messages, tools=tools, budget=budget)[0]


def fit_history(
    messages: Sequence[Any], *, tools: bool = True, budget: int = HISTORY_CHARS
) -> tuple[list[dict[str, Any]], int]:
    """:func:`history` and how many earlier answered questions did not fit ``budget``
    (characters)."""
    groups: list[list[dict[str, Any]]] = []  # one group per answered question
    current: list[dict[str, Any]] = []
    answered = False
    pending: ChatMessage | None = None  # an assistant tool-call message waiting for its results
    results: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "notice":
            continue
        if msg.role == "user":
            if current and answered:
                groups.append(current)
            current, answered, pending, results = [{"role": "user", "content": msg.content}], False, None, []
            continue
        if not current:
            continue  # an answer without its question (trimmed away earlier): skip
        if msg.role == "assistant" and msg.tool_calls:
            pending, results = msg, []
            if msg.content and not tools:
                current.append({"role": "assistant", "content": msg.content})
                answered = True
            continue
        if msg.role == "tool":
            if pending is not None:
                results.append({"role": "tool", "tool_call_id": msg.tool_call_id, "content": msg.content})
                wanted = [c.call_id for c in pending.tool_calls]
                if tools and [r["tool_call_id"] for r in results] == wanted:
                    current.append(
                        {
                            "role": "assistant",
                            "content": pending.content or "",
                            "tool_calls": [_wire_call(c) for c in pending.tool_calls],
                        }
                    )
                    current.extend(results)
                    pending, results = None, []
            continue
        if msg.role == "assistant" and msg.content:
            current.append({"role": "assistant", "content": msg.content})
            answered = True
    if current and answered:
        groups.append(current)
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for group in reversed(groups):
        size = sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in group)
        if budget <= 0 or (kept and used + size > budget):
            break
        if not kept and size > budget:  # the last exchange alone is too big: its question and answer
            texts = [m for m in group[1:] if m["role"] == "assistant" and not m.get("tool_calls")]
            group = [group[0], *texts[-1:]]
        kept.append(group)
        used += size
    return [m for group in reversed(kept) for m in _ends_with_answer(group)], len(groups) - len(kept)


def _ends_with_answer(group: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop a trailing tool exchange that has no final answer after it."""
    while group and group[-1]["role"] == "tool":
        while group and group[-1]["role"] == "tool":
            group = group[:-1]
        if group and group[-1].get("tool_calls"):
            group = group[:-1]
    return group


def _wire_call(call: Any) -> dict[str, Any]:
    return {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
