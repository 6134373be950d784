"""Providers: OpenAI-compatible HTTP servers that embed text and list models.

Never imports a UI toolkit. Typical use::

    from kbdesk.providers import OpenAICompatProvider, ProviderSettings

    with OpenAICompatProvider("local", ProviderSettings(kind="ollama")) as provider:
        result = provider.embed(["some text"], "nomic-embed-text", on_input_error="collect")
"""

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
from kbdesk.providers.openai_compat import OpenAICompatProvider, UsageCallback, plan_batches
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
