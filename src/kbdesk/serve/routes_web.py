"""Adding a web page by its URL over HTTP — only where the server's admin allows it.

``kbdesk serve`` fetches nothing for a token unless started with ``--url-sources``; then
a caller with ``kb.write`` may add a page (and its links to ``depth`` 3) to a KB it can
change. The server fetches within the limits of ``kbdesk add`` (robots.txt, size, time,
redirects, 200 pages a request) and never from a private-network address unless the
admin named that host (``--url-host``): a token holder cannot make the server read its
own loopback or the cloud's metadata address. The request is answered at once (202); the
pages become documents named by their URLs, whose status the documents list shows.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from kbdesk.serve.auth import WRITES, Caller
from kbdesk.serve.errors import ApiError
from kbdesk.serve.responses import errors
from kbdesk.serve.schemas import Body
from kbdesk.web.urls import MAX_URL, UrlRefused, check, check_address

router = APIRouter(tags=["documents"])
MAX_DEPTH = 3
MAX_PAGES = 200


class UrlAdd(Body):
    url: str = Field(min_length=1, max_length=MAX_URL, description="An http or https URL.")
    depth: int = Field(0, ge=0, le=MAX_DEPTH, description="Follow links on the same site this many steps.")


class UrlAccepted(BaseModel):
    url: str = Field(description="The URL as it will be fetched (and the source of its document).")
    accepted: bool


@router.post(
    "/knowledge-bases/{kb_id}/documents/from-url",
    status_code=202,
    summary="Add a web page by its URL (needs kb.write, and a server whose admin allows it)",
    response_model=UrlAccepted,
    responses=errors(403, 404),
)
def add_url(kb_id: str, body: UrlAdd, request: Request, who: Caller = WRITES) -> dict[str, Any]:
    state = request.app.state.kbdesk
    kb = who.kb(kb_id)
    who.check_can_change(kb)
    if not state.url_sources:
        raise ApiError(403, "this server does not fetch web pages (its admin can allow it: kbdesk serve --url-sources)")
    try:
        url = check(body.url)
        check_address(url, state.url_hosts)
    except UrlRefused as exc:
        raise ApiError(400, str(exc)) from None
    hold = who.lease.share()

    def run() -> None:
        from kbdesk.ingest.pipeline import IngestReport
        from kbdesk.web.crawl import WebLimits
        from kbdesk.web.source import add_urls

        limits = WebLimits(depth=body.depth, max_pages=MAX_PAGES)
        add_urls(hold.desk.ingestor(), kb.id, [url], IngestReport(), limits=limits, private_hosts=state.url_hosts)

    state.uploads.background("web", run, hold)
    return {"url": url, "accepted": True}
