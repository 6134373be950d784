"""The heading path as a field of its own in keyword ranking: a chunk whose heading is
what was asked for comes first.

BM25 reads a chunk as one bag of stemmed words split at every ``_``: asked for
``want_bytes``, a test ``test_want_bytes`` that calls it twice in six lines outscores the
function's own longer chunk; asked for ``loads``, ``load`` is the same word; asked for
"Security", a section "Payment System Security" is as good a match as "Security" and a
short child section beats its parent. People navigate code, papers and notes by those
names, so both engines' keyword candidates get a second field beside BM25 — the
chunk's heading path (``metadata["headings"]``: a definition's class and name, a
section's titles) compared with the query as written, identifiers whole:

- the last heading equal to the query, as written: 3;
- equal ignoring case and spacing: 2 (the class ``Signer`` before the fixture
  ``signer``);
- the query naming the path (identifiers whole, case-folded, stopwords out): each of
  its words in the path and each word of the last heading in the query — the share of
  the path's words the query names (at most 1), so "Parser parse" finds
  ``Parser › parse`` and "Serializer loads" ``Serializer › loads``;
- otherwise 0: a question that mentions a name among other words ("how is want_bytes
  used") is BM25's alone (the defining chunk holds the name in its first line), and a
  section "Results" gains nothing from "the results of the trial".

A candidate's keyword score becomes its BM25 + match × the best BM25 among the
candidates: the tiers are a whole best BM25 apart, so a chunk whose heading is the query
outranks every chunk whose heading is not (and an exact name its case-folded twin),
chunks of equal match keep their BM25 order, and text without headings (prose, e-mail,
SciFact's abstracts) ranks exactly as before. The field is read from the chunks'
metadata for BM25's own candidates (its top ``HEADING_POOL``, or ``k`` if more: a
defining chunk holds its name, in the heading line its text begins with) and for the
chunks whose last heading is the query, found through an index of last headings on both
engines (SQLite step 17, Postgres step 19) however far down BM25 ranks them. Scores
given for single chunks outside that list (:meth:`~kbdesk.store.api.Store.keyword_scores`)
and the parts a federated search rescales stay BM25 alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from kbdesk.store.keywords import STOPWORDS

_WORD = re.compile(r"\w+", re.UNICODE)
EXACT = 3.0
FOLDED = 2.0
CONTAINED = 1.0


def _words(text: str) -> list[str]:
    """Identifiers and words, whole (``want_bytes`` is one), case-folded."""
    return [w.casefold() for w in _WORD.findall(text)]


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def heading_match(query: str, headings: Sequence[str]) -> float:
    """How far ``headings`` (a chunk's heading path, outermost first) is what ``query``
    asks for, in [0, 3] (module docstring)."""
    if not headings or not query.strip():
        return 0.0
    last = str(headings[-1]).strip()
    asked = query.strip()
    if not last:
        return 0.0
    if last == asked:
        return EXACT
    if _fold(last) == _fold(asked):
        return FOLDED
    wanted = {w for w in _words(asked) if w not in STOPWORDS} or set(_words(asked))
    own = {w for w in _words(last) if w not in STOPWORDS} or set(_words(last))
    path = {w for h in headings for w in _words(str(h)) if w not in STOPWORDS} | own
    if not own or not wanted or not own <= wanted or not wanted <= path:
        return 0.0
    return CONTAINED * len(wanted) / len(path)


def weigh_headings(
    query: str,
    hits: Sequence[tuple[int, float]],
    headings_of: Callable[[Sequence[int]], dict[int, list[str]]],
) -> list[tuple[int, float]]:
    """``hits`` (seq, BM25), best first, with each score raised by its heading match ×
    the best BM25 among them, in the new order (ties by seq, as the engines order).
    ``headings_of`` reads the heading paths of the seqs it is given (only chunks that
    have one need be in its answer)."""
    if not hits:
        return []
    found = headings_of([seq for seq, _ in hits])
    if not found:
        return list(hits)
    best = max(score for _, score in hits)
    scored = [(seq, score + heading_match(query, found.get(seq) or ()) * best) for seq, score in hits]
    return sorted(scored, key=lambda h: (-h[1], h[0]))


# the BM25 candidates whose headings are weighed: at least this many, whatever the k asked
# for (keyword search asks for as many as it shows: a definition 4th by BM25 must still
# reach the first place)
HEADING_POOL = 50
# chunks named by the query that BM25 left out of its top k, looked up by their last
# heading (an index on both engines) and added to the candidates, at most this many
MAX_NAMED = 100
MAX_NAME_CHARS = 200


def heading_key(query: str) -> str | None:
    """What the engines' heading index is searched for: the query as written, spaces
    collapsed (each engine lower-cases both sides); None for a query no heading is."""
    name = " ".join(query.split())
    return name if name and len(name) <= MAX_NAME_CHARS else None


def rank_with_headings(
    query: str,
    k: int,
    hits: Sequence[tuple[int, float]],
    named: Sequence[int],
    scores_of: Callable[[Sequence[int]], dict[int, float]],
    headings_of: Callable[[Sequence[int]], dict[int, list[str]]],
) -> list[tuple[int, float]]:
    """The top ``k`` of BM25's ``hits`` and the chunks ``named`` by the query (their
    last heading is it) that hold a query word, each scored BM25 (``scores_of``) plus
    its heading match (:func:`weigh_headings`). A named chunk holding none of the words
    (a section's later chunk that never repeats its title) is left out: it is no keyword
    match, and a result whose similarity reads 0 ranked above real matches misleads."""
    have = {seq for seq, _ in hits}
    extra = [seq for seq in named if seq not in have]
    if extra:
        found = scores_of(extra)
        hits = [*hits, *((seq, found[seq]) for seq in extra if seq in found)]
    return weigh_headings(query, hits, headings_of)[: max(int(k), 0)]


def headings_from(values: Iterable[tuple[int, object]]) -> dict[int, list[str]]:
    """(seq, the metadata's ``headings`` as the engine gives it: a JSON text or a list)
    as {seq: path} for the chunks that have a non-empty path."""
    import json

    out: dict[int, list[str]] = {}
    for seq, value in values:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        if isinstance(value, list) and value:
            out[int(seq)] = [str(h) for h in value]
    return out
