"""HTTP to one OpenAI-compatible server: a request, its retries, and what a status means.

* A refused connection (nothing listens) or an unknown host fails at once, in one line.
* 429, 5xx, timeouts and dropped connections are retried with exponential backoff and
  jitter, honouring ``Retry-After``, at most ``max_retries`` times and within
  ``retry_budget`` seconds; then :class:`ProviderUnavailableError`.
* 401/403 raise :class:`ProviderAuthError` and 404 (or "model not found")
  :class:`ProviderNotFoundError` at once; other 4xx :class:`ProviderRequestError`.
* "Too large" on ``/embeddings`` (413, or a 400/500 saying so) raises :class:`TooLarge`
  for the caller to split the batch.

The API key is looked up for each request and kept nowhere. Credentials a hand-edited
base URL holds (``http://user:pass@host/v1``) are taken out of the URL and sent as Basic
auth, so the URL httpx logs has none; any server text that reaches a message or a log
line goes through a :class:`~kbdesk.providers.secrets.Redactor` first (the key, the
URL's password, ``user:pass`` and its base64, ``Basic``/``Bearer`` values).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import httpx

from kbdesk.providers.errors import (
    MalformedResponseError,
    ProviderAuthError,
    ProviderNotFoundError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderUnavailableError,
    who,
)
from kbdesk.providers.retry import backoff_delay, connect_problem, is_retryable_status, parse_retry_after
from kbdesk.providers.secrets import Redactor
from kbdesk.providers.settings import (
    ProviderSettings,
    display_url,
    key_env_for,
    resolve_api_key,
    url_credentials,
    without_credentials,
)
from kbdesk.providers.validate import error_message, html_page_hint, says_model_missing, says_too_large, v1_hint

log = logging.getLogger("kbdesk.providers")


class TooLarge(Exception):
    """The server rejected a batch as too large; the caller splits it. Never escapes ``embed``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class CallCounter(Protocol):
    calls: int


