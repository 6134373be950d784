"""Errors raised by the provider layer.

Every message is one readable line that names the provider (and the model when there
is one). No message ever contains an API key: text that came from a server is passed
through :func:`redact` first.
"""

from __future__ import annotations

from kbdesk.errors import KbdeskError


class ProviderError(KbdeskError):
    """A provider could not do what was asked."""

    def __init__(self, message: str, *, provider: str | None = None, model: str | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
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


class ProviderResponseError(ProviderError):
    """The server answered, but not with what the OpenAI embeddings API promises."""


class InvalidVectorError(ProviderResponseError):
    """One input's vector is unusable (NaN, infinity or all zeros); ``index`` says which."""

    def __init__(self, message: str, *, index: int, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.index = index


class InputTooLargeError(ProviderError):
    """One input is too long for the model even when sent alone; ``index`` says which."""

    def __init__(self, message: str, *, index: int, chars: int, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.index = index
        self.chars = chars


class EmptyInputError(ProviderError):
    """One input is empty or only whitespace; servers reject those, so it is never sent."""

    def __init__(self, message: str, *, index: int, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.index = index


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``."""
    if secret:
        text = text.replace(secret, "***")
    return text
