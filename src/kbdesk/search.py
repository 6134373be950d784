"""Search: one function used by the CLI, the TUI, the chat tool and the library.

Semantics follow seed 000 §5 and seed 002: ``threshold`` 0.3 and ``limit`` 5 by
default, ``limit`` at most 20, several KBs at once, results shaped as
``{content, source, kb, similarity, metadata}``. Every result's metadata says what its
``similarity`` is in ``score_kind``:

- ``"cosine"`` — the cosine similarity of the chunk's vector and the query's;
- ``"keyword coverage"`` — for a chunk without a vector: the share of the query's
  words (stopwords out) that the chunk holds, compared in :func:`kbdesk.textnorm.fold`
  form with a light English suffix strip. It depends on the query and the chunk only,
  so it does not move when other chunks or KBs change.

Modes:

- ``vector``  — cosine similarity over the KBs' vectors, best first, at or above the
  threshold.
- ``keyword`` — FTS5 BM25 over chunk text, best first. The threshold does not apply
  (the CLI refuses ``--threshold`` here); hits under 5% of the best hit's BM25 matched
  only near-ubiquitous words and are dropped.
- ``hybrid``  — both rankings fused: by default a convex combination of the cosine and
  the BM25 score relative to the query's best (``alpha`` = 0.7 on the vector side),
  or reciprocal rank fusion (``fusion="rrf"``). **The threshold rule:** a candidate is
  kept when ``alpha · cosine + (1 − alpha) · BM25 / best BM25 ≥ alpha · threshold`` —
  when it scores at least what a match found by meaning alone, at exactly the
  threshold, would score. A chunk with no keyword support still needs its cosine to
  pass the threshold (weak vector-only matches are cut as before); keyword support
  lowers the cosine it needs, and a strong keyword match is never cut (BM25 at least
  ``alpha · threshold / (1 − alpha)`` of the best: 0.7 with the defaults, so the
  keyword #1 always stays). Since the rule is a floor on the
  convex score, what it keeps is a prefix of the threshold-off convex ranking: the
  defaults return the same top results as threshold −1, at most fewer. Chunks of KBs
  with no vectors take part through the keyword ranking alone.
  The candidates of each ranker and their fusion: :mod:`kbdesk.fusion`.
- ``auto``    — hybrid when a query vector exists for a KB holding vectors, else keyword.

Filters (:class:`kbdesk.filters.Filters`: path globs, file types, dates, tags) narrow a
search to documents *before* anything is ranked: the filter is resolved to the documents
of each KB it lets through (:mod:`kbdesk.store.core.facts`), and every candidate
generator — the exact scan, sqlite-vec, the quantised tier, FTS5, pgvector, Postgres
BM25 — looks only inside them. So a filtered search returns the best ``limit`` results
inside the filter whenever that many exist, never the few that happened to be in an
unfiltered top list.

Queries are NFKC-normalised (:func:`kbdesk.textnorm.nfkc`) as extracted text is, so a
ligature or a full-width letter in either matches its plain spelling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbdesk.coverage import coverage
from kbdesk.errors import InvalidInputError
from kbdesk.filters import Filters
from kbdesk.fusion import (
    CANDIDATES_PER_RESULT,
    DEFAULT_ALPHA,
    DEFAULT_FUSION,
    FUSIONS,
    KEYWORD_FLOOR,
    MIN_CANDIDATES,
    RRF_K,
    SCORE_COSINE,
    SCORE_COVERAGE,
    Candidate,
    coverage_scores,
    fill_cosines,
    hybrid,
    keyword_candidates,
    vector_candidates,
)
from kbdesk.models import KnowledgeBase, SearchResult
from kbdesk.store.api import Store
from kbdesk.store.unit_vectors import normalise
from kbdesk.textnorm import nfkc

# what other modules import from here (the ranking's own names live in kbdesk.fusion)
__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_FUSION",
    "DEFAULT_LIMIT",
    "DEFAULT_THRESHOLD",
    "FUSIONS",
    "KEYWORD_FLOOR",
    "MAX_LIMIT",
    "MODES",
    "RRF_K",
    "SCORE_COSINE",
    "SCORE_COVERAGE",
    "Candidate",
    "NeedsVectorsError",
    "SearchResponse",
    "check_limit",
    "check_threshold",
    "coverage",
    "rank",
    "search",
]

DEFAULT_LIMIT = 5
MAX_LIMIT = 20
DEFAULT_THRESHOLD = 0.3
MODES = ("auto", "vector", "keyword", "hybrid")


class NeedsVectorsError(InvalidInputError):
    """Vector or hybrid search was asked of KBs with no vectors for this query; each face
    says how to search by keyword instead (a CLI flag, a TUI control, an HTTP field)."""


@dataclass
class SearchResponse:
    """What kb_search answers: ``results``, ``query``, ``searched_kbs`` (+ the mode used)."""

    results: list[SearchResult]
    query: str
    searched_kbs: list[str]
    mode: str
    notes: list[str] = field(default_factory=list)
    explain: list[dict[str, Any]] | None = None
    keyword_fallback: list[str] = field(default_factory=list)
    """KBs searched by keyword only because the query could not be embedded for them."""
    filters: Filters | None = None
    """The filter the search was narrowed by (None: none)."""

    @property
    def notice(self) -> str | None:
        """One line for the user when the search fell back to keyword search, else None."""
        if not self.keyword_fallback:
            return None
        names = ", ".join(self.keyword_fallback)
        return f"keyword search only in {names}: the query could not be embedded"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "results": [r.to_dict() for r in self.results],
            "query": self.query,
            "searched_kbs": list(self.searched_kbs),
            "mode": self.mode,
        }
        if self.keyword_fallback:
            out["keyword_fallback"] = list(self.keyword_fallback)
            out["notice"] = self.notice
        if self.notes:
            out["notes"] = list(self.notes)
        if self.filters:
            out["filters"] = self.filters.to_dict()
        return out


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


def _query_vectors(kbs: Sequence[KnowledgeBase], store: Store, query_vector: Any) -> dict[str, tuple[int, np.ndarray]]:
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


def search(
    store: Store,
    kbs: Sequence[KnowledgeBase],
    query: str,
    query_vector: Any = None,
    *,
    limit: int | None = None,
    threshold: float | None = None,
    mode: str = "auto",
    explain: bool = False,
    fusion: str = DEFAULT_FUSION,
    alpha: float = DEFAULT_ALPHA,
    filters: Filters | None = None,
) -> SearchResponse:
    """Search ``kbs`` for ``query``, inside ``filters`` when given (applied before ranking).

    ``query_vector`` is the query embedded with the KBs' model: one vector for all, or a
    mapping ``{kb_id: vector}`` when the KBs use different models. With ``explain`` the
    response also lists every candidate either ranker found — kept or cut, and why — in
    ``response.explain`` (the retrieval debugger). ``fusion`` picks how hybrid mode
    combines the rankings: "convex" (a weighted sum of normalised scores, ``alpha`` the
    weight of the vector side) or "rrf" (reciprocal rank fusion).
    """
    limit = check_limit(limit)
    mode, order, names = _rank(
        store,
        kbs,
        query,
        query_vector,
        limit=limit,
        threshold=threshold,
        mode=mode,
        depth=None if explain else limit,
        fusion=fusion,
        alpha=alpha,
        filters=filters,
    )
    chosen = [c for c in order if c.cut is None]
    rows = store.result_rows([c.seq for c in (order if explain else chosen)])
    for c in order if explain else chosen:
        if c.seq in rows:
            rows[c.seq]["metadata"]["score_kind"] = c.score_kind
    results = [
        SearchResult(
            rows[c.seq]["content"],
            rows[c.seq]["source"],
            rows[c.seq]["kb"],
            round(float(c.similarity), 6),
            rows[c.seq]["metadata"],
            document_id=rows[c.seq]["document_id"],
            chunk_index=rows[c.seq]["chunk_index"],
        )
        for c in chosen
        if c.seq in rows
    ]  # a chunk deleted meanwhile is skipped
    response = SearchResponse(results, (query or "").strip(), names, mode, filters=filters or None)
    if filters and not order:
        within = store.filter_documents([kb.id for kb in kbs], filters)
        if any(within.documents(kb.id) for kb in kbs):  # documents pass the filter: no words matched
            response.notes.append(f"no passage matched in the documents within {filters.describe()}")
        else:
            response.notes.append(f"no document matches the filter ({filters.describe()})")
    if explain:
        response.explain = [c.to_dict(rows.get(c.seq)) for c in order if c.seq in rows]
    return response


def rank(
    store: Store,
    kbs: Sequence[KnowledgeBase],
    query: str,
    query_vector: Any = None,
    *,
    depth: int,
    threshold: float | None = None,
    mode: str = "auto",
    fusion: str = DEFAULT_FUSION,
    alpha: float = DEFAULT_ALPHA,
    filters: Filters | None = None,
) -> list[tuple[Candidate, dict[str, Any]]]:
    """The first ``depth`` results with their rows, past the user-facing limit of 20.

    For evaluation (recall@100) and debugging; user-facing callers use :func:`search`.
    """
    _, order, _ = _rank(
        store,
        kbs,
        query,
        query_vector,
        limit=depth,
        threshold=threshold,
        mode=mode,
        depth=depth,
        fusion=fusion,
        alpha=alpha,
        filters=filters,
    )
    chosen = [c for c in order if c.cut is None]
    rows = store.result_rows([c.seq for c in chosen])
    return [(c, rows[c.seq]) for c in chosen if c.seq in rows]


def _rank(
    store: Store,
    kbs: Sequence[KnowledgeBase],
    query: str,
    query_vector: Any,
    *,
    limit: int,
    threshold: float | None,
    mode: str,
    depth: int | None,
    fusion: str,
    alpha: float,
    filters: Filters | None = None,
) -> tuple[str, list[Candidate], list[str]]:
    """Validate, rank every candidate, mark what is cut; ``depth`` None means the full pool."""
    threshold = check_threshold(threshold)
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if fusion not in FUSIONS:
        raise InvalidInputError(f"fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    if not kbs:
        raise InvalidInputError("search needs at least one knowledge base")
    query = nfkc((query or "").strip())
    if not query and query_vector is None:
        raise InvalidInputError("the query is empty")
    names = [kb.name for kb in kbs]
    qvecs = _query_vectors(kbs, store, query_vector)
    if mode == "auto":
        mode = "hybrid" if qvecs else "keyword"
    if mode in ("vector", "hybrid") and not qvecs:
        raise NeedsVectorsError(
            f"{mode} search needs vectors: none of {', '.join(repr(n) for n in names)} holds vectors "
            "for this query (no embedding model or no query vector); search by keyword instead"
        )
    if filters is not None and not isinstance(filters, Filters):
        raise InvalidInputError("filters must be a kbdesk.filters.Filters (Filters.from_dict reads the JSON form)")
    pool = max(limit * CANDIDATES_PER_RESULT, MIN_CANDIDATES)
    kb_ids = [kb.id for kb in kbs]
    within = store.filter_documents(kb_ids, filters) if filters else None

    if mode == "vector":
        candidates = vector_candidates(store, qvecs, depth or pool, within)
        for c in candidates:
            c.similarity = c.cosine or 0.0
            if c.cosine is not None and c.cosine < threshold:
                c.cut = "threshold"
        order = candidates
    elif mode == "keyword":
        candidates = keyword_candidates(store, kb_ids, query, depth or pool, within)
        fill_cosines(store, candidates, qvecs)
        best = candidates[0].keyword_score if candidates and candidates[0].keyword_score else 1.0
        for c in candidates:
            if (c.keyword_score or 0.0) < KEYWORD_FLOOR * best:
                c.cut = "keyword floor"
            elif c.cosine is not None:
                c.similarity = c.cosine
        coverage_scores(
            store,
            [c for c in candidates if c.cut is None and c.cosine is None],
            query,
            None if depth is None else limit,
        )
        order = candidates
    else:
        order = hybrid(store, kb_ids, query, qvecs, threshold, pool, fusion, alpha, within)
        coverage_scores(
            store, [c for c in order if c.cut is None and c.cosine is None], query, None if depth is None else limit
        )
    kept = 0
    for c in order:
        if c.cut is None:
            if kept < limit:
                kept += 1
            else:
                c.cut = "limit"
    return mode, order, names
