"""Where one first paint's time goes: a timeline per round of Enter → the KB screen painted.

Not part of the test run; a diagnosis beside ``bench_tui.py`` (it reuses its cached KB and its
frame hook). Every round prints, in ms from the key: when the app handled the key, when the
KB screen composed and mounted, when its rows were in the table, each frame drawn, and the
paint; beside it the UI thread's own CPU time and context switches over the round (a switch
it chose: waiting for the interpreter lock or a timer; one forced on it: the kernel gave the
core to another process), the collector's pauses, and any worker reading in that window.

    .venv/bin/python bench/paint_trace.py --load 2 --rounds 15
"""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

import bench_tui
from harness import ROOT, parser

Event = tuple[float, str]
COLD = False  # --cold: the KB's rows forgotten before each Enter (read after the key)
TYPES = False  # --types: what the collector's older generations hold when it walks them


class Timeline:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ui_thread = threading.get_ident()

    def mark(self, what: str) -> None:
        where = "" if threading.get_ident() == self.ui_thread else " [worker]"
        self.events.append((time.perf_counter(), what + where))

    def between(self, start: float, end: float) -> list[Event]:
        return [(t, w) for t, w in self.events if start <= t <= end]


def wrap(owner: Any, name: str, timeline: Timeline, label: str | None = None) -> None:
    original = getattr(owner, name)
    label = label or f"{owner.__name__}.{name}"

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        timeline.mark(label + " >")
        try:
            return original(*args, **kwargs)
        finally:
            timeline.mark(label + " <")

    setattr(owner, name, wrapped)


def thread_usage() -> tuple[float, int, int]:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime, usage.ru_nvcsw, usage.ru_nivcsw


async def trace(home: Path, rounds: int) -> list[dict[str, Any]]:
    from kbdesk.desk import Desk
    from kbdesk.tui import doc_cache
    from kbdesk.tui.app import build_app
    from kbdesk.tui.screens.kb_detail import KbDetailScreen
    from kbdesk.tui.screens.kb_list import KbListScreen
    from kbdesk.tui.widgets.documents_table import DocumentsTable

    timeline = Timeline()
    if os.environ.get("TRACE_NO_PREFETCH"):  # an experiment: the read starts when the screen mounts
        from kbdesk.tui.doc_cache import DocRowsCache

        DocRowsCache.prefetch = lambda self, kb_id: None  # type: ignore[method-assign]
    if os.environ.get("TRACE_SWITCH_MS"):
        sys.setswitchinterval(float(os.environ["TRACE_SWITCH_MS"]) / 1e3)
    wrap(KbListScreen, "action_open_kb", timeline)
    wrap(KbDetailScreen, "compose", timeline)
    wrap(KbDetailScreen, "on_mount", timeline)
    wrap(KbDetailScreen, "_loaded", timeline)
    wrap(DocumentsTable, "load", timeline)
    wrap(Desk, "list_kbs", timeline)
    wrap(Desk, "documents", timeline)
    wrap(Desk, "document_briefs", timeline)
    wrap(doc_cache, "build_rows", timeline)

    def collected(phase: str, info: dict[str, Any]) -> None:
        generation = info["generation"]
        if phase == "start" and generation and TYPES:
            from collections import Counter

            sizes = [len(gc.get_objects(g)) for g in range(generation + 1)]
            common = Counter(type(o).__name__ for o in gc.get_objects(generation)).most_common(6)
            timeline.mark(f"gc{generation} start, objects by generation {sizes}, gen {generation}: {common}")
            return
        timeline.mark(f"gc{generation} {phase}" + (f" ({info['collected']} collected)" if phase == "stop" else ""))

    gc.callbacks.append(collected)
    app = build_app(home=home)
    app.tune_collector = not bench_tui.PLAIN_GC
    original_display = app._display

    def display(screen: Any, renderable: Any) -> None:
        timeline.mark("frame >")
        original_display(screen, renderable)
        timeline.mark(f"frame < ({type(screen).__name__})")

    app._display = display
    out: list[dict[str, Any]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        frames = bench_tui.Frames(app)
        await bench_tui.settle(pilot, lambda: isinstance(app.screen, KbListScreen) and app.screen.table.row_count == 1)
        await pilot.pause(0.3)
        for _ in range(rounds):
            usage: dict[str, tuple[float, int, int]] = {}

            def ready(usage: dict[str, tuple[float, int, int]] = usage) -> bool:
                done = isinstance(app.screen, KbDetailScreen) and app.screen.table.row_count > 0
                if done:
                    usage["end"] = thread_usage()  # on the UI thread, in the frame that shows the rows
                return done

            if COLD:
                app.doc_rows.forget(app.screen.table.selected.id)  # nothing kept: read after the key
            shown = frames.until(ready)
            usage["start"] = thread_usage()
            process_start = time.process_time()
            start = time.perf_counter()
            bench_tui.send_key(app, "enter")
            end = await bench_tui.wait(shown)
            process_cpu = time.process_time() - process_start
            cpu = usage["end"][0] - usage["start"][0]
            voluntary = usage["end"][1] - usage["start"][1]
            forced = usage["end"][2] - usage["start"][2]
            out.append(
                {
                    "ms": (end - start) * 1e3,
                    "ui_cpu_ms": cpu * 1e3,
                    "process_cpu_ms": process_cpu * 1e3,
                    "voluntary": voluntary,
                    "forced": forced,
                    "events": [((t - start) * 1e3, w) for t, w in timeline.between(start - 0.5, end)],
                }
            )
            await pilot.pause(0.2)
            back = frames.until(lambda: isinstance(app.screen, KbListScreen))
            bench_tui.send_key(app, "escape")
            await bench_tui.wait(back)
            await pilot.pause(0.5)
    gc.callbacks.remove(collected)
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--docs", type=int, default=12_500)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--load", type=int, default=0, metavar="N", help="N busy-loop processes beside the app")
    ap.add_argument("--load-nice", type=int, default=0, metavar="N", help="the busy loops' niceness (default 0)")
    ap.add_argument("--plain-gc", action="store_true")
    ap.add_argument("--cold", action="store_true", help="forget the KB's rows before each Enter")
    ap.add_argument("--types", action="store_true", help="what each older-generation collection walks")
    ap.add_argument("--all", action="store_true", help="the timeline of every round, not only the slow ones")
    args = ap.parse_args()
    bench_tui.PLAIN_GC = args.plain_gc
    global COLD, TYPES
    COLD, TYPES = args.cold, args.types
    home = bench_tui.cached_home("paint", args.docs)
    print(f"load average {os.getloadavg()[0]:.2f} before the busy loops")
    with bench_tui.busy_loops(args.load, args.load_nice):
        rounds = asyncio.run(trace(home, args.rounds))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    times = sorted(r["ms"] for r in rounds)
    slow = times[len(times) // 2] * 2
    for i, r in enumerate(rounds):
        print(
            f"round {i:2d}: {r['ms']:7.1f} ms  UI thread CPU {r['ui_cpu_ms']:6.1f} ms, process CPU "
            f"{r['process_cpu_ms']:6.1f} ms, switches waited {r['voluntary']}, forced {r['forced']}"
        )
        if args.all or r["ms"] >= slow:
            for t, what in r["events"]:
                print(f"      {t:8.1f}  {what}")


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.setswitchinterval(sys.getswitchinterval())
    main()
