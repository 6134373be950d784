"""How a search ranks: each ranker's candidates, and how hybrid mode fuses them.

:mod:`kbdesk.search` validates a search and marks what is cut; this module finds the
candidates — the vector side's (cosine, per KB, merged) and the keyword side's (BM25,
higher is better) — and fuses them for hybrid mode:

- **convex** (the default): ``alpha · cosine + (1 − alpha) · BM25 / best BM25``, each side
  on [0, 1] (:func:`convex`), ``alpha`` = 0.7 on the vector side;
- **rrf**: reciprocal rank fusion, ``1 / (60 + rank)`` summed over the rankers, ranks
  counted among the candidates that pass the threshold.

The threshold rule (a candidate is kept when its convex score is at least
``alpha · threshold``) is explained in :mod:`kbdesk.search` and docs/SEARCH.md.

**Keyword credit** (:data:`KEYWORD_CREDIT`): the keyword ranker returns its best
``pool`` chunks; a chunk the vector side found further down the keyword ranking still
gets its own BM25 (:meth:`~kbdesk.store.api.Store.keyword_scores`, the same score the
keyword ranking would give it) instead of fusing as if it held none of the query's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kbdesk.coverage import coverage
from kbdesk.store.api import Store

RRF_K = 60
FUSIONS = ("convex", "rrf")
# Tuned on SciFact's training queries with all-MiniLM-L6-v2 (bench/eval_beir.py --tune):
# nDCG@10 0.740 against 0.719 for RRF, 0.699 keyword-only and 0.682 vector-only.
DEFAULT_FUSION = "convex"
DEFAULT_ALPHA = 0.7  # weight of the vector side in convex fusion
CANDIDATES_PER_RESULT = 5
MIN_CANDIDATES = 50
# keyword hits scoring under this share of the best hit matched only words found almost
# everywhere (BM25 gives those next to nothing): noise, not results
KEYWORD_FLOOR = 0.05
# Hybrid: a candidate found by the vector side only (past the keyword pool) gets its own
# BM25 rather than 0 — it may well hold the query's words (docs/SEARCH.md). On SciFact train
# at the defaults: nDCG@10 0.7333 against 0.7289, hit@5 0.7973 against 0.7886, for about a
# quarter of the keyword ranking's time (docs/BENCHMARKS.md, bench/eval_keyword_credit.py)
KEYWORD_CREDIT = True
SCORE_COSINE = "cosine"
SCORE_COVERAGE = "keyword coverage"


@dataclass
class Candidate:
    """One chunk considered by a search, and what each ranker made of it."""

    seq: int
    cosine: float | None = None
    vector_rank: int | None = None  # 1-based, over the KBs' merged vector ranking
    keyword_score: float | None = None  # BM25, higher is better
    keyword_rank: int | None = None  # 1-based
    fused: float | None = None  # reciprocal rank fusion score (hybrid)
    similarity: float = 0.0  # what the result reports
    score_kind: str = SCORE_COSINE  # what ``similarity`` is
    cut: str | None = None  # why it is not a result: "threshold", "keyword floor", "limit", …
    kb_id: str | None = None

    def to_dict(self, row: dict[str, Any] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "similarity": round(self.similarity, 6),
            "score_kind": self.score_kind,
            "cosine": None if self.cosine is None else round(self.cosine, 6),
            "vector_rank": self.vector_rank,
            "keyword_rank": self.keyword_rank,
            "keyword_score": None if self.keyword_score is None else round(self.keyword_score, 6),
            "fused": None if self.fused is None else round(self.fused, 6),
            "cut": self.cut,
        }
        if row:
            out.update(
                {
                    "content": row["content"],
                    "source": row["source"],
                    "kb": row["kb"],
                    "metadata": row["metadata"],
                    "document_id": row["document_id"],
                    "chunk_index": row["chunk_index"],
                }
            )
        return out


def vector_candidates(
    store: Store, qvecs: dict[str, tuple[int, np.ndarray]], k: int, within: Any = None
) -> list[Candidate]:
    merged: list[Candidate] = []
    for kb_id, (dims, q) in qvecs.items():
        if within is None:
            found = store.vector_candidates(kb_id, dims, q, k)
        elif within.empty(kb_id):
            continue
        else:
            found = store.vector_candidates(kb_id, dims, q, k, within=within)
        merged.extend(Candidate(seq, cosine=sim, kb_id=kb_id) for seq, sim in found)
    merged.sort(key=lambda c: (-(c.cosine or 0.0), c.seq))
    for rank, c in enumerate(merged, start=1):
        c.vector_rank = rank
    return merged


def keyword_candidates(store: Store, kb_ids: list[str], query: str, k: int, within: Any = None) -> list[Candidate]:
    if within is None:
        hits = store.keyword_candidates(kb_ids, query, k)
    else:
        kb_ids = [kb_id for kb_id in kb_ids if not within.empty(kb_id)]
        hits = store.keyword_candidates(kb_ids, query, k, within=within) if kb_ids else []
    return [Candidate(seq, keyword_score=score, keyword_rank=rank) for rank, (seq, score) in enumerate(hits, 1)]


def fill_cosines(store: Store, candidates: list[Candidate], qvecs: dict[str, tuple[int, np.ndarray]]) -> None:
    """Cosine of each candidate against its own KB's query vector, where it has one."""
    need = [c for c in candidates if c.cosine is None]
    if not need or not qvecs:
        return
    kb_of = store.chunk_kbs([c.seq for c in need])
    by_kb: dict[str, list[Candidate]] = {}
    for c in need:
        c.kb_id = kb_of.get(c.seq)
        if c.kb_id in qvecs:
            by_kb.setdefault(c.kb_id, []).append(c)
    for kb_id, members in by_kb.items():
        cos = store.cosine_for([c.seq for c in members], qvecs[kb_id][1])
        for c in members:
            c.cosine = cos.get(c.seq)


