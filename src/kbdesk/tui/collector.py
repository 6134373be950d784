"""The cyclic garbage collector, set for an app whose one thread draws every frame.

Python's collector runs on whichever thread allocates when a threshold is crossed: in the
app that is the UI thread, mostly while it draws. With the defaults it runs a few times a
second while frames are drawn, and every so often a full collection walks every object of
the process — the imported modules of Textual, Rich, numpy and kbdesk included: measured at
0.3–1.0 s on a loaded 2-core machine, often right after a screen is left (its widgets are
the garbage), i.e. on the next key (see docs/BENCHMARKS.md, *The TUI at real size*).

:func:`tune` makes young collections rarer (every 10,000 allocations, not 700) and
:func:`freeze` moves everything alive at start-up (modules, classes, the first screen)
out of the collector's sight for good, so a full collection walks only what the app made
since. Garbage is still collected, in fewer and shorter pauses.

What is left are the collections of the middle generation: every screen left is a few
thousand widgets, styles and caches in reference cycles, and every 20 young collections
the collector walks all that has piled up since — 80,000–100,000 objects after a dozen
screens, 0.1–0.6 s on a loaded machine, and it fell inside whatever the user was waiting
for (opening a KB, the next key). :class:`IdleCollector` collects them while the user is
not waiting for anything: when no key or mouse event came for :data:`IDLE_AFTER_S` and
nothing the app started for the user (a read in a worker) has been running for as long,
it collects what is young (and, before the collector's own full collection would come
due, everything), so each pause is short and falls between keys; the collector's own
thresholds still apply while keys keep coming.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

THRESHOLDS = (10_000, 20, 10)
IDLE_AFTER_S = 0.15
"""No input for this long: the user is reading, a collection delays nothing they wait for
(keys come further apart than this when a person reads what a key showed)."""
CHECK_EVERY_S = 0.1
"""How often the app asks :meth:`IdleCollector.tick` whether to collect."""


def tune() -> None:
    gc.set_threshold(*THRESHOLDS)


def freeze() -> None:
    """What is alive now lives as long as the process: never walked again."""
    gc.freeze()


class IdleCollector:
    """Collects the young and middle generations between keys (see the module's text).

    The app calls :meth:`input` on every key and mouse event and :meth:`tick` every
    :data:`CHECK_EVERY_S`; ``busy`` says whether the app is still working on something the
    user asked for (the answer is not on screen yet: no collection then, nor right after)."""

    def __init__(self, busy: Callable[[], bool] = lambda: False) -> None:
        self.busy = busy
        self.last_input = time.monotonic()
        self.collections: list[tuple[int, float]] = []
        """(generation, seconds) of the last collections made here (a few kept, for a look)."""

    def input(self) -> None:
        self.last_input = time.monotonic()

    def tick(self) -> int | None:
        """Collect if the app is idle and young objects piled up; the generation collected."""
        if self.busy():
            self.input()  # idle only once what the user waits for has been shown for a while
            return None
        if time.monotonic() - self.last_input < IDLE_AFTER_S:
            return None
        _young, middle, old = gc.get_count()
        if old >= THRESHOLDS[2] - 1:  # the collector's own full collection would come soon
            generation = 2
        elif middle >= 1:  # at least one young collection passed objects on since the last time
            generation = 1
        else:
            return None
        started = time.perf_counter()
        gc.collect(generation)
        self.collections = [*self.collections[-9:], (generation, time.perf_counter() - started)]
        return generation
