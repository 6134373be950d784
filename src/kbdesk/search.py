"""Search: one function used by the CLI, the TUI, the chat tool and the library.

Semantics follow seed 000 §5 and seed 002: cosine similarity, ``threshold`` 0.3 and
``limit`` 5 by default, ``limit`` at most 20, several KBs at once, results shaped as
``{content, source, kb, similarity, metadata}``.

Modes:

- ``vector``  — cosine similarity over the KBs' vectors, best first, at or above the
  threshold.
- ``keyword`` — FTS5 BM25 over chunk text. The threshold does not apply (there is no
  cosine to compare); ``similarity`` is the chunk's cosine when it has a vector and a
  query vector was given, else its BM25 score relative to the best hit (1.0); hits
  under 5% of the best matched only near-ubiquitous words and are dropped.
- ``hybrid``  — both rankings fused by reciprocal rank fusion. The threshold stays a
  cosine floor: a keyword hit whose vector is below it is dropped. Chunks of KBs with no
  vectors take part through the keyword ranking alone.
- ``auto``    — hybrid when a query vector exists for a KB holding vectors, else keyword.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbdesk.errors import InvalidInputError
from kbdesk.models import KnowledgeBase, SearchResult
from kbdesk.store.vectors import normalise

DEFAULT_LIMIT = 5
MAX_LIMIT = 20
DEFAULT_THRESHOLD = 0.3
MODES = ("auto", "vector", "keyword", "hybrid")
RRF_K = 60
CANDIDATES_PER_RESULT = 5
MIN_CANDIDATES = 50
# keyword hits scoring under this share of the best hit matched only words found almost
# everywhere (BM25 gives those next to nothing): noise, not results
KEYWORD_FLOOR = 0.05


@dataclass
class SearchResponse:
    """The seed's tool result: ``results``, ``query``, ``searched_kbs`` (+ the mode used)."""

    results: list[SearchResult]
    query: str
    searched_kbs: list[str]
    mode: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "results": [r.to_dict() for r in self.results],
            "query": self.query,
            "searched_kbs": list(self.searched_kbs),
            "mode": self.mode,
        }


def check_limit(limit: int | None) -> int:
    if limit is None:
        return DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)):
        raise InvalidInputError("limit must be a whole number")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    return int(limit)


def check_threshold(threshold: float | None) -> float:
    if threshold is None:
        return DEFAULT_THRESHOLD
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise InvalidInputError("threshold must be a number") from None
    if not -1.0 <= value <= 1.0 or value != value:
        raise InvalidInputError(f"threshold must be between -1 and 1, got {threshold}")
    return value


def _query_vectors(kbs: Sequence[KnowledgeBase], store: Any, query_vector: Any) -> dict[str, tuple[int, np.ndarray]]:
    """(dimensions, unit query) for each KB that holds vectors and has a query vector."""
    out: dict[str, tuple[int, np.ndarray]] = {}
    if query_vector is None:
        return out
    for kb in kbs:
        dims = store.kb_vector_dimensions(kb.id)
        if dims is None:
            continue
        if isinstance(query_vector, Mapping):
            raw = query_vector.get(kb.id)
            if raw is None:
                continue
        else:
            raw = query_vector
        out[kb.id] = (dims, normalise(raw, dims, what=f"query vector for '{kb.name}'"))
    return out


def search(store: Any, kbs: Sequence[KnowledgeBase], query: str, query_vector: Any = None, *,
           limit: int | None = None, threshold: float | None = None, mode: str = "auto") -> SearchResponse:
    """Search ``kbs`` for ``query``.

    ``query_vector`` is the query embedded with the KBs' model: one vector for all, or a
    mapping ``{kb_id: vector}`` when the KBs use different models.
    """
    limit = check_limit(limit)
    threshold = check_threshold(threshold)
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not kbs:
        raise InvalidInputError("search needs at least one knowledge base")
    query = (query or "").strip()
    if not query and query_vector is None:
        raise InvalidInputError("the query is empty")
    names = [kb.name for kb in kbs]
    qvecs = _query_vectors(kbs, store, query_vector)
    if mode == "auto":
        mode = "hybrid" if qvecs else "keyword"
    if mode in ("vector", "hybrid") and not qvecs:
        raise InvalidInputError(
            f"{mode} search needs vectors: none of {', '.join(repr(n) for n in names)} holds vectors "
            "for this query (no embedding model or no query vector); use --mode keyword")
    pool = max(limit * CANDIDATES_PER_RESULT, MIN_CANDIDATES)

    if mode == "vector":
        ranked = _vector_ranking(store, qvecs, limit, threshold)
        scored = [(seq, sim) for seq, sim in ranked[:limit]]
    elif mode == "keyword":
        scored = _keyword_scored(store, kbs, query, qvecs, limit)
    else:
        scored = _hybrid(store, kbs, query, qvecs, limit, threshold, pool)
    return SearchResponse(_results(store, scored), query, names, mode)


