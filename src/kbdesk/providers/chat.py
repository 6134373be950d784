"""Chat completions from an OpenAI-compatible server, streamed, with tool calls.

``POST {base_url}/chat/completions`` with ``stream: true``, the body shaped by
:mod:`kbdesk.providers.chat_wire` so that the strictest servers accept it, the answer
read as server-sent events (:mod:`kbdesk.providers.sse`)::

    with ChatClient("local", settings) as client:
        for item in client.stream(messages, "llama3.2", tools=[...], cancel=token,
                                  on_wait=show_waiting, wait_limit=600):
            if isinstance(item, str):
                print(item, end="")        # a piece of the answer, as it arrives
            else:
                completion = item          # the last item: text, tool calls, finish_reason

What is retried, and what is not (a generation is never sent twice):

* a connection that timed out (a server too busy to accept it), and HTTP
  429/502/503/504 (after ``Retry-After`` when the server gives one), within the
  provider's ``max_retries`` and ``retry_budget``;
* never a refused connection or an unknown host: nothing listens there, and one line
  says so at once;
* never an answer stream that ended without ``finish_reason``: the answer was cut
  (:class:`InterruptedAnswerError`, with the text that came), not complete;
* never a timeout once the request is sent: while nothing arrives (the model reading a
  long prompt, or a stall mid-answer) ``on_wait(seconds)`` is called about once a second
  and the stream keeps waiting, up to ``wait_limit`` seconds; then one line says so;
* never 400/401/403/404/413/422, any other 5xx, a request the server finds invalid, or
  a prompt over the model's context (:class:`ContextOverflowError`).

``cancel.cancel()`` from any thread makes the stream raise :class:`ChatCancelled` within
a fraction of a second, whatever it is waiting for (connection, headers, next piece): the
request runs in a worker thread (:mod:`kbdesk.providers.chat_io`) and its socket is
shut down.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import httpx

from kbdesk.providers.chat_io import CancelToken, ChatCancelled, Exchange, Silence, Waiter
from kbdesk.providers.chat_refusals import (
    OVERFLOW,
    RETRY_STATUSES,
    ToolsRejectedError,
    refusal,
    says_tools_rejected,
)
from kbdesk.providers.chat_wire import chat_payload
from kbdesk.providers.errors import (
    ContextOverflowError,
    InterruptedAnswerError,
    ProviderError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderUnavailableError,
    SilentEndError,
)
from kbdesk.providers.json_shapes import obj
from kbdesk.providers.retry import backoff_delay, connect_problem, parse_retry_after
from kbdesk.providers.secrets import Redactor
from kbdesk.providers.settings import ProviderSettings, base_url_for, display_url
from kbdesk.providers.sse import Completion, ToolCallAssembler, read_usage, sse_data, whole_completion
from kbdesk.providers.transport import Transport, who
from kbdesk.providers.validate import (
    error_message,
    error_message_from,
    html_page_hint,
    says_context_overflow,
)

log = logging.getLogger("kbdesk.providers")

DEFAULT_WAIT_LIMIT = 600.0
"""Seconds to wait for a silent model when the caller sets no ``wait_limit`` ([chat] timeout)."""


class _Calls:
    calls = 0


class ChatClient:
    """Streaming chat completions from one configured provider.

    ``client`` may be shared (it is then not closed by :meth:`close`). The client made
    here keeps no idle connections, so that every request has a socket of its own that a
    cancel can shut down even before the server answers.
    """

    def __init__(self, name: str, settings: ProviderSettings, *, client: httpx.Client | None = None) -> None:
        self.name = name
        self.settings = settings
        self.base_url = base_url_for(settings, name)
        self._owns_client = client is None
        self._client = (
            client
            if client is not None
            else httpx.Client(headers={"User-Agent": "kbdesk"}, limits=httpx.Limits(max_keepalive_connections=0))
        )
        self._transport = Transport(
            name, settings, self.base_url, self._client, sleep=time.sleep, clock=time.monotonic, rng=random.Random()
        )
        self._rng = random.Random()

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stream(
        self,
        messages: Sequence[dict[str, Any]],
        model: str,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        cancel: CancelToken | None = None,
        tool_choice: str | None = None,
        max_tokens: int | None = None,
        on_wait: Callable[[float], None] | None = None,
        wait_limit: float | None = None,
    ) -> Iterator[str | Completion]:
        """Pieces of the answer (``str``) as they arrive, then the whole :class:`Completion`.

        ``tool_choice``: "auto" (the default), "required", "none" or the name of the one
        function the model must call. ``max_tokens``: the longest answer asked for (its
        end shows as ``finish_reason == "length"``). ``on_wait(seconds)`` is called from
        this thread about once a second while nothing arrives; after ``wait_limit``
        seconds of that (default :data:`DEFAULT_WAIT_LIMIT`) the stream fails.

        Raises :class:`ChatCancelled` when ``cancel`` fires, :class:`ContextOverflowError`
        when the prompt is over the model's context, :class:`ToolsRejectedError` when
        tools were offered and refused, and another :class:`ProviderError` (one line
        naming provider and model, no key in it) for anything else.
        """
        cancel = cancel or CancelToken()
        payload = chat_payload(
            messages,
            model,
            kind=self.settings.kind,
            base_url=self.base_url,
            tools=tools,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
        )
        cancel.check()
        log.debug("provider %s: chat with %s, %d messages, %d tools", self.name, model, len(messages), len(tools or ()))
        waiter = Waiter(cancel, on_wait, float(wait_limit) if wait_limit else DEFAULT_WAIT_LIMIT)
        current: list[Exchange] = []

        def abort() -> None:
            if current:
                current[-1].abort()

        forget = cancel.on_cancel(abort)
        try:
            response = self._open(payload, model, waiter, current)
            yield from self._read(current[-1], response, model, waiter)
        finally:
            forget()
            if current:
                current[-1].abort()  # ends a worker still reading (a no-op once it has finished)

    def prompt_tokens(self, messages: Sequence[dict[str, Any]], model: str, *, timeout: float = 60.0) -> int | None:
        """How many tokens the server counts for ``messages`` as its chat template renders
        them (``usage.prompt_tokens`` of a one-token, non-streamed answer); None when the
        server does not say. Sent once, never retried; a failure raises a ProviderError."""
        payload = chat_payload(messages, model, kind=self.settings.kind, base_url=self.base_url, max_tokens=1)
        payload["stream"] = False
        payload.pop("stream_options", None)
        quick = Transport(
            self.name,
            replace(self.settings, max_retries=0, timeout=min(self.settings.timeout, timeout)),
            self.base_url,
            self._client,
            sleep=time.sleep,
            clock=time.monotonic,
            rng=self._rng,
        )
        body = quick.send("POST", "/chat/completions", model, payload, _Calls())
        return read_usage(body).get("prompt_tokens")

    # ── sending, and what a status means ───────────────────────────────────────
    def _open(self, payload: dict[str, Any], model: str, waiter: Waiter, current: list[Exchange]) -> httpx.Response:
        """Send until a 2xx starts; returns its response (the exchange is ``current[-1]``)."""
        named, started, retries = who(self.name, model), time.monotonic(), 0
        timeout = httpx.Timeout(waiter.limit + 30.0, connect=min(self.settings.timeout, 10.0))
        while True:
            waiter.cancel.check()
            request = self._transport.build(
                "POST", "/chat/completions", payload, accept="text/event-stream", timeout=timeout
            )
            current.append(Exchange(self._client, request))
            current[-1].start()
            retry_after = None
            try:
                kind, value = waiter.next(current[-1])
            except Silence:
                raise ProviderUnavailableError(
                    f"{named}: no answer within {waiter.limit:g} s (the model did "
                    "not start answering; [chat] timeout sets how long to wait)",
                    provider=self.name,
                    model=model,
                ) from None
            if kind == "head":
                response: httpx.Response = value
                if response.status_code < 300:
                    return response
                message = self._said(response)
                error = self._refusal(response.status_code, message, model, payload)
                if error is not None:
                    raise error
                problem = f"HTTP {response.status_code}" + (f": {message}" if message else "")
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            elif isinstance(value, httpx.ConnectTimeout):
                problem = f"no connection to {display_url(self.base_url)} within {timeout.connect:g} s"
            elif isinstance(value, httpx.ConnectError):
                # nothing listening (refused) or no such host: retrying cannot help, say so at once
                raise ProviderUnavailableError(
                    f"{named}: could not connect to {display_url(self.base_url)} ({connect_problem(value)}; "
                    "is the server running?)",
                    provider=self.name,
                    model=model,
                ) from None
            elif isinstance(value, httpx.TimeoutException):
                raise ProviderUnavailableError(
                    f"{named}: no answer within {timeout.read:g} s", provider=self.name, model=model
                ) from None
            elif isinstance(value, httpx.TransportError):
                raise ProviderUnavailableError(
                    f"{named}: the connection dropped before the answer started "
                    f"({type(value).__name__}); not sent again",
                    provider=self.name,
                    model=model,
                ) from None
            elif isinstance(value, httpx.HTTPError):
                raise ProviderResponseError(
                    f"{named}: unreadable answer ({type(value).__name__})", provider=self.name, model=model
                ) from None
            else:
                raise value
            retries += 1
            elapsed = time.monotonic() - started
            delay = backoff_delay(retries, retry_after, self._rng)
            if retries > self.settings.max_retries or elapsed + delay > self.settings.retry_budget:
                why = f"gave up after {retries} attempt{'s' if retries > 1 else ''} in {elapsed:.1f} s"
                if retries <= self.settings.max_retries:
                    why += f" (waiting {delay:g} s more would pass the {self.settings.retry_budget:g} s retry budget)"
                raise ProviderUnavailableError(
                    f"{named}: {why}; last problem: {problem}", provider=self.name, model=model
                )
            log.warning(
                "provider %s: chat request failed (%s); retry %d of %d in %.1f s",
                self.name,
                problem,
                retries,
                self.settings.max_retries,
                delay,
            )
            if waiter.cancel.wait(delay):
                waiter.cancel.check()

    def _said(self, response: httpx.Response) -> str:
        if "html" in response.headers.get("content-type", "").lower():
            return "an HTML page"
        return error_message(response.content, clean=Redactor.for_settings(self.settings))

    def _refusal(self, status: int, message: str, model: str, payload: dict[str, Any]) -> ProviderError | None:
        """The error a final status means, or None for a status worth retrying."""
        return refusal(self.name, self._transport, status, message, model, payload)

    # ── reading the answer ─────────────────────────────────────────────────────
    def _read(
        self, exchange: Exchange, response: httpx.Response, model: str, waiter: Waiter
    ) -> Iterator[str | Completion]:
        named, clean = who(self.name, model), Redactor.for_settings(self.settings)
        kind = response.headers.get("content-type", "").lower()
        if "html" in kind:
            raise ProviderResponseError(
                f"{named}: {html_page_hint(display_url(self.base_url))}",
                provider=self.name,
                model=model,
                status=response.status_code,
            )
        if "json" in kind and "event-stream" not in kind:
            yield self._whole(response, model, clean)
            return
        assembler, parts = ToolCallAssembler(), []
        usage: dict[str, Any] = {}
        finish: str | None = None
        done = seen = False
        while not done:
            try:
                event, value = waiter.next(exchange)
            except Silence:
                what = "the answer stopped arriving (nothing" if seen else "the model did not start answering (nothing"
                raise ProviderUnavailableError(
                    f"{named}: {what} for {waiter.limit:g} s; [chat] timeout sets how long to wait)",
                    provider=self.name,
                    model=model,
                ) from None
            if event == "end":
                break
            if event == "error":
                self._broken(value, model, waiter.limit)
            if value.startswith("error:"):  # llama.cpp's server-sent "error" event
                self._chunk('{"error": ' + value[6:].strip() + "}", model, clean)
            data = sse_data(value)
            if not data:
                continue
            if data == "[DONE]":
                done = True
                break
            chunk = self._chunk(data, model, clean)
            seen = True
            usage = read_usage(chunk) or usage
            choices = chunk.get("choices")
            if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                continue
            choice = choices[0]
            delta = obj(choice.get("delta")) or obj(choice.get("message"))
            text = delta.get("content")
            if isinstance(text, str) and text:
                parts.append(text)
                yield text
            for fragment in delta.get("tool_calls") or []:
                assembler.add(fragment)
            finish = choice.get("finish_reason") or finish
        calls = assembler.calls()
        if finish is None:
            if not done and not parts and not calls:  # llama-cpp-python: over its context, or a request it failed on
                raise SilentEndError(
                    f"{named}: the server ended the answer without a word (no error said; llama-cpp-python "
                    "does this when the prompt does not fit its context, or when it fails on the request)",
                    provider=self.name,
                    model=model,
                    status=response.status_code,
                )
            # a stream without finish_reason was cut: llama-cpp-python ends a running answer with
            # [DONE] and no finish_reason when another request reaches it
            how = "with [DONE] but no finish_reason" if done else "before [DONE], with no finish_reason"
            raise InterruptedAnswerError(
                f"{named}: the answer was interrupted: the server ended the stream {how} "
                f"after {len(''.join(parts))} characters{' and a tool call' if calls else ''} "
                "(llama-cpp-python does this when another request reaches it while it answers)",
                text="".join(parts),
                provider=self.name,
                model=model,
            )
        yield Completion("".join(parts), calls, finish, usage)

    def _broken(self, exc: BaseException, model: str, limit: float) -> None:
        named = who(self.name, model)
        if isinstance(exc, httpx.TimeoutException):
            raise ProviderUnavailableError(
                f"{named}: the answer stopped arriving (nothing for {limit:g} s)", provider=self.name, model=model
            ) from None
        if isinstance(exc, (httpx.TransportError, httpx.StreamError)):
            raise ProviderUnavailableError(
                f"{named}: the connection dropped in the middle of the answer ({type(exc).__name__})",
                provider=self.name,
                model=model,
            ) from None
        raise exc

    def _chunk(self, data: str, model: str, clean: Redactor) -> dict[str, Any]:
        named = who(self.name, model)
        try:
            chunk = json.loads(data)
        except ValueError:
            sample = " ".join(clean(data).split())[:80]
            raise ProviderResponseError(
                f"{named}: malformed answer stream: a data line is not JSON: {sample!r}",
                provider=self.name,
                model=model,
            ) from None
        if not isinstance(chunk, dict):
            raise ProviderResponseError(
                f"{named}: malformed answer stream: a data line is not a JSON object", provider=self.name, model=model
            )
        if "error" in chunk and not chunk.get("choices"):
            message = error_message_from(chunk, clean=clean) or error_message_from(chunk.get("error"), clean=clean)
            if says_context_overflow(message):
                raise ContextOverflowError(
                    f"{named}: {OVERFLOW} ({message})", provider=self.name, model=model, status=200
                )
            raise ProviderRequestError(
                f"{named}: the server reported an error mid-answer: {message}",
                provider=self.name,
                model=model,
                status=200,
            )
        return chunk

    def _whole(self, response: httpx.Response, model: str, clean: Redactor) -> Completion:
        try:
            body = json.loads(response.content)
            if isinstance(body, dict) and "error" in body and "choices" not in body:
                self._chunk(json.dumps(body), model, clean)
            return whole_completion(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ProviderResponseError(
                f"{who(self.name, model)}: unreadable answer: {clean(str(exc))}", provider=self.name, model=model
            ) from None


__all__ = [
    "DEFAULT_WAIT_LIMIT",
    "OVERFLOW",
    "RETRY_STATUSES",
    "CancelToken",
    "ChatCancelled",
    "ChatClient",
    "Completion",
    "ContextOverflowError",
    "InterruptedAnswerError",
    "ToolsRejectedError",
    "says_tools_rejected",
]
