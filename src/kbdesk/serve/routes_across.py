"""What another desk needs to use this server's KBs as remote KBs: who the token is
(``GET /me``) and one search across several KBs (``POST /search``), each result with
the parts of its score so the desk can merge it with its own results (docs/REMOTES.md).

Nothing here reaches past the caller's permissions: every KB id goes through
:meth:`~kbdesk.serve.auth.Caller.kb` (404 for one this user cannot see, as everywhere),
and the search runs on the user's own desk."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from kbdesk import __version__
from kbdesk.filters import Filters
from kbdesk.remote.federation import local_ranking
from kbdesk.remote.ranking import ranked_to_wire, ranking_to_wire
from kbdesk.search import NeedsVectorsError
from kbdesk.serve.auth import Caller, caller
from kbdesk.serve.errors import ApiError
from kbdesk.serve.responses import Result, errors
from kbdesk.serve.routes_search import search_limiter
from kbdesk.serve.schemas import SearchRequest
from kbdesk.textsafe import inert_line

router = APIRouter(tags=["across knowledge bases"])
MAX_KBS = 50


class AcrossRequest(SearchRequest):
    kbs: list[str] = Field(min_length=1, max_length=MAX_KBS, description="The ids of the KBs to search.")


class Score(BaseModel):
    rank: int = Field(description="1-based, in this answer.")
    cosine: float | None = Field(description="Cosine of the chunk's vector and the query's (null: no vector).")
    keyword: float | None = Field(description="The keyword ranker's raw score (BM25, higher is better).")
    fused: float | None = Field(description="The fused score that ranked it (hybrid mode).")
    keyword_parts: dict[str, float] | None = Field(
        None, description="Its keyword score split by query word (their sum is `keyword`), for rescaling."
    )


class AcrossResult(Result):
    kb_id: str
    document_id: str | None
    chunk_index: int | None
    score: Score


class Model(BaseModel):
    model_id: str
    dimensions: int


class SearchedKb(BaseModel):
    id: str
    name: str
    model_id: str | None
    dimensions: int | None


class KeywordStats(BaseModel):
    rows: int = Field(description="The chunks the keyword ranker counted (BM25's N).")
    df: dict[str, int] = Field(description="Each query word's document frequency among them.")


class AcrossAnswer(BaseModel):
    data: list[AcrossResult]
    query: str
    total: int
    mode: str = Field(description="How the results were ranked: vector, keyword or hybrid.")
    fusion: str = Field(description="How hybrid mode fused the rankings: convex or rrf.")
    alpha: float = Field(description="The vector side's weight in convex fusion.")
    threshold: float
    best_keyword: float | None = Field(description="The best keyword score among the candidates.")
    models: list[Model] = Field(description="(model, dimensions) of the KBs searched that hold vectors.")
    keyword_stats: KeywordStats | None = Field(
        None, description="What the keyword scores were counted over: a client merging them with its own rescales them."
    )
    kbs: list[SearchedKb]
    keyword_fallback: list[str] | None = None
    notice: str | None = None
    notes: list[str] | None = None
    filters: dict[str, Any] | None = Field(None, description="The filters that applied (as sent, normalised).")


class TokenInfo(BaseModel):
    id: str
    prefix: str
    permissions: list[str]
    label: str


class SearchDefaults(BaseModel):
    mode: str
    fusion: str
    alpha: float
    threshold: float
    limit: int


class Me(BaseModel):
    user: dict[str, str] = Field(description="id and name of the user the token acts as.")
    token: TokenInfo
    server: dict[str, str] = Field(description="name, version, engine (sqlite or postgres).")
    search: SearchDefaults
    kb_count: int = Field(description="The knowledge bases this token may read.")


@router.get(
    "/me", summary="Who this token is, and this server's search defaults", response_model=Me, responses=errors()
)
def me(who: Caller = Depends(caller)) -> dict[str, Any]:
    desk = who.desk
    s = desk.config.search
    identity = who.identity
    return {
        "user": {
            "id": who.token.user_id,
            "name": identity.username if identity is not None else who.token.username,
        },
        "token": {
            "id": who.token.id,
            "prefix": who.token.prefix,
            "permissions": sorted(who.token.permissions),
            "label": who.token.label,
        },
        "server": {"name": "kbdesk", "version": __version__, "engine": desk.engine},
        "search": {"mode": s.mode, "fusion": s.fusion, "alpha": s.alpha, "threshold": s.threshold, "limit": s.limit},
        "kb_count": len(desk.list_kbs()),
    }


@router.post(
    "/search",
    summary="Search several knowledge bases at once, with the parts of each result's score",
    response_model=AcrossAnswer,
    response_model_exclude_none=False,
    responses=errors(404, 413, 502),
)
async def search_across(body: AcrossRequest, request: Request, who: Caller = Depends(caller)) -> dict[str, Any]:
    """The KBs' results in one ranking (as a search of those KBs from the desk gives),
    ``limit`` 5 by default (at most 20). Every result carries ``kb_id``, its document and
    chunk, and ``score``: its rank, cosine, keyword score and fused score; the answer says
    how it ranked (mode, fusion, alpha, threshold, the best keyword score, the models), so
    a client can merge it with results of its own (docs/REMOTES.md). An id this user
    cannot read is a 404, as for one KB."""
    if body.mode == "keyword" and body.threshold is not None:
        raise ApiError(400, "threshold applies to vector and hybrid search (keyword search has no cosine)")
    return await anyio.to_thread.run_sync(_search, who, body, limiter=search_limiter(request.app))


def _search(who: Caller, body: AcrossRequest) -> dict[str, Any]:
    kbs = {kb.id: kb for kb in (who.kb(kb_id) for kb_id in body.kbs)}
    desk = who.desk
    s = desk.config.search
    threshold = body.threshold if body.threshold is not None else s.threshold
    filters = Filters.from_dict(body.filters.model_dump(exclude_none=True)) if body.filters else Filters()
    try:
        response = desk.search(
            list(kbs),
            body.query,
            limit=body.limit,
            threshold=body.threshold,
            mode=body.mode,
            explain=True,
            filters=filters or None,
        )
    except NeedsVectorsError as exc:
        raise ApiError(400, f'{exc} ("mode": "keyword")') from None
    dims = {kb_id: desk.kb_vector_dimensions(kb_id) for kb_id in kbs}
    ranking = local_ranking(desk, list(kbs.values()), body.query, response, threshold=threshold)
    by_name = {kb.name: kb.id for kb in kbs.values()}
    out: dict[str, Any] = {
        "data": [{**ranked_to_wire(x), "kb_id": by_name.get(x.result.kb, "")} for x in ranking.ranked],
        "query": body.query,
        "total": len(ranking.ranked),
        **ranking_to_wire(ranking),
        "kbs": [
            {"id": kb.id, "name": kb.name, "model_id": kb.model_id, "dimensions": dims[kb.id]} for kb in kbs.values()
        ],
    }
    if filters:
        out["filters"] = filters.to_dict()
    if response.keyword_fallback:
        out["keyword_fallback"] = list(response.keyword_fallback)
        out["notice"] = response.notice
    if response.notes:
        out["notes"] = [inert_line(n) for n in response.notes]
    return out
