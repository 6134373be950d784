"""Chat completions from an OpenAI-compatible server, streamed, with tool calls.

``POST {base_url}/chat/completions`` with ``stream: true``; the request goes through the
same :class:`~kbdesk.providers.transport.Transport` as embeddings (retries with backoff
on 429/5xx until the answer starts, clear errors for 401/404/other 4xx, credentials
masked in every message). The answer is read as server-sent events
(:mod:`kbdesk.providers.sse`)::

    with ChatClient("local", settings) as client:
        for item in client.stream(messages, "llama3.2", tools=[...], cancel=token):
            if isinstance(item, str):
                print(item, end="")        # a piece of the answer, as it arrives
            else:
                completion = item          # the last item: text + tool calls

Cancelling ``token`` (from any thread) closes the open response and makes the stream
raise :class:`ChatCancelled`.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import httpx

from kbdesk.errors import KbdeskError
from kbdesk.providers.errors import (
    ProviderError, ProviderRequestError, ProviderResponseError, ProviderUnavailableError,
)
from kbdesk.providers.secrets import Redactor
from kbdesk.providers.settings import ProviderSettings, base_url_for
from kbdesk.providers.sse import Completion, ToolCallAssembler, read_usage, sse_data, whole_completion
from kbdesk.providers.transport import Transport, who
from kbdesk.providers.validate import error_message_from

log = logging.getLogger("kbdesk.providers")

_TOOL_WORDS = re.compile(r"\btools?\b|tool[_ ]?(choice|call|use)|function[_ ]?call", re.I)
_REFUSAL_WORDS = re.compile(r"support|requires?|enable|jinja|not allowed|unknown|unrecognized|invalid|"
                            r"extra (fields|inputs)|not permitted", re.I)
# servers known to accept stream_options (usage in the last chunk); others may refuse unknown fields
_USAGE_KINDS = ("openai", "openrouter")


class ChatCancelled(KbdeskError):
    """The user stopped the answer."""


class ToolsRejectedError(ProviderRequestError):
    """The server (or model) does not accept tools; the caller may retry without them."""


class CancelToken:
    """Stops a chat turn from another thread: ``cancel()`` sets the flag and closes
    whatever connection the turn is waiting on."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._closers: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()
        with self._lock:
            closers, self._closers = self._closers, []
        for close in closers:
            try:
                close()
            except Exception:  # closing a response that already ended
                pass

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, waking at once on cancel; True when cancelled."""
        return self._event.wait(seconds)

    def check(self) -> None:
        if self._event.is_set():
            raise ChatCancelled("stopped")

    def on_cancel(self, close: Callable[[], None]) -> Callable[[], None]:
        """Run ``close`` on cancel (at once if already cancelled); returns an unregister function."""
        with self._lock:
            if not self._event.is_set():
                self._closers.append(close)
                return lambda: self._forget(close)
        close()
        return lambda: None

    def _forget(self, close: Callable[[], None]) -> None:
        with self._lock:
            if close in self._closers:
                self._closers.remove(close)


def says_tools_rejected(message: str) -> bool:
    return bool(_TOOL_WORDS.search(message) and _REFUSAL_WORDS.search(message))


class ChatClient:
    """Streaming chat completions from one configured provider."""

    def __init__(self, name: str, settings: ProviderSettings, *, client: httpx.Client | None = None) -> None:
        self.name = name
        self.settings = settings
        self.base_url = base_url_for(settings, name)
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(headers={"User-Agent": "kbdesk"})
        self._cancel = CancelToken()
        # waits between retries end early on cancel
        self._transport = Transport(name, settings, self.base_url, self._client, sleep=self._wait,
                                    clock=time.monotonic, rng=random.Random())

    def _wait(self, seconds: float) -> None:
        self._cancel.wait(seconds)
        self._cancel.check()

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stream(self, messages: Sequence[dict[str, Any]], model: str, *,
               tools: Sequence[dict[str, Any]] | None = None,
               cancel: CancelToken | None = None) -> Iterator[str | Completion]:
        """Pieces of the answer (``str``) as they arrive, then the whole :class:`Completion`.

        Raises :class:`ToolsRejectedError` when tools were offered and the server refused
        them, :class:`ChatCancelled` when ``cancel`` fires, and another
        :class:`ProviderError` (one readable line, no key in it) for anything else.
        """
        cancel = cancel or CancelToken()
        payload: dict[str, Any] = {"model": model, "messages": list(messages), "stream": True}
        if tools:
            payload["tools"] = list(tools)
        if self.settings.kind in _USAGE_KINDS:
            payload["stream_options"] = {"include_usage": True}
        cancel.check()
        log.debug("provider %s: chat with %s, %d messages, %d tools", self.name, model, len(messages),
                  len(tools or ()))
        self._cancel = cancel
        # a cancel while waiting for the server to start answering closes this client's
        # connections (only when the client is ours: a shared one is not ours to close)
        forget_client = cancel.on_cancel(self._client.close) if self._owns_client else (lambda: None)
        try:
            with self._transport.stream("POST", "/chat/completions", model, payload,
                                        SimpleNamespace(calls=0)) as response:
                forget = cancel.on_cancel(response.close)
                try:
                    yield from self._read(response, model, cancel)
                finally:
                    forget()
        except ChatCancelled:
            raise
        except Exception as exc:
            if cancel.cancelled:
                raise ChatCancelled("stopped") from None
            if isinstance(exc, ProviderError) and tools and \
                    (isinstance(exc, ProviderRequestError) or exc.status == 500) and says_tools_rejected(str(exc)):
                raise ToolsRejectedError(str(exc), provider=self.name, model=model, status=exc.status) from None
            raise
        finally:
            forget_client()

    # ── reading the answer ─────────────────────────────────────────────────────
    def _read(self, response: httpx.Response, model: str, cancel: CancelToken) -> Iterator[str | Completion]:
        clean = Redactor.for_settings(self.settings)
        if "json" in response.headers.get("content-type", "") and "event-stream" not in \
                response.headers.get("content-type", ""):
            yield self._whole(response, model, clean, cancel)
            return
        assembler = ToolCallAssembler()
        done = False
        parts: list[str] = []
        finish: str | None = None
        usage: dict[str, int] = {}
        try:
            for line in response.iter_lines():
                cancel.check()
                data = sse_data(line)
                if data is None or not data:
                    continue
                if data == "[DONE]":
                    done = True
                    break
                chunk = self._chunk(data, model, clean)
                usage = read_usage(chunk) or usage
                choices = chunk.get("choices")
                if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                    continue
                choice = choices[0]
                delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else \
                    choice.get("message") if isinstance(choice.get("message"), dict) else {}
                text = delta.get("content")
                if isinstance(text, str) and text:
                    parts.append(text)
                    yield text
                for fragment in delta.get("tool_calls") or []:
                    assembler.add(fragment)
                finish = choice.get("finish_reason") or finish
        except httpx.TimeoutException:
            cancel.check()
            raise ProviderUnavailableError(f"{who(self.name, model)}: the answer stopped arriving "
                                           f"(nothing for {self.settings.timeout:g} s)",
                                           provider=self.name, model=model) from None
        except (httpx.TransportError, httpx.StreamError) as exc:
            cancel.check()
            raise ProviderUnavailableError(f"{who(self.name, model)}: the connection dropped in the middle of "
                                           f"the answer ({type(exc).__name__})", provider=self.name,
                                           model=model) from None
        cancel.check()
        if not done and finish is None:
            raise ProviderResponseError(f"{who(self.name, model)}: the answer stream ended before the answer "
                                        "was complete (no finish_reason and no [DONE])", provider=self.name,
                                        model=model)
        yield Completion("".join(parts), assembler.calls(), finish, usage)

    def _chunk(self, data: str, model: str, clean: Redactor) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except ValueError:
            sample = " ".join(clean(data).split())[:80]
            raise ProviderResponseError(f"{who(self.name, model)}: malformed answer stream: a data line is not "
                                        f"JSON: {sample!r}", provider=self.name, model=model) from None
        if not isinstance(chunk, dict):
            raise ProviderResponseError(f"{who(self.name, model)}: malformed answer stream: a data line is not "
                                        "a JSON object", provider=self.name, model=model)
        if "error" in chunk and not chunk.get("choices"):
            message = error_message_from(chunk, clean=clean)
            raise ProviderRequestError(f"{who(self.name, model)}: the server reported an error mid-answer: "
                                       f"{message}", provider=self.name, model=model, status=200)
        return chunk

    def _whole(self, response: httpx.Response, model: str, clean: Redactor, cancel: CancelToken) -> Completion:
        try:
            body = json.loads(response.read())
            cancel.check()
            if isinstance(body, dict) and "error" in body and "choices" not in body:
                self._chunk(json.dumps(body), model, clean)
            return whole_completion(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ProviderResponseError(f"{who(self.name, model)}: unreadable answer: {clean(str(exc))}",
                                        provider=self.name, model=model) from None
        except httpx.HTTPError as exc:
            cancel.check()
            raise ProviderUnavailableError(f"{who(self.name, model)}: the connection dropped ({type(exc).__name__})",
                                           provider=self.name, model=model) from None


__all__ = ["CancelToken", "ChatCancelled", "ChatClient", "Completion", "ToolsRejectedError", "says_tools_rejected"]
