"""What one search ranked, and why — and one list out of several.

Each side of a federated search (the local desk, each remote) answers with its best
results *and* the parts of their scores: the cosine, the raw keyword (BM25) score and
the fused score, plus the best keyword score of its candidate pool. Two rules merge
them:

- **by score**, when the scores mean the same on every side: the same mode (vector or
  hybrid), the same threshold, convex fusion with the same weight, and every KB that
  was searched embeds with one model and dimension count. Vector mode merges by cosine;
  hybrid mode fuses again — ``alpha · cosine + (1 − alpha) · BM25 / best BM25`` — with
  the best BM25 over *all* sides (each side normalised by its own best, which would make
  a side with weak keyword matches look stronger), and the threshold floor is applied
  again. That is the score one KB holding every side's chunks would give.
- **by rank** (reciprocal rank fusion, ``1 / (60 + rank)``) otherwise: different models'
  cosines or RRF scores cannot be compared, ranks can.

BM25 over different collections is put on one scale first: each side also says what its
keyword scores are made of — its collection's size, each query word's document frequency,
each result's score split by word (:class:`~kbdesk.store.keywords.KeywordParts`) — and
every result's keyword score is recomputed with each word's IDF over the union of the
sides' collections (:func:`~kbdesk.store.keywords.rescore`), the score one KB holding
every side would give. So keyword mode merges by score too (the keyword floor, 5% of the
best, applied again), and hybrid mode fuses the rescaled scores over the best of all sides
(a side's best keyword score rescaled by the median factor of its results'). A side that
sends no parts (an older server) leaves keyword mode merged by rank, and hybrid mode
fusing each side's own BM25.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.models import SearchResult
from kbdesk.store.keywords import KeywordParts, rescore

RRF_K = 60
BY_SCORE = "score"
BY_RANK = "rank"


@dataclass
class Ranked:
    result: SearchResult
    rank: int  # 1-based, in its own side's list
    cosine: float | None = None
    keyword: float | None = None  # raw BM25: higher is better
    fused: float | None = None  # what ranked it on its own side (hybrid)
    keyword_parts: dict[str, float] | None = None  # its BM25 split by query word (KeywordParts)


@dataclass
class Ranking:
    """One side's answer and how it was ranked (``leg``: "" for the local desk, else the remote)."""

    leg: str
    ranked: list[Ranked]
    mode: str
    fusion: str
    alpha: float
    threshold: float
    best_keyword: float | None = None
    models: list[tuple[str, int]] = field(default_factory=list)
    """(model id, dimensions) of every KB searched that holds vectors."""
    keyword_rows: int | None = None
    """The size of the collection its BM25 counted (N), when it says what its scores are made of."""
    keyword_df: dict[str, int] = field(default_factory=dict)
    """Each query word's document frequency in that collection."""


def ranking_of(
    response: Any,
    *,
    fusion: str,
    alpha: float,
    threshold: float,
    models: Sequence[tuple[str, int]],
    leg: str = "",
    parts: KeywordParts | None = None,
) -> Ranking:
    """A :class:`Ranking` from a :class:`~kbdesk.search.SearchResponse` made with
    ``explain=True``; ``parts``: what its results' keyword scores are made of."""
    explain = response.explain or []
    found = {(e.get("document_id"), e.get("chunk_index")): e for e in explain if e.get("cut") is None}
    best = max((float(e["keyword_score"]) for e in explain if e.get("keyword_score") is not None), default=None)
    ranked = []
    for rank, result in enumerate(response.results, start=1):
        key = (result.document_id, result.chunk_index)
        e = found.get(key, {})
        split = parts.parts.get(key) if parts is not None and e.get("keyword_score") is not None else None
        ranked.append(Ranked(result, rank, e.get("cosine"), e.get("keyword_score"), e.get("fused"), split))
    ranking = Ranking(leg, ranked, response.mode, fusion, alpha, threshold, best, sorted(set(models)))
    if parts is not None and parts.rows:
        ranking.keyword_rows, ranking.keyword_df = parts.rows, dict(parts.df)
    return ranking


