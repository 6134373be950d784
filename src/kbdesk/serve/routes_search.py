"""Searching a knowledge base, and rebuilding it."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from kbdesk.filters import Filters
from kbdesk.search import NeedsVectorsError
from kbdesk.serve.auth import WRITES, Caller, caller
from kbdesk.serve.errors import ApiError
from kbdesk.serve.responses import RebuildStarted, SearchAnswer, errors
from kbdesk.serve.schemas import SearchRequest
from kbdesk.textsafe import inert_line

log = logging.getLogger("kbdesk.serve")
router = APIRouter(tags=["search"])


SEARCH_THREADS = 4
"""Searches run at once, in threads of their own: a search waiting on a slow embedding
provider never holds a thread that other requests need (they queue among themselves)."""


def search_limiter(app: Any) -> anyio.CapacityLimiter:
    limiter = getattr(app.state, "search_limiter", None)
    if limiter is None:
        limiter = app.state.search_limiter = anyio.CapacityLimiter(SEARCH_THREADS)
    return limiter


@router.post(
    "/knowledge-bases/{kb_id}/search",
    summary="Search a knowledge base by meaning and keyword",
    response_model=SearchAnswer,
    response_model_exclude_none=True,
    responses=errors(404, 413, 502),
)
async def search(kb_id: str, body: SearchRequest, request: Request, who: Caller = Depends(caller)) -> dict[str, Any]:
    """Results are ``{content, source, kb, similarity, metadata}``, best first; ``limit``
    5 by default (at most 20); ``threshold`` (0.3) the minimum cosine in vector mode and a
    floor on the fused score in hybrid mode, refused in keyword mode.
    When the KB's embedding provider cannot embed the query (or failed a moment ago), the
    answer comes from keyword search alone: ``keyword_fallback`` names the KB, ``notice``
    and ``notes`` say why. Only ``mode: "vector"`` fails then (502).
    ``filters`` narrows the search to documents by path glob, file type, date and tags
    before ranking; the answer's ``filters`` says which applied."""
    if body.mode == "keyword" and body.threshold is not None:
        raise ApiError(400, "threshold applies to vector and hybrid search (keyword search has no cosine)")
    return await anyio.to_thread.run_sync(_search, who, kb_id, body, limiter=search_limiter(request.app))


def _search(who: Caller, kb_id: str, body: SearchRequest) -> dict[str, Any]:
    filters = Filters.from_dict(body.filters.model_dump(exclude_none=True)) if body.filters else Filters()
    kb = who.kb(kb_id)
    try:
        response = who.desk.search(
            [kb.id], body.query, limit=body.limit, threshold=body.threshold, mode=body.mode, filters=filters or None
        )
    except NeedsVectorsError as exc:
        raise ApiError(400, f'{exc} ("mode": "keyword")') from None
    out: dict[str, Any] = {
        "data": [r.to_dict() for r in response.results],
        "query": body.query,
        "total": len(response.results),
        "mode": response.mode,
    }
    if response.keyword_fallback:
        out["keyword_fallback"] = list(response.keyword_fallback)
        out["notice"] = response.notice
    if response.notes:
        out["notes"] = [inert_line(n) for n in response.notes]
    if filters:
        out["filters"] = filters.to_dict()
    return out


@router.post(
    "/knowledge-bases/{kb_id}/rebuild",
    status_code=202,
    summary="Re-chunk and re-embed every document (needs kb.write)",
    response_model=RebuildStarted,
    responses=errors(403, 404, 412),
)
def rebuild(kb_id: str, request: Request, who: Caller = WRITES) -> JSONResponse:
    """Documents whose extracted text is kept are rebuilt in the background; the rest
    (and those another run is indexing right now) are skipped and counted."""
    kb = who.kb(kb_id)
    who.check_can_change(kb)
    state = request.app.state.kbdesk
    if state.uploads.stopping:
        raise ApiError(503, "the server is shutting down", headers={"Retry-After": "5"})
    docs = who.desk.documents(kb.id)
    if not docs:
        raise ApiError(400, f"'{kb.name}' has no documents to rebuild")
    if kb.model_id:
        who.desk.embedders.for_kb(kb)  # no provider for its model: 412
    rebuilding = len(who.desk.rebuildable_documents(kb.id))  # what the run will take (as it decides)

    hold = who.lease.share()

    def run() -> None:
        counts, _report = hold.desk.ingestor().rebuild(kb.id)
        log.info("rebuilt %s: %s", kb.id, counts)

    state.uploads.background("rebuild", run, hold)
    return JSONResponse(
        {
            "message": "rebuild started",
            "total_docs": len(docs),
            "rebuilding": rebuilding,
            "skipped": len(docs) - rebuilding,
        },
        status_code=202,
    )
