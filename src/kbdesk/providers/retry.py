"""When to retry a request and how long to wait first."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})

BASE_DELAY = 0.5
"""Seconds before the first retry when the server does not say (doubled each time)."""
MAX_DELAY = 30.0
"""Longest computed wait between two attempts (a server's Retry-After may ask for more)."""


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or 500 <= status < 600


def parse_retry_after(value: str | None, now: Callable[[], datetime] | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = now() if now else datetime.now(UTC)
        seconds = (when - current).total_seconds()
    if seconds != seconds or seconds == float("inf"):  # NaN or infinite: ignore the header
        return None
    return max(0.0, seconds)


def backoff_delay(retry: int, retry_after: float | None, rng: random.Random | None = None) -> float:
    """The wait before retry number ``retry`` (1-based).

    The server's ``Retry-After`` is honoured exactly; otherwise exponential backoff
    from :data:`BASE_DELAY`, capped at :data:`MAX_DELAY`, with "equal jitter" (a random
    half added to a fixed half) so that many clients do not retry in lockstep.
    """
    if retry_after is not None:
        return retry_after
    ceiling = min(MAX_DELAY, BASE_DELAY * 2 ** (retry - 1))
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def connect_problem(exc: BaseException) -> str:
    """What kept a connection from being made, in a few words: "connection refused"
    (nothing listens on the port), "no such host", or the error's own short text."""
    text = str(exc).lower()
    if "refused" in text or "errno 111" in text or "errno 61" in text:
        return "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return "no such host"
    return " ".join(str(exc).split())[:120] or type(exc).__name__
