"""Grounding a turn: the searches kbdesk makes with the user's own question.

Under the ``auto`` and ``always`` policies a turn with searchable KBs is answered from
passages kbdesk found for the question itself, whatever query a weak model writes
(SmolLM2 was seen searching for ``$search_term``, ``","`` and made-up SQL file names).
:func:`grounding_queries` says what kbdesk searches with:

* a first question: the question;
* a follow-up: the follow-up made standalone by a rule that needs no model — the
  previous question's content words (stopwords out) joined to it — and the follow-up
  as asked. "And what support does it include?" after "How much does the Team plan
  cost?" searches ``And what support does it include? much team plan cost`` and the
  question itself, interleaved (:func:`merge`), the standalone form first. On
  PostgreSQL's documentation the answering page was among the 5 passages for 16 of 20
  follow-ups (13 with the question alone), and a second question on a new subject kept
  its page 18 times in 20 (13 with the joined form alone: it drags the old topic in).
  bench/bench_followups.py measures the rules (docs/CHAT.md, "How follow-ups are
  searched").

:func:`merge` interleaves several rankings best-first (the question's first), without
repeating a chunk; a model's own ``kb_search`` results are merged the same way, after
the question's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kbdesk.store.keywords import STOPWORDS

FOLLOW_UP_WORDS = 12
"""At most this many content words of the previous question are joined to a follow-up."""
_WORD = re.compile(r"\w+", re.UNICODE)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry meaning (stopwords and one-letter words out), once each."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text or ""):
        low = word.lower()
        if len(word) > 1 and low not in STOPWORDS and low not in seen:
            seen[low] = None
    return list(seen)


def usable(query: Any) -> bool:
    """A query that can find something: a string with at least one word character."""
    return isinstance(query, str) and bool(_WORD.search(query))


def previous_question(messages: Sequence[Any]) -> str | None:
    """The last question asked before this one in the saved conversation."""
    for message in reversed(messages):
        if getattr(message, "role", None) == "user" and usable(getattr(message, "content", None)):
            return str(message.content)
    return None


def standalone(question: str, previous: str | None) -> str | None:
    """The follow-up made standalone: its words and the previous question's content
    words it lacks; None when there is no previous question or nothing to add."""
    if not previous:
        return None
    have = set(content_words(question))
    extra = [w for w in content_words(previous) if w not in have][:FOLLOW_UP_WORDS]
    if not extra:
        return None
    return f"{question.strip()} {' '.join(extra)}"


def grounding_queries(question: str, messages: Sequence[Any]) -> list[str]:
    """What kbdesk searches with for this turn: the question, and for a follow-up the
    question made standalone (module docstring)."""
    queries = [question.strip()] if usable(question) else []
    joined = standalone(question, previous_question(messages))
    if joined and joined not in queries:
        queries.insert(0, joined)
    return queries


def merge(rankings: Sequence[Sequence[Any]], limit: int | None = None) -> list[Any]:
    """Interleave ``rankings`` (lists of search results, best first): the first of each,
    then the second of each, … without repeating a chunk; at most ``limit``."""
    out: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    depth = max((len(r) for r in rankings), default=0)
    for i in range(depth):
        for ranking in rankings:
            if i < len(ranking):
                item = ranking[i]
                key = _key(item)
                if key not in seen:
                    seen.add(key)
                    out.append(item)
    return out if limit is None else out[:limit]


def _key(item: Any) -> tuple[Any, ...]:
    return (item.document_id, item.chunk_index, item.kb, item.source)


__all__ = [
    "FOLLOW_UP_WORDS",
    "content_words",
    "grounding_queries",
    "merge",
    "previous_question",
    "standalone",
    "usable",
]
