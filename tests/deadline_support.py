"""A guard for calls that must answer: a test fails (instead of hanging the suite) when
the call is still running after a generous while — the shape of a matcher that
backtracks or a request with no deadline. Not a timing assertion: the bound is far above
what a working build takes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

GUARD = 30.0


def answers(fn: Callable[..., Any], *args: Any, within: float = GUARD, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` run in a thread of its own; what it returns (or raises).
    Fails the test when it has not answered within ``within`` seconds."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="guarded-call")
    thread.start()
    thread.join(within)
    if thread.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} gave no answer within {within:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
