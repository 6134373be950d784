"""Request size limits, enforced while the body arrives (pure ASGI, before any parsing).

An upload may be as big as the largest document kbdesk accepts (``storage.max_file_mb``,
10 MB by default) plus room for the multipart envelope; every other request body is
small JSON. A declared ``Content-Length`` over the limit is refused before a byte is
read; a body that grows past it while streaming is refused when it does. Either way the
rest of the body is read and dropped (up to :data:`DRAIN_LIMIT`), so the client reads
a clean 413 instead of a connection reset halfway through its upload.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException

from kbdesk.serve.errors import error_body

MULTIPART_ROOM = 64 * 1024  # boundaries and part headers around the file
JSON_LIMIT = 1024 * 1024
DRAIN_LIMIT = 256 * 1024 * 1024  # beyond this the connection is simply closed


class BodyTooLarge(HTTPException):
    """Raised inside the app when a streamed body passes its limit (after the rest of
    the body was read and dropped); the app's handler answers 413."""

    def __init__(self, message: str) -> None:
        super().__init__(413, message)


class BodyLimit:
    """ASGI middleware: 413 for bodies over the limit of their kind."""

    def __init__(self, app: Any, *, upload_bytes: int, json_bytes: int = JSON_LIMIT) -> None:
        self.app = app
        self.upload_limit = upload_bytes + MULTIPART_ROOM
        self.upload_bytes = upload_bytes
        self.json_limit = json_bytes

    def _limit(self, scope: dict[str, Any]) -> tuple[int, str]:
        content_type = ""
        for key, value in scope.get("headers", []):
            if key == b"content-type":
                content_type = value.decode("latin-1").lower()
        if content_type.startswith("multipart/form-data"):
            return self.upload_limit, f"the file is over the {self.upload_bytes / 1048576:g} MB limit"
        return self.json_limit, f"the request body is over the {self.json_limit // 1024} KB limit"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, message = self._limit(scope)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _drain(receive)
            await _refuse(send, message)
            return
        seen = 0

        async def counted() -> dict[str, Any]:
            nonlocal seen
            event = await receive()
            if event["type"] == "http.request":
                seen += len(event.get("body", b""))
                if seen > limit:
                    if event.get("more_body", False):
                        await _drain(receive)
                    raise BodyTooLarge(message)
            return event

        await self.app(scope, counted, send)


def _content_length(scope: dict[str, Any]) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _drain(receive: Any) -> None:
    dropped = 0
    while dropped < DRAIN_LIMIT:
        event = await receive()
        if event["type"] != "http.request":
            return
        dropped += len(event.get("body", b""))
        if not event.get("more_body", False):
            return


async def _refuse(send: Any, message: str) -> None:
    body = json.dumps(error_body(413, message), separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
