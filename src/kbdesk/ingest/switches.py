"""Threads taking turns on the GIL more often while an ingestion run is under way."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SWITCH_INTERVAL = 0.0005  # seconds a thread may hold the GIL while others wait, during a run

_switches = threading.Lock()
_runs = [0, 0.0]  # runs under way, the interval before the first


@contextmanager
def short_switches() -> Iterator[None]:
    """Let threads take turns on the GIL every 0.5 ms (not 5) while a run is under way.

    A run's threads mostly wait on files, the database or a provider, and after each of
    those waits a thread queues for the GIL behind whichever thread is busy in Python —
    by default for up to 5 ms, which on small files costs more than the work itself
    (measured 2.4× on 3,000 notes: see docs/BENCHMARKS.md). The interval is the
    interpreter's own setting: it goes back to what it was when the last run ends.
    """
    with _switches:
        if _runs[0] == 0:
            _runs[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(_runs[1], SWITCH_INTERVAL))
        _runs[0] += 1
    try:
        yield
    finally:
        with _switches:
            _runs[0] -= 1
            if _runs[0] == 0:
                sys.setswitchinterval(_runs[1])
