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
"""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 20, 10)


def tune() -> None:
    gc.set_threshold(*THRESHOLDS)


def freeze() -> None:
    """What is alive now lives as long as the process: never walked again."""
    gc.freeze()
