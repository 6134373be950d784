"""The HTTP interface: one ASGI app over a desk, every endpoint under ``/api``.

:func:`create_app` builds it (``kbdesk serve`` runs it with uvicorn; tests run it on
loopback or in process). The app owns the server's state — tokens, the desk of each
user, uploads in flight — and closes it when the server stops: uploads still running
get a grace period (:data:`STOP_GRACE`), and whatever they leave is resumed by the next start.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from kbdesk import __version__
from kbdesk.errors import KbdeskError
from kbdesk.serve.apidocs import add_doc_pages, openapi
from kbdesk.serve.errors import ApiError, error_response, from_kbdesk
from kbdesk.serve.limits import BodyLimit
from kbdesk.serve.uploads import Uploads, limit_arenas
from kbdesk.serve.users import REQUEST_THREADS, Desks, Lease
from kbdesk.store.tokens import Tokens

if TYPE_CHECKING:
    from kbdesk.desk import Desk

log = logging.getLogger("kbdesk.serve")
PREFIX = "/api"
STOP_GRACE = 2
"""Seconds a stopping server gives requests in flight, and then uploads being indexed
(what they leave is finished by the next start): a stop takes a couple of seconds,
whatever the requests are doing."""


@dataclass
class ServerState:
    tokens: Tokens
    desks: Desks
    uploads: Uploads
    max_upload_bytes: int
    url_sources: bool = False  # tokens may add web pages by URL (kbdesk serve --url-sources)
    url_hosts: frozenset[str] = frozenset()  # private-network hosts they may name (--url-host)


def create_app(
    desk: Desk,
    *,
    cors_origins: Sequence[str] = (),
    resume: bool = True,
    url_sources: bool = False,
    url_hosts: Sequence[str] = (),
) -> Any:
    """The ASGI app serving ``desk`` (its store, config and files). ``url_sources``: tokens
    may add web pages by URL; ``url_hosts``: the private-network hosts they may name."""
    max_upload = int(desk.config.storage.max_file_mb * 1024 * 1024)
    limit_arenas()  # memory that follows the load, not the number of uploads seen
    uploads = Uploads(desk.paths.cache_dir / "uploads")
    desks = Desks(desk, on_new=uploads.resume if resume else None)
    hosts = frozenset(h.lower().strip("[]") for h in url_hosts)
    state = ServerState(desk.tokens(), desks, uploads, max_upload, url_sources, hosts)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        uploads.clean()  # what a server killed mid-upload left staged
        if desks.multi_user:  # each request thread keeps a connection per user's store: few threads
            import anyio.to_thread

            anyio.to_thread.current_default_thread_limiter().total_tokens = REQUEST_THREADS
        if resume:
            uploads.resume(Lease(None, None, desk, None))
        yield
        uploads.stop(STOP_GRACE)
        desks.close()

    app = FastAPI(
        title="kbdesk",
        version=__version__,
        lifespan=lifespan,
        description="Knowledge bases over HTTP: create them, upload documents, poll their indexing, "
        "search by meaning and keyword. Every endpoint but this document and its pages needs "
        "`Authorization: Bearer <token>` (`kbdesk token create`; in the docs page: Authorize). "
        "Every refusal is `{error, message}` with its status.",
        openapi_url=f"{PREFIX}/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    app.state.kbdesk = state
    for router in routers():
        app.include_router(router, prefix=PREFIX)
    app.add_api_route(PREFIX, index, methods=["GET"], include_in_schema=False)
    add_doc_pages(app, PREFIX)
    app.openapi = lambda: openapi(app)  # type: ignore[method-assign]
    _handlers(app)
    if cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_credentials=False,
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    return Headers(BodyLimit(app, upload_bytes=max_upload))


def routers() -> list[Any]:
    """The API's routes, by subject (mounted under ``/api``; the route-table test walks them)."""
    import kbdesk.serve.routes_across as routes_across
    import kbdesk.serve.routes_channels as routes_channels
    import kbdesk.serve.routes_documents as routes_documents
    import kbdesk.serve.routes_kbs as routes_kbs
    import kbdesk.serve.routes_search as routes_search
    import kbdesk.serve.routes_web as routes_web

    subjects = (routes_kbs, routes_documents, routes_web, routes_search, routes_across, routes_channels)
    return [m.router for m in subjects]


def index(request: Request) -> dict[str, Any]:
    """What is here: a client's first look (no token needed, nothing private)."""
    spec = request.app.openapi()
    paths = [f"{method.upper()} {path}" for path, methods in spec.get("paths", {}).items() for method in methods]
    return {
        "name": "kbdesk",
        "version": __version__,
        "openapi": f"{PREFIX}/openapi.json",
        "docs": f"{PREFIX}/docs",
        "redoc": f"{PREFIX}/redoc",
        "auth": "Authorization: Bearer <token>",
        "endpoints": paths,
    }


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> Any:
        return error_response(exc.status, exc.message, exc.headers)

    @app.exception_handler(KbdeskError)
    async def kbdesk_error(_request: Request, exc: KbdeskError) -> Any:
        err = from_kbdesk(exc)
        return error_response(err.status, err.message, err.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> Any:
        return error_response(400, describe_invalid(exc.errors()))

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> Any:
        message = (
            exc.detail
            if isinstance(exc.detail, str) and exc.status_code == 413
            else {
                404: "no such endpoint (GET /api lists them)",
                405: "this endpoint does not take that method",
            }.get(exc.status_code, str(exc.detail))
        )
        return error_response(exc.status_code, message, getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def internal(_request: Request, exc: Exception) -> Any:
        log.error("internal error", exc_info=exc)
        return error_response(500, "internal error (the server's log has the details)")


_BRANCH = re.compile(r"^(str|int|float|bool|list\[str\]|function-\w+\[.*\])$")


def describe_invalid(errors: Sequence[Any]) -> str:
    """The first validation problem as one line: where, and what is wrong."""
    if not errors:
        return "the request is not valid"
    first = errors[0]
    kind = first.get("type", "")
    # a union's branch ("str", "list[str]") is no part of where the value is
    where = [str(part) for part in first.get("loc", ()) if part not in ("body",) and not _BRANCH.match(str(part))]
    if kind == "json_invalid":
        return "the body is not valid JSON"
    if kind == "extra_forbidden":
        return f"unknown field '{'.'.join(where)}'"
    if where == ["file"] and tuple(first.get("loc", ()))[:1] == ("body",):
        return "send the document as the multipart/form-data field 'file' (a file with its filename)"
    if kind == "missing":
        field = ".".join(where)
        return f"'{field}' is required" if field else "the request needs a JSON body"
    if kind in ("model_attributes_type", "dict_type") and not where:
        return "the body must be a JSON object"
    message = str(first.get("msg", "is not valid"))
    if "str" in [str(part) for part in first.get("loc", ())] and kind == "string_type":
        message = "Input should be a string or a list of strings"  # a union of both: the first branch's words
    return f"{'.'.join(where) or 'the body'}: {message[0].lower() + message[1:] if message else 'is not valid'}"


class Headers:
    """Headers every answer carries: not cached, not sniffed as another content type,
    and no server banner."""

    EXTRA: ClassVar[list[tuple[bytes, bytes]]] = [
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
    ]

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(event: dict[str, Any]) -> None:
            if event["type"] == "http.response.start":
                event = {**event, "headers": [*event.get("headers", []), *self.EXTRA]}
            await send(event)

        await self.app(scope, receive, with_headers)