def one_scale(sides: Sequence[Ranking]) -> dict[int, tuple[float | None, float | None]] | None:
    """Every side's keyword scores (and best keyword score) recomputed over the union of
    the sides' collections: ``{id(ranked): (keyword, None)}`` plus ``{id(side): (None,
    best)}``; None when a side does not say what its scores are made of."""
    if len(sides) < 2 or any(s.keyword_rows is None for s in sides):
        return None
    rows = sum(s.keyword_rows or 0 for s in sides)
    df: dict[str, int] = {}
    for s in sides:
        for word, n in s.keyword_df.items():
            df[word] = df.get(word, 0) + n
    out: dict[int, tuple[float | None, float | None]] = {}
    for s in sides:
        ratios = []
        for x in s.ranked:
            if x.keyword is None:
                continue
            if x.keyword_parts is None:
                return None  # a keyword score without its parts: not comparable
            new = rescore(x.keyword_parts, s.keyword_rows or 0, s.keyword_df, rows, df)
            out[id(x)] = (new, None)
            if x.keyword > 0:
                ratios.append(new / x.keyword)
        ratios.sort()
        factor = ratios[len(ratios) // 2] if ratios else 1.0
        out[id(s)] = (None, s.best_keyword * factor if s.best_keyword else None)
    return out


def comparable(rankings: Sequence[Ranking]) -> bool:
    """Whether the sides' scores mean the same (see the module docstring)."""
    sides = [r for r in rankings if r.ranked]
    if len(sides) < 2:
        return True
    first = sides[0]
    if first.mode == "keyword":
        return all(s.mode == "keyword" for s in sides) and one_scale(sides) is not None
    if first.mode not in ("vector", "hybrid") or len(first.models) != 1:
        return False
    for side in sides:
        if (side.mode, side.threshold, side.models) != (first.mode, first.threshold, first.models):
            return False
        if side.mode == "hybrid" and (side.fusion != "convex" or first.fusion != "convex" or side.alpha != first.alpha):
            return False
        if any(r.cosine is None for r in side.ranked):
            return False
    return True


def merge(rankings: Sequence[Ranking], limit: int) -> tuple[list[SearchResult], str]:
    """The best ``limit`` results of all sides, and the rule used (:data:`BY_SCORE` or :data:`BY_RANK`)."""
    scored, rule = merge_scored(rankings, limit)
    return [x.result for _, x in scored], rule


KEYWORD_FLOOR = 0.05  # as kbdesk.search's: hits under 5% of the best matched only ubiquitous words


def merge_scored(rankings: Sequence[Ranking], limit: int) -> tuple[list[tuple[float | None, Ranked]], str]:
    """:func:`merge` with each result's merged score and parts (for the retrieval debugger)."""
    sides = [r for r in rankings if r.ranked]
    if len(sides) <= 1:
        return ([(x.fused, x) for x in sides[0].ranked[:limit]] if sides else []), BY_SCORE
    keyed: list[tuple[float, int, int, Ranked]] = []
    if comparable(sides):
        rule = BY_SCORE
        mode = sides[0].mode
        alpha, threshold = sides[0].alpha, sides[0].threshold
        # keyword and hybrid: BM25 rescaled to one collection (each side's own when a side does
        # not say what its scores are made of), over the best of all sides
        scale = (one_scale(sides) or {}) if mode in ("keyword", "hybrid") else {}

        def keyword_of(x: Ranked) -> float:
            return scale.get(id(x), (x.keyword, None))[0] or 0.0

        bests = [scale.get(id(s), (None, s.best_keyword))[1] for s in sides]
        best = max((b for b in bests if b), default=None)
        if mode == "keyword":  # BM25 on one scale; the keyword floor again, over every side
            top = max((keyword_of(x) for s in sides for x in s.ranked), default=0.0)
            keyed = [
                (keyword_of(x), order, x.rank, x)
                for order, side in enumerate(sides)
                for x in side.ranked
                if keyword_of(x) >= KEYWORD_FLOOR * top
            ]
            keyed.sort(key=lambda k: (-k[0], k[1], k[2]))
            return [(k[0], k[3]) for k in keyed[:limit]], rule
        for order, side in enumerate(sides):
            for x in side.ranked:
                cosine = x.cosine or 0.0
                if mode == "vector":
                    score = cosine
                else:
                    keyword = keyword_of(x) / best if best else 0.0
                    score = alpha * max(cosine, 0.0) + (1.0 - alpha) * keyword
                    if score < alpha * threshold:
                        continue  # under the floor once every side's keyword scores are counted
                keyed.append((score, order, x.rank, x))
    else:
        rule = BY_RANK
        for order, side in enumerate(sides):
            for x in side.ranked:
                keyed.append((1.0 / (RRF_K + x.rank), order, x.rank, x))
    keyed.sort(key=lambda k: (-k[0], -k[3].result.similarity, k[1], k[2]))
    return [(k[0], k[3]) for k in keyed[:limit]], rule


def explain_entry(score: float | None, x: Ranked) -> dict[str, Any]:
    """A merged result as a row of the retrieval debugger (``--explain``, the TUI's search)."""
    r = x.result
    return {
        "similarity": r.similarity,
        "score_kind": r.metadata.get("score_kind", "cosine"),
        "cosine": x.cosine,
        "vector_rank": None,
        "keyword_rank": None,
        "keyword_score": x.keyword,
        "fused": None if score is None else round(score, 6),
        "cut": None,
        "content": r.content,
        "source": r.source,
        "kb": r.kb,
        "metadata": dict(r.metadata),
        "document_id": r.document_id,
        "chunk_index": r.chunk_index,
    }


# ── on the wire (POST /api/search answers these parts; the client reads them back) ──
def ranked_to_wire(x: Ranked) -> dict[str, Any]:
    return {
        **x.result.to_dict(),
        "document_id": x.result.document_id,
        "chunk_index": x.result.chunk_index,
        "score": {
            "rank": x.rank,
            "cosine": x.cosine,
            "keyword": x.keyword,
            "fused": x.fused,
            "keyword_parts": x.keyword_parts,
        },
    }


def ranking_to_wire(ranking: Ranking) -> dict[str, Any]:
    return {
        "mode": ranking.mode,
        "fusion": ranking.fusion,
        "alpha": ranking.alpha,
        "threshold": ranking.threshold,
        "best_keyword": ranking.best_keyword,
        "models": [{"model_id": m, "dimensions": d} for m, d in ranking.models],
        "keyword_stats": None
        if ranking.keyword_rows is None
        else {"rows": ranking.keyword_rows, "df": dict(ranking.keyword_df)},
    }
