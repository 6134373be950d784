"""Fitting a turn into the model's context window.

A prompt is the system prompt, the tool definitions, the conversation so far, the
question and this turn's tool exchange; the model's answer needs room after it. The
window comes from the server where it says (:func:`kbdesk.providers.context.context_window`),
else ``[chat] context_window``, else 4,096 tokens. What does not fit goes in this order:
the oldest questions of the conversation with their answers, down to what fits in
``HISTORY_SHARE`` of the room; then this turn's tool results are shortened (each keeps
its start); then older questions again if the results still need the room. The answer's
own room (``max_tokens``) shrinks last, to what is left, but never below a floor.

Tokens are estimated from characters (about 3.5 per token for English prose with a
BPE tokenizer, a little generous so an estimate errs on the side of fitting).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbdesk.chat.prompt import fit_history

DEFAULT_WINDOW = 4096
CHARS_PER_TOKEN = 3.5
MESSAGE_OVERHEAD = 6  # tokens a chat template adds around each message
MIN_ANSWER = 128  # tokens kept for the answer whatever else needs room
TOOL_RESULT_FLOOR = 600  # characters a shortened tool result keeps at least
HISTORY_SHARE = 0.4  # of the prompt's room, what the history keeps when tool results compete


def tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def message_tokens(messages: Sequence[dict[str, Any]]) -> int:
    total = 0
    for m in messages:
        total += MESSAGE_OVERHEAD + tokens(str(m.get("content") or ""))
        if m.get("tool_calls"):
            total += tokens(json.dumps(m["tool_calls"], ensure_ascii=False))
    return total


@dataclass
class Fitted:
    messages: list[dict[str, Any]]
    max_tokens: int
    trimmed: int  # earlier questions left out
    shortened: int  # tool results cut to fit
    prompt_tokens: int  # the estimate of what is sent


def fit(
    system: str,
    previous: Sequence[Any],
    question: str,
    exchange: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None,
    *,
    window: int,
    max_tokens: int,
    use_tools: bool = True,
    history_share: float = 1.0,
) -> Fitted:
    """The wire messages of one round, fitted into ``window`` tokens with room for an
    answer of up to ``max_tokens`` (shrunk to what is left, but not below MIN_ANSWER
    unless ``max_tokens`` itself is smaller).
    ``history_share`` < 1 gives the history less room (a retry after an overflow)."""
    head = [{"role": "system", "content": system}] if system else []
    ask = [{"role": "user", "content": question}]
    answer_room = min(max_tokens, max(MIN_ANSWER, window // 2))
    fixed = message_tokens(head + ask) + (tokens(json.dumps(list(tools), ensure_ascii=False)) if tools else 0)
    room = window - answer_room - fixed
    # the conversation so far keeps up to HISTORY_SHARE of the room while this turn's tool
    # results need it; whatever the results leave over goes to the history too
    first, _ = fit_history(
        previous, tools=use_tools, budget=int(max(0, room) * HISTORY_SHARE * CHARS_PER_TOKEN * history_share)
    )
    turn, shortened = _shorten_results(list(exchange), room - message_tokens(first))
    budget_chars = int(max(0, room - message_tokens(turn)) * CHARS_PER_TOKEN * history_share)
    past, trimmed = fit_history(previous, tools=use_tools, budget=budget_chars)
    messages = head + past + ask + turn
    used = message_tokens(messages) + (fixed - message_tokens(head + ask))
    answer = min(max_tokens, max(MIN_ANSWER, window - used))
    return Fitted(messages, answer, trimmed, shortened, used)


def _shorten_results(exchange: list[dict[str, Any]], room: int) -> tuple[list[dict[str, Any]], int]:
    """Cut this turn's tool results (newest kept longest) until the exchange fits ``room``."""
    shortened = 0
    results = [i for i, m in enumerate(exchange) if m.get("role") == "tool"]
    while message_tokens(exchange) > room and results:
        over = message_tokens(exchange) - room
        i = max(results, key=lambda j: len(str(exchange[j].get("content") or "")))
        content = str(exchange[i].get("content") or "")
        keep = max(TOOL_RESULT_FLOOR, len(content) - int(over * CHARS_PER_TOKEN) - 40)
        if keep >= len(content):
            break  # nothing more to gain from the results: the history gives way instead
        exchange[i] = {**exchange[i], "content": content[:keep] + " … [shortened to fit the model's context]"}
        shortened += 1
        if keep == TOOL_RESULT_FLOOR:
            results.remove(i)
    return exchange, shortened


def window_for(discovered: int | None, configured: int | None) -> int:
    """The context window to plan with: what the server says, else the setting, else 4,096."""
    for value in (discovered, configured):
        if value and value > 0:
            return int(value)
    return DEFAULT_WINDOW
