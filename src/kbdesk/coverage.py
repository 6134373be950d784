"""Keyword coverage: the score of a chunk without a vector.

The share of the query's words (stopwords out) that a chunk holds, compared in
:func:`kbdesk.textnorm.fold` form with a light English suffix strip. It depends on the
query and the chunk only, so it does not move when other chunks or KBs change
(:mod:`kbdesk.search` gives it as ``similarity`` with ``score_kind`` "keyword coverage").
"""

from __future__ import annotations

import re

from kbdesk.store.cjk import keyword_text, query_pieces
from kbdesk.store.keywords import STOPWORDS
from kbdesk.textnorm import fold

_WORD = re.compile(r"\w+")
_SUFFIXES = (
    ("ingly", ""),
    ("edly", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ed", ""),
    ("es", ""),
    ("ly", ""),
    ("s", ""),
)


def _light_stem(word: str) -> str:
    """``word`` without one common English inflection and a final "e", kept at three
    letters or more ("freezing", "freezes" and "freeze" → "freez"; "queries" → "query")."""
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def _stems(text: str) -> set[str]:
    # CJK runs count by their characters and pairs, as the keyword index holds them
    return {_light_stem(w) for w in _WORD.findall(fold(keyword_text(text) or text))}


def coverage(query: str, text: str) -> float:
    """The share of the query's distinct words (stopwords out, unless that leaves
    nothing) found in ``text``, both folded and lightly stemmed: 0 to 1."""
    words = list(dict.fromkeys(_light_stem(p) for w in _WORD.findall(fold(query)) for p in query_pieces(w)))
    content = [w for w in words if w not in STOPWORDS] or words
    if not content:
        return 0.0
    held = _stems(text)
    return sum(w in held for w in content) / len(content)
