"""The HTTP client of one remote: ``kbdesk serve``'s interface, read-only.

Every call is short and bounded: the connection must be accepted within
``connect_timeout`` (1 s) and the *whole* answer — connection, headers and body
together — come within ``budget`` (2 s) unless the caller asks for longer (``remote
test``) or gives a deadline of its own (a federated search: one deadline for listing the
remote's KBs and searching them). httpx's timeouts are per operation (each read), so a
server sending a byte every half second would never trip them: the calls run as
coroutines on one event loop of the process (a daemon thread, :class:`_Loop`), each under
``asyncio.timeout``, which cancels it — connection and all — when its time is up. No call
outlives its deadline, and no thread is left behind by a slow remote. TLS certificates are verified (against ``ca_file``
when one is named); plain http:// is refused for any host but this machine unless the
remote allows it (:func:`~kbdesk.remote.settings.check_url`). The token travels only in
the ``Authorization`` header and every message built from an answer is masked
(:class:`~kbdesk.providers.secrets.Redactor`), so it never reaches an error, a log
line or the screen. Errors are one line naming the remote.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import ssl
import threading
import time
from typing import Any

import httpx

from kbdesk.providers.errors import (
    ProviderAuthError,
    ProviderConfigError,
    ProviderRequestError,
    ProviderUnavailableError,
)
from kbdesk.providers.secrets import Redactor
from kbdesk.remote.settings import RemoteSettings, check_url, resolve_token

MAX_ANSWER = 16_000_000
"""Bytes of one answer read at most (a search's answer is tens of KB)."""
CANCEL_GRACE = 1.0
"""Seconds a caller waits past a call's deadline for the call to end itself (it always
does: this only guards against an event loop that stopped)."""


class _Loop:
    """The process's one event loop for remote calls, in a daemon thread started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            alive = self._thread is not None and self._thread.is_alive()
            if self._loop is None or not alive or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, daemon=True, name="kbdesk-remotes")
                thread.start()
                self._loop, self._thread, self._pid = loop, thread, os.getpid()
            return self._loop


_LOOP = _Loop()


class RemoteUnavailableError(ProviderUnavailableError):
    """The remote cannot be reached, did not answer in time, or failed (5xx, not kbdesk)."""


class RemoteAuthError(ProviderAuthError):
    """The remote refused the token (401) or the token lacks a permission (403)."""


class RemoteRequestError(ProviderRequestError):
    """The remote refused the request itself (400, 404): the KB is gone, a bad value."""


class RemoteConfigError(ProviderConfigError):
    """The remote cannot be asked as set up (no token, a CA file that cannot be read)."""


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RemoteClient:
    """Calls to one remote (thread-safe: every call runs on the one loop)."""

    def __init__(self, name: str, settings: RemoteSettings, *, timeout: float | None = None) -> None:
        self.name = name
        self.settings = settings
        self.url = check_url(settings.url, allow_http=settings.allow_http)
        self._token = resolve_token(settings)
        self.redact = Redactor.of([self._token])
        self.timeout = timeout if timeout is not None else settings.budget
        self._verify: Any = None
        self._http: httpx.AsyncClient | None = None  # used on the loop's thread only

    def _check_setup(self) -> Any:
        """What TLS verifies against; a missing token or an unreadable CA file is one line."""
        if self._verify is None:
            if not self._token:
                where = f"${self.settings.token_env} is not set" if self.settings.token_env else "none is stored"
                raise RemoteConfigError(
                    f"remote '{self.name}' has no token ({where}): kbdesk remote add {self.name} URL --token-env VAR",
                    provider=self.name,
                )
            verify: Any = True
            if self.settings.ca_file:
                try:
                    verify = ssl.create_default_context(cafile=self.settings.ca_file)
                except (OSError, ssl.SSLError) as exc:
                    raise RemoteConfigError(
                        f"remote '{self.name}': cannot read the CA file {self.settings.ca_file}: "
                        f"{getattr(exc, 'strerror', None) or exc}",
                        provider=self.name,
                    ) from None
            self._verify = verify
        return self._verify

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                base_url=self.url,
                headers={"Authorization": f"Bearer {self._token}", "Accept": "application/json"},
                timeout=httpx.Timeout(self.timeout, connect=min(self.settings.connect_timeout, self.timeout)),
                verify=self._check_setup(),
                follow_redirects=False,
            )
        return self._http

    def close(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            with contextlib.suppress(Exception):  # closing what is gone anyway
                asyncio.run_coroutine_threadsafe(http.aclose(), _LOOP.get()).result(CANCEL_GRACE)

    # ── the calls ──────────────────────────────────────────────────────────────
    def me(self) -> dict[str, Any]:
        """Who the token is on the server (``GET /me``)."""
        return self._call("GET", "/me")

    def list_kbs(self, *, deadline: float | None = None) -> list[Any]:
        """The KB objects this token may read, as sent (``deadline``: a ``time.monotonic()``
        to end by; :meth:`~kbdesk.remote.registry.RemoteKb.from_wire` reads each one)."""
        body = self._call("GET", "/knowledge-bases", deadline=deadline)
        data = body.get("data")
        if not isinstance(data, list):
            raise self._malformed("its knowledge base list has no data")
        return data

    def search(self, kb_ids: list[str], query: str, *, deadline: float | None = None, **options: Any) -> dict[str, Any]:
        """``POST /search``: several KBs in one ranking, with the parts of each score."""
        payload = {"kbs": kb_ids, "query": query, **{k: v for k, v in options.items() if v is not None}}
        body = self._call("POST", "/search", payload, deadline=deadline)
        if not isinstance(body.get("data"), list):
            raise self._malformed("its search answer has no data")
        return body

    # ── one request, its errors worded ─────────────────────────────────────────
    def _call(
        self, method: str, path: str, payload: dict[str, Any] | None = None, *, deadline: float | None = None
    ) -> dict[str, Any]:
        """One request, all of it within ``self.timeout`` seconds (or until ``deadline``)."""
        self._check_setup()
        where = f"remote '{self.name}' ({self.url})"
        limit = self.timeout if deadline is None else min(self.timeout, deadline - time.monotonic())
        if limit <= 0:
            raise RemoteUnavailableError(f"{where} was not asked: the search's time was spent", provider=self.name)
        future = asyncio.run_coroutine_threadsafe(self._attempt(method, path, payload, limit), _LOOP.get())
        try:
            answer = future.result(limit + CANCEL_GRACE)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RemoteUnavailableError(f"{where} did not answer within {limit:.2g} s", provider=self.name) from None
        status = answer.status_code
        if status >= 400:
            said = self._said(answer)
            if status == 401:
                raise RemoteAuthError(
                    f"{where} refused the token ({said or 'unauthorized'}): set a valid one with "
                    f"kbdesk remote add {self.name} {self.url} --token-env VAR",
                    provider=self.name,
                    status=status,
                )
            if status == 403:
                raise RemoteAuthError(f"{where} refused: {said or 'forbidden'}", provider=self.name, status=status)
            if status >= 500 or status in (408, 429):
                raise RemoteUnavailableError(
                    f"{where} failed ({status}{': ' + said if said else ''})", provider=self.name, status=status
                )
            if status == 404 and not said:
                raise RemoteRequestError(
                    f"{where} has no {path} endpoint: is the URL the server's /api root?", provider=self.name
                )
            raise RemoteRequestError(f"{where}: {said or status}", provider=self.name, status=status)
        try:
            body = answer.json()
        except ValueError:
            raise self._malformed("its answer is not JSON") from None
        if not isinstance(body, dict):
            raise self._malformed("its answer is not a JSON object")
        return body

    async def _attempt(self, method: str, path: str, payload: Any, limit: float) -> httpx.Response:
        """The request on the loop, cancelled (connection closed) when ``limit`` seconds are spent."""
        where = f"remote '{self.name}' ({self.url})"
        try:
            async with asyncio.timeout(limit):
                return await self._request(self._client(), method, path, payload)
        except TimeoutError:
            raise RemoteUnavailableError(f"{where} did not answer within {limit:.2g} s", provider=self.name) from None
        except httpx.TimeoutException as exc:
            what = "accept the connection" if isinstance(exc, httpx.ConnectTimeout) else "answer"
            most = self.settings.connect_timeout if isinstance(exc, httpx.ConnectTimeout) else limit
            raise RemoteUnavailableError(f"{where} did not {what} within {most:.2g} s", provider=self.name) from None
        except httpx.TransportError as exc:
            raise RemoteUnavailableError(f"{where} is unreachable: {self._why(exc)}", provider=self.name) from None

    async def _request(self, client: httpx.AsyncClient, method: str, path: str, payload: Any) -> httpx.Response:
        """The answer, read up to :data:`MAX_ANSWER` bytes (a server that sends more is not kbdesk's)."""
        async with client.stream(method, path, json=payload) as answer:
            body = bytearray()
            async for piece in answer.aiter_bytes():
                body += piece
                if len(body) > MAX_ANSWER:
                    raise self._malformed(f"its answer is over {MAX_ANSWER // 1_000_000} MB")
        return httpx.Response(answer.status_code, headers=answer.headers, content=bytes(body), request=answer.request)

    def _said(self, answer: httpx.Response) -> str:
        try:
            body = answer.json()
        except ValueError:
            return ""
        message = body.get("message") if isinstance(body, dict) else None
        return self.redact(_one_line(message)) if isinstance(message, str) else ""

    def _why(self, exc: BaseException) -> str:
        text = str(exc) or type(exc).__name__
        if "CERTIFICATE_VERIFY_FAILED" in text or isinstance(exc.__context__, ssl.SSLCertVerificationError):
            return "its TLS certificate could not be verified (name the CA that signed it with --ca-file)"
        if "Connection refused" in text or "ECONNREFUSED" in text or "[Errno 111]" in text:
            return "connection refused (is kbdesk serve running there?)"
        return self.redact(_one_line(text, 120))

    def _malformed(self, what: str) -> RemoteUnavailableError:
        return RemoteUnavailableError(
            f"remote '{self.name}' ({self.url}) does not answer as kbdesk serve does: {what}", provider=self.name
        )