class Transport:
    def __init__(
        self,
        name: str,
        settings: ProviderSettings,
        base_url: str,
        client: httpx.Client,
        *,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
        rng: random.Random,
    ) -> None:
        self.name = name
        self.settings = settings
        self.base_url = base_url
        self._url = without_credentials(base_url)
        credentials = url_credentials(base_url)
        self._auth: Any = httpx.BasicAuth(*credentials) if credentials else httpx.USE_CLIENT_DEFAULT
        self._sends_credentials = credentials is not None
        self.client = client
        self._sleep = sleep
        self._clock = clock
        self._rng = rng

    def send(
        self, method: str, path: str, model: str | None, payload: dict[str, Any] | None, counter: CallCounter
    ) -> object:
        """One request, retried as the module docstring says; the parsed JSON of a 2xx.

        ``counter.calls`` goes up by one for every HTTP request made.
        """
        key = resolve_api_key(self.settings)
        response = self._attempts(method, path, model, payload, counter, key, stream=False)
        return self._json(response, model, Redactor.for_settings(self.settings))

    @contextmanager
    def stream(
        self, method: str, path: str, model: str | None, payload: dict[str, Any] | None, counter: CallCounter
    ) -> Iterator[httpx.Response]:
        """Like :meth:`send`, but yields the open 2xx response for the caller to read as it
        arrives (server-sent events). Retries happen only until a 2xx starts; the read
        timeout then applies between chunks. The response is closed on exit."""
        key = resolve_api_key(self.settings)
        response = self._attempts(method, path, model, payload, counter, key, stream=True)
        try:
            yield response
        finally:
            response.close()

    def build(
        self,
        method: str,
        path: str,
        payload: dict[str, Any] | None,
        *,
        accept: str,
        timeout: httpx.Timeout,
        extensions: dict[str, Any] | None = None,
    ) -> httpx.Request:
        """One request to ``path`` with the key (looked up now) and any URL credentials as
        Basic auth; for callers that send it themselves (the chat client)."""
        headers = {"Accept": accept}
        key = resolve_api_key(self.settings)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = self.client.build_request(
            method, self._url + path, json=payload, headers=headers, timeout=timeout, extensions=extensions
        )
        if self._sends_credentials:
            request = next(self._auth.sync_auth_flow(request))
        return request

    @property
    def sends_key(self) -> bool:
        return bool(resolve_api_key(self.settings)) or self._sends_credentials

    def raise_for_status(self, status: int, message: str, model: str | None, path: str) -> None:
        """Raise the error a final status means (401/403, 404 or "model not found", other
        4xx); return for a status the embeddings policy would retry."""
        self._raise_for_status(status, message, model, path, sent_key=self.sends_key)

    def _attempts(
        self,
        method: str,
        path: str,
        model: str | None,
        payload: dict[str, Any] | None,
        counter: CallCounter,
        key: str | None,
        *,
        stream: bool,
    ) -> httpx.Response:
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        clean = Redactor.for_settings(self.settings)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        started = self._clock()
        budget = self.settings.retry_budget
        retries = 0
        while True:
            timeout = max(0.05, min(self.settings.timeout, budget - (self._clock() - started)))
            status, retry_after = None, None
            counter.calls += 1
            try:
                request = self.client.build_request(
                    method,
                    self._url + path,
                    json=payload,
                    headers=headers,
                    timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                )
                response = self.client.send(request, stream=stream, auth=self._auth)
                if stream and response.status_code >= 300:
                    try:
                        response.read()
                    finally:
                        response.close()
            except httpx.TimeoutException:
                problem = f"no answer within {timeout:g} s"
            except httpx.ConnectError as exc:
                # nothing listening (or no such host): a retry cannot find a server, say so at once
                raise ProviderUnavailableError(
                    f"{who(self.name, model)}: could not connect to {display_url(self.base_url)} "
                    f"({connect_problem(exc)}; is the server running?)",
                    provider=self.name,
                    model=model,
                ) from None
            except httpx.TransportError as exc:
                problem = f"the connection dropped ({type(exc).__name__})"
            except httpx.RequestError as exc:  # undecodable body, redirect loop: retrying will not help
                raise ProviderResponseError(
                    f"{who(self.name, model)}: unreadable answer ({type(exc).__name__})",
                    provider=self.name,
                    model=model,
                ) from None
            else:
                status = response.status_code
                if status < 300:
                    return response
                message = error_message(response.content, clean=clean)
                self._raise_for_status(status, message, model, path, sent_key=bool(key) or self._sends_credentials)
                problem = f"HTTP {status}" + (f": {message}" if message else "")
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            retries += 1
            elapsed = self._clock() - started
            delay = backoff_delay(retries, retry_after, self._rng)
            if retries > self.settings.max_retries or elapsed + delay > budget:
                why = f"gave up after {retries} attempts in {elapsed:.1f} s"
                if retries <= self.settings.max_retries:
                    why += f" (waiting {delay:g} s more would pass the {budget:g} s retry budget)"
                raise ProviderUnavailableError(
                    f"{who(self.name, model)}: {why}; last problem: {problem}",
                    provider=self.name,
                    model=model,
                    status=status,
                )
            log.warning(
                "provider %s: %s %s failed (%s); retry %d of %d in %.1f s",
                self.name,
                method,
                path,
                problem,
                retries,
                self.settings.max_retries,
                delay,
            )
            self._sleep(delay)

    def _json(self, response: httpx.Response, model: str | None, clean: Redactor) -> object:
        """The parsed body; a body that is not JSON is malformed (the caller may split and
        retry), except an HTML page: that is a base URL pointing at a web page, not an API."""
        try:
            return response.json()
        except ValueError:
            named, status = who(self.name, model), response.status_code
            if "html" in response.headers.get("content-type", "").lower():
                raise ProviderResponseError(
                    f"{named}: {html_page_hint(display_url(self.base_url))}",
                    provider=self.name,
                    model=model,
                    status=status,
                ) from None
            sample = " ".join(clean(response.text).split())
            detail = f"the server's answer is not JSON: {sample[:120]!r}"
            raise MalformedResponseError(
                f"{named}: {detail}", detail=detail, provider=self.name, model=model, status=status
            ) from None

    def _raise_for_status(self, status: int, message: str, model: str | None, path: str, *, sent_key: bool) -> None:
        """Raise for a final error status; return when ``status`` deserves a retry."""
        named, said = who(self.name, model), f": {message}" if message else ""
        if status in (401, 403):
            env = key_env_for(self.settings)
            where = (
                f"the environment variable {env} or api_key in the config file"
                if env
                else "api_key (or api_key_env) in the config file"
            )
            refused = "refused the API key" if sent_key else "wants an API key and none is set"
            raise ProviderAuthError(
                f"{named}: the server {refused} (HTTP {status}){said}; check {where}",
                provider=self.name,
                model=model,
                status=status,
            )
        if status == 404 or (400 <= status <= 500 and status != 429 and says_model_missing(message)):
            where = f"{display_url(self.base_url)}{path}"
            what = f"model '{model}' (or {where})" if model else where
            hint = v1_hint(self.settings.kind, self._url) if status == 404 else ""
            raise ProviderNotFoundError(
                f"{named}: {what} was not found (HTTP {status}){said}{hint}",
                provider=self.name,
                model=model,
                status=status,
            )
        if path == "/embeddings" and says_too_large(status, message):
            raise TooLarge(status, message)
        if is_retryable_status(status):
            return
        raise ProviderRequestError(
            f"{named}: the server rejected the request (HTTP {status}){said}",
            provider=self.name,
            model=model,
            status=status,
        )
