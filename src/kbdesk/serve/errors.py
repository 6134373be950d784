"""One error shape for every refusal: ``{"error": CODE, "message": ONE LINE}``.

kbdesk's own errors are written for people, one line each; they become 4xx answers
with that line. Anything else is logged on the server with its traceback and answered
with a plain 500 that names nothing (no traceback, no path, no SQL). A store error
(the database is locked, gone, read-only) is a 503: the request may work later, and its
details — they can name the database file — stay in the server's log.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import JSONResponse

from kbdesk.errors import AccessDeniedError, ConflictError, InvalidInputError, KbdeskError, NotFoundError, StoreError
from kbdesk.textsafe import inert_line

log = logging.getLogger("kbdesk.serve")

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    412: "precondition_failed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    500: "internal_error",
    501: "not_implemented",
    502: "bad_gateway",
    503: "unavailable",
}
MAX_MESSAGE = 500


class ApiError(Exception):
    """A refusal with its status and one line for the client."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def error_body(status: int, message: str) -> dict[str, Any]:
    text = inert_line(str(message))
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    return {"error": CODES.get(status, "error"), "message": text}


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message), status_code=status, headers=headers)


def from_kbdesk(exc: KbdeskError) -> ApiError:
    """The HTTP answer to one of kbdesk's own errors."""
    from kbdesk.providers.errors import ProviderConfigError, ProviderError

    if isinstance(exc, AccessDeniedError):
        return ApiError(403, str(exc))
    if isinstance(exc, NotFoundError):
        return ApiError(404, str(exc))
    if isinstance(exc, ConflictError):
        return ApiError(409, str(exc))
    if isinstance(exc, InvalidInputError):
        return ApiError(400, str(exc))
    if isinstance(exc, ProviderConfigError):
        return ApiError(412, str(exc))
    if isinstance(exc, ProviderError):
        return ApiError(502, f"the embedding provider failed: {exc}")
    if isinstance(exc, StoreError):
        log.error("database error: %s", exc)
        return ApiError(503, "the database is not available right now (the server's log says why); try again")
    return ApiError(400, str(exc))
