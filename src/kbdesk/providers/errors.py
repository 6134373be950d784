"""Errors raised by the provider layer.

Every message is one readable line that names the provider (and the model when there
is one). No message ever contains a credential: text that came from a server is passed
through a :class:`~kbdesk.providers.secrets.Redactor` where the message is built, and
every message is passed through :func:`mask_patterns` here as a last guard.
"""

from __future__ import annotations

import re
from typing import Any

from kbdesk.errors import KbdeskError

MASK = "***"

# scheme://user:pass@host -> scheme://***@host (only right after a scheme: never an e-mail address)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#'\"<>]+@")
# "Basic dXNlcjpwYXNz", "Bearer sk-…": a credential is not a plain lower-case word
# ("Basic authentication" stays readable)
_AUTH_VALUE = re.compile(
    r"(?i)\b(basic|bearer)(\s+)(?-i:(?![a-z]+(?![\w.~+/=-])))(?=[\w.~+/-]{8}|[\w.~+/-]*[\d_.~+/=-])"
    r"[\w.~+/-]+=*"
)


def mask_patterns(text: str) -> str:
    """``text`` with URL user info and Basic/Bearer credentials masked (no secret known)."""
    if "@" in text:
        text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    return _AUTH_VALUE.sub(lambda m: m.group(1) + m.group(2) + MASK, text)


class ProviderError(KbdeskError):
    """A provider could not do what was asked."""

    def __init__(
        self, message: str, *, provider: str | None = None, model: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(mask_patterns(message))
        self.provider = provider
        self.model = model
        self.status = status


class ProviderConfigError(ProviderError):
    """The provider's settings cannot work (no base URL for a custom provider, ...)."""


class ProviderAuthError(ProviderError):
    """The server refused the API key (HTTP 401/403). Not retried."""


class ProviderNotFoundError(ProviderError):
    """The model or the endpoint does not exist on the server (HTTP 404). Not retried."""


class ProviderUnavailableError(ProviderError):
    """Rate limits, server errors, timeouts or dropped connections outlasted the retries."""


class ProviderRequestError(ProviderError):
    """The server rejected the request for a reason retrying cannot fix (other 4xx)."""


class ContextOverflowError(ProviderRequestError):
    """The prompt (system prompt, history, tool results and the room asked for the answer)
    is over the model's context window: the server said so (400/500 "context length",
    "exceeds the available context size", ...), or ended the answer without a word
    (llama-cpp-python does that). Not retried: the caller shortens the prompt."""


class SilentEndError(ContextOverflowError):
    """The server answered 200 and ended the stream without a word, a tool call or a
    finish_reason. llama-cpp-python does that for a prompt over its context — and for a
    request it fails on inside the stream (a ``tool_choice`` it cannot follow). Only a
    guess at an overflow: the caller decides from what it sent."""


class ProviderResponseError(ProviderError):
    """The server answered, but not with what the OpenAI embeddings API promises."""


class InterruptedAnswerError(ProviderError):
    """The answer stream ended without a ``finish_reason`` after it had started (with or
    without ``[DONE]``): the answer is not known to be complete. llama-cpp-python's server
    ends a running stream this way when another request reaches it. ``text`` is what came."""

    def __init__(self, message: str, *, text: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.text = text


class MalformedResponseError(ProviderResponseError):
    """An answer that cannot be matched to its inputs: not JSON, too few or too many
    vectors, vectors that disagree in length. ``embed`` splits the batch and retries the
    halves, so that only an input whose answer is malformed when sent alone fails.
    ``detail`` is the fault without the provider's name."""

    def __init__(self, message: str, *, detail: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.detail = detail


class InvalidVectorError(ProviderResponseError):
    """One input's vector is unusable (NaN or infinity, all zeros, not numbers, the wrong
    dimension, or a malformed answer when sent alone); ``index`` says which."""

    def __init__(self, message: str, *, index: int, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.index = index


class InputTooLargeError(ProviderError):
    """One input is too long for the model even when sent alone; ``index`` says which."""

    def __init__(self, message: str, *, index: int, chars: int, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.index = index
        self.chars = chars


class EmptyInputError(ProviderError):
    """One input is empty or only whitespace; servers reject those, so it is never sent."""

    def __init__(self, message: str, *, index: int, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.index = index


def who(provider: str, model: str | None) -> str:
    """How messages name a provider (and model): ``provider 'x', model 'y'``."""
    return f"provider '{provider}'" + (f", model '{model}'" if model else "")
