"""A circuit breaker for query-time calls: a provider that just failed is not asked again
for a short, growing pause.

A search embeds its query while someone waits for the answer. When the embedding server
is down, asking it for every search costs each one the whole retry policy (seconds), and
on a server every request that waits holds a thread. So after a failure the provider's
breaker *opens*: for :data:`FIRST_PAUSE` seconds every call fails at once with the same
reason (the search then answers by keyword, with a notice). When the pause is over one
call is let through (*half-open*): success closes the breaker, another failure opens it
again for twice as long, up to :data:`MAX_PAUSE`.

Breakers are kept per provider base URL in this process (:func:`breaker_for`), so every
desk a server holds (one per user on Postgres) sees the same outage. Only failures that
concern the server (down, timeouts, 5xx, refused key, missing model, malformed answers)
trip it; a fault of one input (empty, too long, an unusable vector) does not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kbdesk.providers.errors import (
    EmptyInputError,
    InputTooLargeError,
    InvalidVectorError,
    ProviderConfigError,
    ProviderError,
    ProviderUnavailableError,
)

FIRST_PAUSE = 5.0
"""Seconds a provider is left alone after its first failure. Long enough that a burst of
searches (20 at once over HTTP, a user retyping) costs one failed call, short enough that
a server that is back is used again before anyone wonders."""
MAX_PAUSE = 120.0
"""The longest pause: a server down for good is still asked again every two minutes."""


@dataclass
class _State:
    failures: int = 0
    until: float = 0.0  # the pause ends (monotonic seconds)
    failed_at: float = 0.0
    reason: str = ""
    trial: bool = False  # a half-open call is in flight


class BreakerOpen(ProviderUnavailableError):
    """The provider failed a moment ago and is not asked again yet."""


class Breaker:
    """The breaker of one provider (thread-safe)."""

    def __init__(
        self,
        name: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        first: float = FIRST_PAUSE,
        most: float = MAX_PAUSE,
    ) -> None:
        self.name = name
        self._clock = clock
        self._first, self._most = first, most
        self._lock = threading.Lock()
        self._state = _State()

    @property
    def open(self) -> bool:
        with self._lock:
            return self._state.failures > 0 and self._clock() < self._state.until

    def check(self, model: str | None = None) -> None:
        """Raise :class:`BreakerOpen` while the pause lasts (or while the one trial call
        after it is still out); otherwise let the call through."""
        with self._lock:
            state, now = self._state, self._clock()
            if state.failures == 0:
                return
            if now >= state.until and not state.trial:
                state.trial = True  # half-open: this call is the trial
                return
            left = max(0.0, state.until - now)
            ago = now - state.failed_at
            wait = f"for {left:.0f} s" if left >= 1 else "until the call being tried answers"
        raise BreakerOpen(
            f"provider '{self.name}' is not asked again {wait}: it failed {ago:.0f} s ago ({state.reason})",
            provider=self.name,
            model=model,
        )

    def succeeded(self) -> None:
        with self._lock:
            self._state = _State()

    def failed(self, error: BaseException) -> None:
        """Count ``error`` if it is the server's fault (see the module docstring)."""
        if not trips(error):
            with self._lock:
                self._state.trial = False
            return
        with self._lock:
            state, now = self._state, self._clock()
            state.failures += 1
            pause = min(self._most, self._first * 2 ** (state.failures - 1))
            state.until, state.failed_at, state.trial = now + pause, now, False
            state.reason = _short(str(error))

    def call(self, fn: Callable[[], object], model: str | None = None) -> object:
        """``fn()`` through the breaker."""
        self.check(model)
        try:
            value = fn()
        except BaseException as exc:
            self.failed(exc)
            raise
        self.succeeded()
        return value


def trips(error: BaseException) -> bool:
    """Whether ``error`` says the provider itself is failing (not one input, not a setting)."""
    if not isinstance(error, ProviderError) or isinstance(error, BreakerOpen):
        return False
    return not isinstance(error, (EmptyInputError, InputTooLargeError, InvalidVectorError, ProviderConfigError))


def _short(message: str, limit: int = 120) -> str:
    text = " ".join(message.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_breakers: dict[str, Breaker] = {}
_registry_lock = threading.Lock()


def breaker_for(key: str, name: str) -> Breaker:
    """The process's breaker for the provider at ``key`` (its base URL), named ``name``."""
    with _registry_lock:
        found = _breakers.get(key)
        if found is None:
            found = _breakers[key] = Breaker(name)
        return found


def forget_breakers() -> None:
    """Close every breaker (tests; a provider set up anew)."""
    with _registry_lock:
        _breakers.clear()


__all__ = ["FIRST_PAUSE", "MAX_PAUSE", "Breaker", "BreakerOpen", "breaker_for", "forget_breakers", "trips"]
