"""Request size limits, enforced while the body arrives (pure ASGI, before any parsing).

An upload may be as big as the largest document kbdesk accepts (``storage.max_file_mb``,
10 MB by default) plus room for the multipart envelope; every other request body is
small JSON. The limit holds whatever the transfer encoding: a declared
``Content-Length`` over the limit is refused before a byte is read, and a body that
grows past it (chunked, or lying about its length) is refused the moment it does — the
server reads at most the limit and one piece more of it. Either way the answer is a
413 in the one error shape with ``Connection: close``: the rest of the body is never
read (a 1 GB upload is refused within a second, not after the gigabyte), and the
connection goes once the answer is out (after a short linger that lets a client still
sending see the answer rather than a reset).
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.exceptions import HTTPException

from kbdesk.serve.errors import error_body

MULTIPART_ROOM = 64 * 1024  # boundaries and part headers around the file
JSON_LIMIT = 1024 * 1024
LINGER_SECONDS = 0.5  # after a 413, how long the rest of the body is read and dropped, at most…
LINGER_BYTES = 4 * 1024 * 1024  # … and how much of it


class BodyTooLarge(HTTPException):
    """Raised inside the app when a streamed body passes its limit; the app's handler
    answers 413 (and :class:`BodyLimit` closes the connection after it)."""

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
            await _refuse(send, message)
            await _linger(receive)
            return
        seen = 0
        over = False

        async def counted() -> dict[str, Any]:
            nonlocal seen, over
            event = await receive()
            if event["type"] == "http.request":
                seen += len(event.get("body", b""))
                if seen > limit:
                    over = True
                    raise BodyTooLarge(message)
            return event

        async def closing(event: dict[str, Any]) -> None:
            if over and event["type"] == "http.response.start":  # the rest of the body is never read
                headers = [(k, v) for k, v in event.get("headers", []) if k.lower() != b"connection"]
                event = {**event, "headers": [*headers, (b"connection", b"close")]}
            await send(event)

        await self.app(scope, counted, closing)
        if over:
            await _linger(receive)


def _content_length(scope: dict[str, Any]) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _linger(receive: Any) -> None:
    """After a 413: read and drop a little more of the body, briefly, so a client still
    sending reads the answer before the connection closes (never the whole body)."""
    import anyio

    dropped, deadline = 0, time.monotonic() + LINGER_SECONDS
    with anyio.move_on_after(LINGER_SECONDS):
        while dropped < LINGER_BYTES and time.monotonic() < deadline:
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
