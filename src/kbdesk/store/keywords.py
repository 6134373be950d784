"""What both engines' keyword search reads from a query: its terms (stopwords out, CJK
words as their pairs of characters) and the budget that bounds a query whose terms match
too many rows. The SQLite store turns the terms into an FTS5 expression
(:mod:`kbdesk.store.sqlite.lookup`), the Postgres store into its BM25 query
(:mod:`kbdesk.store.postgres.keyword`); the same rule, so both rank alike."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.store.cjk import query_pieces

_TOKEN = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 64
# English function words: in an OR query they match nearly every chunk (and BM25 gives
# them almost nothing), so they cost time without changing the ranking. They are kept
# when the query has nothing else.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    ]
)


# A query whose terms match more rows than its engine's budget is bounded (:func:`bounds`);
# terms matching more rows than this many budgets on their own leave the score as well
SCORED_TERM_BUDGETS = 4


def query_terms(text: str) -> list[str]:
    """The words :func:`fts_query` OR-s together, in order."""
    seen: list[str] = []
    for word in _TOKEN.findall(text.lower()):
        for token in query_pieces(word):  # a CJK word: its pairs of characters (kbdesk.store.cjk)
            if token not in seen:
                seen.append(token)
        if len(seen) >= MAX_QUERY_TERMS:
            seen = seen[:MAX_QUERY_TERMS]
            break
    return [t for t in seen if t not in STOPWORDS] or seen


def bounds(terms: Sequence[str], counts: Sequence[int], budget: int) -> tuple[list[int], list[int]]:
    """(gate, scored) as positions in ``terms``, given the rows each term matches.

    When the counts add up past ``budget``, rows must hold one of the rarest terms (the
    rarest always; then the next rarest while the sum stays within the budget) and
    terms matching more than ``SCORED_TERM_BUDGETS`` budgets leave the score. Both are
    every position otherwise. The same rule bounds a query on both engines.
    """
    every = list(range(len(terms)))
    if sum(counts) <= budget:
        return every, every
    first = {t: terms.index(t) for t in terms}
    gate: set[int] = set()
    spent = 0
    for i in sorted(every, key=lambda i: (counts[i], first[terms[i]])):
        if gate and spent + counts[i] > budget:
            break
        gate.add(i)
        spent += counts[i]
    return sorted(gate), [i for i in every if i in gate or counts[i] <= budget * SCORED_TERM_BUDGETS]


def mark_stale(metadata: dict[str, Any], stale: Any, indexed_at: Any) -> dict[str, Any]:
    """A chunk from an older version of its file than the newest seen (the newer one
    failed, or is being indexed) says so in its metadata, with when it was indexed."""
    if stale:
        metadata["stale"] = True
        metadata["indexed_at"] = (
            indexed_at if isinstance(indexed_at, str) or indexed_at is None else indexed_at.isoformat()
        )
    return metadata


IDF_FLOOR = 1e-6


def bm25_idf(rows: int, df: int) -> float:
    """FTS5's IDF (both engines use it): log((N - n + 0.5) / (n + 0.5)), floored at 1e-6."""
    value = math.log((rows - df + 0.5) / (df + 0.5)) if rows > 0 else 0.0
    return value if value > 0.0 else IDF_FLOOR


@dataclass
class KeywordParts:
    """What a keyword score is made of, so that scores from several collections (a desk
    and its remotes) can be put on one scale: the collection's size (``rows``: N) and each
    query word's document frequency (``df``) as its BM25 used them, and for each chunk —
    keyed by (document id, chunk index) — its BM25 split by query word (their sum is its
    score). :func:`rescore` turns the parts into the BM25 one collection holding every
    side would give."""

    rows: int = 0
    df: dict[str, int] = field(default_factory=dict)
    parts: dict[tuple[str, int], dict[str, float]] = field(default_factory=dict)


def rescore(parts: dict[str, float], rows: int, df: dict[str, int], total_rows: int, total_df: dict[str, int]) -> float:
    """A chunk's BM25 with every word's IDF taken over the union of the collections
    (``total_rows``, ``total_df``) instead of its own (``rows``, ``df``). Exact for the IDF;
    the length normalisation stays the chunk's own collection's (its mean length), which
    differs little between collections of one kind of text."""
    score = 0.0
    for word, part in parts.items():
        own = bm25_idf(rows, df.get(word, 0))
        score += part * bm25_idf(total_rows, total_df.get(word, 0)) / own if own > 0 else part
    return score
