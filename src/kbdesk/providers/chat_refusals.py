"""What a chat server's refusal means: which final statuses are worth sending again, and
the error each other one is (the prompt over the context, tools refused, a server failing,
a request rejected). :class:`kbdesk.providers.chat.ChatClient` asks :func:`refusal`."""

from __future__ import annotations

import re
from typing import Any

from kbdesk.providers.errors import (
    ContextOverflowError,
    ProviderError,
    ProviderRequestError,
    ProviderUnavailableError,
)
from kbdesk.providers.transport import Transport, who
from kbdesk.providers.validate import says_context_overflow, says_invalid_request

RETRY_STATUSES = frozenset({429, 502, 503, 504})
"""The only statuses worth sending a chat request again for: the server did not start on it."""
OVERFLOW = "the conversation is too long for the model's context"

_TOOL_WORDS = re.compile(r"\btools?\b|tool[_ ]?(choice|call|use)|function[_ ]?call", re.I)
_REFUSAL_WORDS = re.compile(
    r"support|requires?|enable|jinja|not allowed|unknown|unrecognized|invalid|"
    r"extra (fields|inputs)|not permitted",
    re.I,
)
_CHOICE_WORDS = re.compile(r"tool[_ ]choice", re.I)


class ToolsRejectedError(ProviderRequestError):
    """The server (or model) does not accept tools; the caller may retry without them.
    ``choice``: the refusal names ``tool_choice`` (retry with tools but without forcing)."""

    def __init__(self, message: str, *, choice: bool = False, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.choice = choice


def says_tools_rejected(message: str) -> bool:
    return bool(_TOOL_WORDS.search(message) and _REFUSAL_WORDS.search(message))


def refusal(
    name: str, transport: Transport, status: int, message: str, model: str, payload: dict[str, Any]
) -> ProviderError | None:
    """The error a final status means, or None for a status worth retrying."""
    named, said = who(name, model), f": {message}" if message else ""
    if status in RETRY_STATUSES:
        return None
    if status not in (401, 403, 404) and says_context_overflow(message):
        return ContextOverflowError(
            f"{named}: {OVERFLOW} (HTTP {status}{said})", provider=name, model=model, status=status
        )
    if (
        payload.get("tools")
        and status >= 400
        and says_tools_rejected(message)
        and not (says_invalid_request(message) and "messages" in message)
    ):
        choice = "tool_choice" in payload and bool(_CHOICE_WORDS.search(message))
        return ToolsRejectedError(
            f"{named}: the server refused the tools (HTTP {status}){said}",
            choice=choice,
            provider=name,
            model=model,
            status=status,
        )
    if status >= 500:
        kind = ProviderRequestError if says_invalid_request(message) else ProviderUnavailableError
        return kind(
            f"{named}: the server failed, HTTP {status}{said} (not sent again)",
            provider=name,
            model=model,
            status=status,
        )
    try:
        transport.raise_for_status(status, message, model, "/chat/completions")
    except ProviderError as exc:
        return exc
    return ProviderRequestError(
        f"{named}: the server rejected the request (HTTP {status}){said}",
        provider=name,
        model=model,
        status=status,
    )
