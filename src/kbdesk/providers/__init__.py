"""Providers: OpenAI-compatible HTTP servers that embed text and list models.

Never imports a UI toolkit. Typical use::

    from kbdesk.providers import OpenAICompatProvider, ProviderSettings

    with OpenAICompatProvider("local", ProviderSettings(kind="ollama")) as provider:
        result = provider.embed(["some text"], "nomic-embed-text", on_input_error="collect")

The HTTP client (httpx) comes in with :class:`OpenAICompatProvider`, on first use: a
keyword-only search or a settings read never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbdesk.providers.errors import (
    EmptyInputError,
    InputTooLargeError,
    InvalidVectorError,
    MalformedResponseError,
    ProviderAuthError,
    ProviderConfigError,
    ProviderError,
    ProviderNotFoundError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderUnavailableError,
)
from kbdesk.providers.results import EmbedResult, InputFailure, ModelInfo, embedding_candidates
from kbdesk.providers.settings import (
    DEFAULT_BASE_URLS,
    ProviderKind,
    ProviderSettings,
    base_url_for,
    check_base_url,
    resolve_api_key,
    write_config_file,
)

if TYPE_CHECKING:
    from kbdesk.providers.openai_compat import OpenAICompatProvider, UsageCallback, plan_batches

_LAZY = {"OpenAICompatProvider", "UsageCallback", "plan_batches"}


def __getattr__(name: str) -> Any:
    """The HTTP provider's names, imported when first asked for."""
    if name in _LAZY:
        from kbdesk.providers import openai_compat

        return getattr(openai_compat, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_BASE_URLS",
    "EmbedResult",
    "EmptyInputError",
    "InputFailure",
    "InputTooLargeError",
    "InvalidVectorError",
    "MalformedResponseError",
    "ModelInfo",
    "OpenAICompatProvider",
    "ProviderAuthError",
    "ProviderConfigError",
    "ProviderError",
    "ProviderKind",
    "ProviderNotFoundError",
    "ProviderRequestError",
    "ProviderResponseError",
    "ProviderSettings",
    "ProviderUnavailableError",
    "UsageCallback",
    "base_url_for",
    "check_base_url",
    "embedding_candidates",
    "plan_batches",
    "resolve_api_key",
    "write_config_file",
]