def hybrid(
    store: Store,
    kb_ids: list[str],
    query: str,
    qvecs: dict[str, tuple[int, np.ndarray]],
    threshold: float,
    pool: int,
    fusion: str,
    alpha: float,
    within: Any = None,
) -> list[Candidate]:
    """Fuse the two rankings; keep what passes the threshold rule (module docstring)."""
    table: dict[int, Candidate] = {c.seq: c for c in vector_candidates(store, qvecs, pool, within)}
    keyword = keyword_candidates(store, kb_ids, query, pool, within)
    for k in keyword:
        if k.seq in table:
            table[k.seq].keyword_score, table[k.seq].keyword_rank = k.keyword_score, k.keyword_rank
        else:
            table[k.seq] = k
    candidates = list(table.values())
    fill_cosines(store, candidates, qvecs)
    if KEYWORD_CREDIT and keyword:  # the vector side's finds get their BM25 too, not 0 past the keyword pool
        missing = [c.seq for c in candidates if c.keyword_score is None]
        for seq, score in (store.keyword_scores(kb_ids, query, missing) if missing else {}).items():
            table[seq].keyword_score = score
    best_kw = keyword[0].keyword_score if keyword and keyword[0].keyword_score else 1.0
    convex(candidates, best_kw, alpha)
    floor = alpha * threshold
    for c in candidates:
        if c.cosine is not None:
            c.similarity = c.cosine
            if (c.fused or 0.0) < floor:
                c.cut = "threshold"
        elif c.kb_id in qvecs:
            c.cut = "no vector"  # a chunk of a vector KB without one: not comparable
        # else: a chunk of a keyword-only KB, kept; its score is its keyword coverage
    if fusion == "rrf":
        survivors = [c for c in candidates if c.cut is None]
        fused = dict.fromkeys((c.seq for c in candidates), 0.0)
        # ranks count among the candidates that survive the threshold
        by_vector = sorted((c.vector_rank, c.seq) for c in survivors if c.vector_rank is not None)
        by_keyword = sorted((c.keyword_rank, c.seq) for c in survivors if c.keyword_rank is not None)
        for order in (by_vector, by_keyword):
            for rank, (_, seq) in enumerate(order, start=1):
                fused[seq] += 1.0 / (RRF_K + rank)
        for c in candidates:
            c.fused = fused[c.seq]
    return sorted(candidates, key=lambda c: (c.cut is not None, -(c.fused or 0.0), -c.similarity, c.seq))


def convex(candidates: list[Candidate], best_kw: float, alpha: float) -> None:
    """alpha · cosine + (1 - alpha) · BM25 / best BM25, each side on [0, 1].

    Both sides are normalised by their theoretical range rather than the candidates'
    own spread: cosine is clipped to [0, 1]; BM25 runs from 0 (no matching term, also
    what a chunk the keyword ranker did not return gets) to the query's best score. On
    SciFact's training queries this ties min-max scaling and, unlike it, stays sane with
    two or three candidates (docs/BENCHMARKS.md, "Retrieval quality").
    """
    for c in candidates:
        vector_part = max(c.cosine, 0.0) if c.cosine is not None else 0.0
        keyword_part = (c.keyword_score or 0.0) / best_kw if best_kw > 0 else 0.0
        c.fused = alpha * vector_part + (1.0 - alpha) * keyword_part


def coverage_scores(store: Store, candidates: list[Candidate], query: str, limit: int | None) -> None:
    """Give chunks without a vector their keyword coverage as ``similarity`` (the first
    ``limit`` of them when given: only results need a score)."""
    chosen = candidates[:limit] if limit is not None else candidates
    rows = store.result_rows([c.seq for c in chosen]) if chosen else {}
    for c in candidates:
        c.score_kind = SCORE_COVERAGE
        row = rows.get(c.seq)
        c.similarity = coverage(query, row["content"]) if row else 0.0