def _vector_ranking(store: Any, qvecs: dict[str, tuple[int, np.ndarray]], k: int,
                    threshold: float) -> list[tuple[int, float]]:
    merged: list[tuple[int, float]] = []
    for kb_id, (dims, q) in qvecs.items():
        merged.extend((seq, sim) for seq, sim in store.vector_candidates(kb_id, dims, q, k) if sim >= threshold)
    merged.sort(key=lambda p: (-p[1], p[0]))
    return merged


def _cosines(store: Any, seqs: list[int], qvecs: dict[str, tuple[int, np.ndarray]],
             kb_of: dict[int, str]) -> dict[int, float]:
    """Cosine of each chunk against its own KB's query vector."""
    by_kb: dict[str, list[int]] = {}
    for seq in seqs:
        kb_id = kb_of.get(seq)
        if kb_id in qvecs:
            by_kb.setdefault(kb_id, []).append(seq)
    out: dict[int, float] = {}
    for kb_id, members in by_kb.items():
        out.update(store.cosine_for(members, qvecs[kb_id][1]))
    return out


def _keyword_scored(store: Any, kbs: Sequence[KnowledgeBase], query: str,
                    qvecs: dict[str, tuple[int, np.ndarray]], limit: int) -> list[tuple[int, float]]:
    hits = store.keyword_candidates([kb.id for kb in kbs], query, limit)
    if not hits:
        return []
    seqs = [seq for seq, _ in hits]
    kb_of = {seq: row["kb_id"] for seq, row in store.result_rows(seqs).items()}
    cos = _cosines(store, seqs, qvecs, kb_of)
    best = hits[0][1] or 1.0
    return [(seq, cos.get(seq, score / best)) for seq, score in hits if score >= KEYWORD_FLOOR * best]


def _hybrid(store: Any, kbs: Sequence[KnowledgeBase], query: str, qvecs: dict[str, tuple[int, np.ndarray]],
            limit: int, threshold: float, pool: int) -> list[tuple[int, float]]:
    vector = _vector_ranking(store, qvecs, pool, threshold)[:pool]
    keyword = store.keyword_candidates([kb.id for kb in kbs], query, pool)
    sims = dict(vector)
    missing = [seq for seq, _ in keyword if seq not in sims]
    kb_of = {seq: row["kb_id"] for seq, row in store.result_rows(missing).items()}
    sims.update(_cosines(store, missing, qvecs, kb_of))
    best_kw = keyword[0][1] if keyword and keyword[0][1] > 0 else 1.0

    fused: dict[int, float] = {}
    for rank, (seq, _) in enumerate(vector):
        fused[seq] = fused.get(seq, 0.0) + 1.0 / (RRF_K + rank + 1)
    for rank, (seq, score) in enumerate(keyword):
        if seq in sims:
            if sims[seq] < threshold:
                continue  # the threshold is a cosine floor in hybrid mode too
        elif kb_of.get(seq) in qvecs:
            continue  # a chunk of a vector KB without a vector: not comparable
        else:
            sims[seq] = score / best_kw  # a chunk of a keyword-only KB
        fused[seq] = fused.get(seq, 0.0) + 1.0 / (RRF_K + rank + 1)
    order = sorted(fused, key=lambda s: (-fused[s], -sims.get(s, 0.0), s))
    return [(seq, sims[seq]) for seq in order[:limit]]


def _results(store: Any, scored: list[tuple[int, float]]) -> list[SearchResult]:
    rows = store.result_rows([seq for seq, _ in scored])
    out = []
    for seq, sim in scored:
        row = rows.get(seq)
        if row is None:  # deleted between the ranking and this read
            continue
        out.append(SearchResult(row["content"], row["source"], row["kb"], round(float(sim), 6), row["metadata"]))
    return out
