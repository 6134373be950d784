"""Benchmark: the TUI at real size, driven through the real app with Textual's Pilot.

Not part of the test run. A keyword-only KB of ``--docs`` small files (12,500) and one of
``--base`` (8,000) are built once through ``Desk.add`` and cached under ``bench/results/``.
Then, in the real app (headless, 120×40):

- **first paint of the KB screen**: Enter on the KB list → the first frame that shows the
  documents table filled; several rounds (Escape back in between). Beside it, the same
  12,500 rows loaded the plain way, into Textual's ``DataTable`` (every row added, then
  drawn), which is what the KB screen did before and what a Textual app usually does;
- **key-to-paint while adding ``--add`` (3,000) files to the ``--base`` KB**: every 50 ms
  a Down (or Up) key is sent as the terminal would send it, and the time until a frame
  shows the cursor on its new row is recorded, for the whole run;
- **quit dialog**: Ctrl+Q during that run → the first frame showing the dialog.

The add runs the app's way (a child process) and, beside it in the same run, in the app's
own threads (as the app did before) and as `kbdesk add` in another process.
``--load N`` starts N busy-loop processes first (a loaded machine: 2 on these 2 cores)
and stops them at the end; that run's table goes to its own part of the document.

A "frame" is a call of the app's display hook (``App._display``: what would be written to
the terminal); the key is posted to the app's driver as a real key would be.

    .venv/bin/python bench/bench_tui.py
    .venv/bin/python bench/bench_tui.py --quick     # 2,000 / 1,500 + 500 documents
    .venv/bin/python bench/bench_tui.py --load 2    # beside two CPU-bound processes
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import (
    ROOT,
    command_line,
    fmt_ms,
    kbdesk_cli,
    machine_info,
    machine_line,
    markdown_table,
    parser,
    replace_section,
    results_dir,
    save_result,
)

DOC = ROOT / "docs" / "BENCHMARKS.md"
MARKERS = ("<!-- tui:start -->", "<!-- tui:end -->")  # the generated part of the TUI section
LOADED_MARKERS = ("<!-- tui-loaded:start -->", "<!-- tui-loaded:end -->")  # the same, with --load
TARGETS = {"first_paint": 300.0, "key_p95": 100.0, "key_worst": 250.0, "quit": 100.0}
LOADED_TARGETS = {"first_paint": 300.0, "key_p95": 150.0, "key_worst": 400.0, "quit": 150.0}


@contextmanager
def busy_loops(count: int, nice: int = 0) -> Iterator[None]:
    """``count`` processes that only spin (CPU-bound work beside the app), stopped at the end;
    ``nice``: their niceness (0, as the app's: the kernel shares the cores evenly)."""
    command = [sys.executable, "-c", f"import os; os.nice({nice})\nwhile True: pass"]
    procs = [subprocess.Popen(command) for _ in range(count)]
    try:
        if procs:
            time.sleep(2.0)  # the scheduler sees them as busy before anything is measured
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()


# ── the data ───────────────────────────────────────────────────────────────────
def write_files(folder: Path, count: int, start: int = 0) -> None:
    """``count`` small text files in 50 sub-folders, the same names repeated in each (as real trees have)."""
    for i in range(start, start + count):
        sub = folder / f"part{i % 50:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note{i // 50:04d}.txt").write_text(f"Note {i}: the ferry to pier {i % 17} leaves at {i % 24}h.\n")


def cached_home(name: str, docs: int) -> Path:
    """A KBDESK_HOME with a keyword-only KB 'big' of ``docs`` documents, built once."""
    home = results_dir() / f"tui-{name}-{docs}"
    marker = home / "built"
    if marker.exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    corpus = home / "corpus"
    write_files(corpus, docs)
    os.environ["KBDESK_HOME"] = str(home)
    from kbdesk import open_desk

    with open_desk(home=home) as desk:
        desk.create_kb("big", keyword_only=True)
        report = desk.add("big", [corpus])
        assert len(report.added) == docs, report.failed[:3]
    marker.write_text("ok\n")
    return home


# ── frames and keys ────────────────────────────────────────────────────────────
class Frames:
    """Watches the app's display hook: the time of the first frame after which ``ready()`` holds."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[float]]] = []
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if renderable is None or not self._waiters:
                return
            now = time.perf_counter()
            for ready, future in list(self._waiters):
                if not future.done() and ready():
                    future.set_result(now)
                    self._waiters.remove((ready, future))

        app._display = display

    def until(self, ready: Callable[[], bool]) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append((ready, future))
        return future


def send_key(app: Any, key: str) -> None:
    """A key as the terminal driver delivers it."""
    from textual import events

    event = events.Key(key, None)
    event.set_sender(app)
    app._driver.send_message(event)


async def wait(future: asyncio.Future[float], timeout: float = 30.0) -> float:
    return await asyncio.wait_for(future, timeout)


async def settle(pilot: Any, ready: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit("the app did not get there in time")
        await pilot.pause(0.02)


# ── 1. first paint ─────────────────────────────────────────────────────────────
async def first_paint(home: Path, rounds: int) -> dict[str, list[float]]:
    """Enter → the KB screen filled; Escape → the KB list; at once a key (help) → its screen painted;
    then Enter on the KB whose rows the app has forgotten → the KB screen filled (a cold open: the
    documents read after the key, as when a KB is opened as soon as the list shows it)."""
    from kbdesk.tui.app import build_app
    from kbdesk.tui.screens.help import HelpScreen
    from kbdesk.tui.screens.kb_detail import KbDetailScreen
    from kbdesk.tui.screens.kb_list import KbListScreen

    app = build_app(home=home)
    app.tune_collector = not PLAIN_GC
    times: dict[str, list[float]] = {"paint": [], "leave": [], "next_key": [], "cold": []}

    async def timed(what: str, key: str, ready: Callable[[], bool]) -> None:
        shown = frames.until(ready)
        start = time.perf_counter()
        send_key(app, key)
        times[what].append(await wait(shown) - start)

    async with app.run_test(size=(120, 40)) as pilot:
        frames = Frames(app)
        await settle(pilot, lambda: isinstance(app.screen, KbListScreen) and app.screen.table.row_count == 1)
        await pilot.pause(0.3)
        with profiled("first paint, leaving the KB screen, the next key"):
            for _ in range(rounds):
                await timed(
                    "paint", "enter", lambda: isinstance(app.screen, KbDetailScreen) and app.screen.table.row_count > 0
                )
                await pilot.pause(0.2)
                await timed("leave", "escape", lambda: isinstance(app.screen, KbListScreen))
                await timed("next_key", "question_mark", lambda: isinstance(app.screen, HelpScreen))
                await pilot.pause(0.2)
                back = frames.until(lambda: isinstance(app.screen, KbListScreen))
                send_key(app, "escape")
                await wait(back)
                await pilot.pause(0.2)
                app.doc_rows.forget(app.screen.table.selected.id)  # nothing kept: read after the key
                await timed(
                    "cold", "enter", lambda: isinstance(app.screen, KbDetailScreen) and app.screen.table.row_count > 0
                )
                await pilot.pause(0.2)
                back = frames.until(lambda: isinstance(app.screen, KbListScreen))
                send_key(app, "escape")
                await wait(back)
                await pilot.pause(0.2)
    return times


PROFILE = False  # --profile: a sampling profile of the UI thread and the collector's pauses
PLAIN_GC = False  # --plain-gc: the collector as Python sets it (the app tunes it: kbdesk.tui.collector)


@contextmanager
def profiled(what: str) -> Iterator[None]:
    if not PROFILE:
        yield
        return
    from ui_profile import GcPauses, UiSampler

    with UiSampler() as sampler, GcPauses() as pauses:
        yield
    print(f"── {what}\n{sampler.report()}\n{pauses.report()}")


async def datatable_paint(home: Path, rounds: int) -> list[float]:
    """The same documents into Textual's DataTable, read off the UI thread too: the usual way."""
    from textual.app import App
    from textual.widgets import DataTable

    from kbdesk import open_desk
    from kbdesk.tui.format import human_size

    desk = open_desk(home=home)

    class Plain(App[None]):
        def compose(self) -> Any:
            yield DataTable(cursor_type="row")

        def fill(self, docs: list[Any]) -> None:
            table = self.query_one(DataTable)
            table.clear(columns=True)
            table.add_columns("Filename", "Size", "Chunks", "Status")
            table.add_rows([(d.filename, human_size(d.size_bytes), str(d.chunk_count), d.status) for d in docs])

    times = []
    try:
        app = Plain()
        async with app.run_test(size=(120, 40)) as pilot:
            frames = Frames(app)
            await pilot.pause(0.3)
            for _ in range(rounds):
                table = app.query_one(DataTable)
                table.clear(columns=True)
                await pilot.pause(0.2)
                shown = frames.until(lambda table=table: table.row_count > 0)
                start = time.perf_counter()

                def load() -> None:
                    docs = desk.documents("big")
                    app.call_from_thread(app.fill, docs)

                app.run_worker(load, thread=True)
                times.append(await wait(shown) - start)
                await pilot.pause(0.2)
    finally:
        desk.close()
    return times


# ── 2. and 3. keys and the quit dialog while indexing ──────────────────────────
async def while_indexing(home: Path, add: int, base: int, in_child: bool = True) -> dict[str, Any]:
    """``in_child``: the add in a child process (the app's way); else in the app's own threads."""
    from kbdesk.tui.app import build_app

    folder = more_files(home, add, base)
    app = build_app(home=home)
    app.ingest_in_child = in_child
    app.tune_collector = not PLAIN_GC
    keys: list[float] = []
    quits: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        frames = Frames(app)
        detail = await open_kb(app, pilot)
        table = detail.table
        kb_id = detail.kb.id
        idle = [await press_and_wait(app, frames, table) for _ in range(40)]  # the same keys, nothing running
        started = time.perf_counter()
        detail._add(type("Request", (), {"paths": [str(folder)], "include": [], "exclude": [], "sync": False})())
        await settle(pilot, lambda: app.ingesting(kb_id))
        with profiled(f"keys while indexing ({'child process' if in_child else 'app threads'})"):
            await keys_while(app, pilot, frames, detail, kb_id, keys, quits)
        elapsed = time.perf_counter() - started
        await settle(pilot, lambda: len(table.rows_by_id) == base + add)
    return {"keys": keys, "idle": idle, "quits": quits, "ingest_s": elapsed}


async def keys_while(
    app: Any, pilot: Any, frames: Frames, detail: Any, kb_id: str, keys: list[float], quits: list[float]
) -> None:
    """A key every 50 ms while the KB is indexed, the quit dialog (then No) every 25th time."""
    from kbdesk.tui.screens.confirm import ConfirmScreen

    table = detail.table
    n = 0
    while app.ingesting(kb_id):
        n += 1
        if n % 25 == 5:
            shown = frames.until(lambda: isinstance(app.screen, ConfirmScreen))
            start = time.perf_counter()
            send_key(app, "ctrl+q")
            quits.append(await wait(shown) - start)
            gone = frames.until(lambda: app.screen is detail)
            send_key(app, "n")
            await wait(gone)
            continue
        keys.append(await press_and_wait(app, frames, table))


async def while_cli_indexing(home: Path, add: int, base: int) -> list[float]:
    """The same keys while the same add runs in another process (``kbdesk add``): what is left of the
    latency when indexing does not share the app's interpreter (its GIL)."""
    import subprocess

    from kbdesk.tui.app import build_app

    folder = more_files(home, add, base)
    app = build_app(home=home)
    keys: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        frames = Frames(app)
        table = (await open_kb(app, pilot)).table
        env = {**os.environ, "KBDESK_HOME": str(home)}
        child = subprocess.Popen(kbdesk_cli("add", "big", folder, "-q"), env=env, stdout=subprocess.DEVNULL)
        try:
            while child.poll() is None:
                keys.append(await press_and_wait(app, frames, table))
        finally:
            child.wait()
    return keys


def more_files(home: Path, add: int, base: int) -> Path:
    """A fresh folder of ``add`` files the KB of ``base`` documents does not have yet."""
    folder = home / "more"
    shutil.rmtree(folder, ignore_errors=True)
    write_files(folder, add, start=base)
    return folder


async def open_kb(app: Any, pilot: Any) -> Any:
    """From the KB list (once it shows the KB) into the KB screen, once its table is filled."""
    from kbdesk.tui.screens.kb_detail import KbDetailScreen
    from kbdesk.tui.screens.kb_list import KbListScreen

    await settle(pilot, lambda: isinstance(app.screen, KbListScreen) and app.screen.table.row_count == 1)
    send_key(app, "enter")
    await settle(pilot, lambda: isinstance(app.screen, KbDetailScreen) and app.screen.table.row_count > 0)
    return app.screen


async def press_and_wait(app: Any, frames: Frames, table: Any) -> float:
    """Down (Up near row 30), then the seconds until a frame shows the cursor moved; 50 ms apart."""
    step = -1 if table.cursor_row >= 30 else 1
    target = table.cursor_row + step
    moved = frames.until(lambda: table.cursor_row == target)
    start = time.perf_counter()
    send_key(app, "down" if step > 0 else "up")
    elapsed = await wait(moved) - start
    await asyncio.sleep(0.05)
    return elapsed


def stats(samples: list[float]) -> dict[str, float]:
    ms = sorted(x * 1e3 for x in samples)
    if not ms:
        raise SystemExit("no samples: the run was over before anything was measured (use more documents)")
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return {"n": len(ms), "p50": statistics.median(ms), "p95": p95, "worst": ms[-1]}


def main() -> None:
    ap = parser(__doc__, quick="2,000-document KB, 1,500 + 500 added (a smoke run)")
    ap.add_argument("--docs", type=int, default=12_500)
    ap.add_argument("--base", type=int, default=8_000)
    ap.add_argument("--add", type=int, default=3_000)
    ap.add_argument("--rounds", type=int, default=15, help="rounds of the first paint (p95 of 15: the 14th)")
    ap.add_argument("--load", type=int, default=0, metavar="N", help="N busy-loop processes beside the app")
    ap.add_argument("--load-nice", type=int, default=0, metavar="N", help="the busy loops' niceness (default 0)")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/BENCHMARKS.md")
    ap.add_argument("--profile", action="store_true", help="print a sampling profile of the UI thread per phase")
    ap.add_argument("--plain-gc", action="store_true", help="leave the garbage collector as Python sets it")
    ap.add_argument("--only-paint", action="store_true", help="only the first paint (and leaving the screen)")
    args = ap.parse_args()
    global PROFILE, PLAIN_GC
    PROFILE, PLAIN_GC = args.profile, args.plain_gc
    if args.quick:
        args.docs, args.base, args.add, args.rounds = 2_000, 1_500, 500, 3
    big = cached_home("paint", args.docs)
    base_src = cached_home("base", args.base)
    with busy_loops(args.load, args.load_nice):
        result = measure(args, big, base_src)
    save_result(f"tui{'-quick' if args.quick else ''}{f'-load{args.load}' if args.load else ''}", result)
    if args.only_paint:
        print(result, os.getloadavg())
        return
    print(report(result))
    if not args.quick and not args.no_doc and not args.load_nice:  # the document's runs: loops at niceness 0
        replace_section(DOC, report(result), LOADED_MARKERS if args.load else MARKERS)


def measure(args: Any, big: Path, base_src: Path) -> dict[str, Any]:
    machine = machine_info()
    print(machine_line(machine))
    paint = asyncio.run(first_paint(big, args.rounds))
    if args.only_paint:
        return {
            "machine": machine,
            "load": args.load,
            "load_nice": args.load_nice,
            **{k: stats(v) for k, v in paint.items()},
        }
    plain = asyncio.run(datatable_paint(big, min(args.rounds, 7)))  # seconds a round: a comparison
    # a fresh copy of the base KB for every run: the add must find 3,000 new files
    work = results_dir() / "tui-work"

    def fresh() -> Path:
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base_src, work, ignore=shutil.ignore_patterns("corpus"))
        return work

    try:
        threads = asyncio.run(while_indexing(fresh(), args.add, args.base, in_child=False))
        live = asyncio.run(while_indexing(fresh(), args.add, args.base))
        other = asyncio.run(while_cli_indexing(fresh(), args.add, args.base))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "machine": machine,
        "command": command_line(),
        "load": args.load,
        "docs": args.docs,
        "base": args.base,
        "add": args.add,
        "first_paint": stats(paint["paint"]),
        "cold_paint": stats(paint["cold"]),
        "leave": stats(paint["leave"]),
        "next_key": stats(paint["next_key"]),
        "datatable_paint": stats(plain),
        "keys": stats(live["keys"]),
        "idle_keys": stats(live["idle"]),
        "thread_keys": stats(threads["keys"]),
        "thread_quit": stats(threads["quits"]),
        "thread_ingest_s": threads["ingest_s"],
        "other_process_keys": stats(other),
        "loadavg_end": list(os.getloadavg()),
        "quit": stats(live["quits"]),
        "ingest_s": live["ingest_s"],
    }


def report(r: dict[str, Any]) -> str:
    t = LOADED_TARGETS if r.get("load") else TARGETS

    def row(what: str, s: dict[str, float], target: str) -> dict[str, Any]:
        return {
            "measure": what,
            "n": s["n"],
            "p50 ms": fmt_ms(s["p50"]),
            "p95 ms": fmt_ms(s["p95"]),
            "worst ms": fmt_ms(s["worst"]),
            "target": target,
        }

    rows = [
        row(
            f"first paint of the KB screen, {r['docs']} documents (rows read ahead or kept)",
            r["first_paint"],
            f"≤ {t['first_paint']:.0f} ms",
        ),
        row(
            "  the same, nothing read ahead (its documents read after the key)",
            r["cold_paint"],
            f"≤ {t['first_paint']:.0f} ms",
        ),
        row("  the same rows in Textual's DataTable (all rows added)", r["datatable_paint"], "(comparison)"),
        row("Escape → the KB list painted (leaving that screen)", r["leave"], ""),
        row("  at once a key (?) → help painted", r["next_key"], ""),
        row(
            f"key → paint while the app adds {r['add']} files to {r['base']} (in a child process)",
            r["keys"],
            f"p95 ≤ {t['key_p95']:.0f}, worst ≤ {t['key_worst']:.0f} ms",
        ),
        row("  the same keys, the add in the app's own threads (before)", r["thread_keys"], "(comparison)"),
        row(
            "  the same keys, the same add run by `kbdesk add` in another process",
            r["other_process_keys"],
            "(comparison)",
        ),
        row("  the same keys on that KB, nothing running", r["idle_keys"], "(comparison)"),
        row("Ctrl+Q → quit dialog painted, during that run", r["quit"], f"≤ {t['quit']:.0f} ms"),
        row("  the same, the add in the app's own threads (before)", r["thread_quit"], "(comparison)"),
    ]
    ratio = r["datatable_paint"]["p50"] / r["first_paint"]["p50"]
    load = f" beside {r['load']} busy-loop processes (`--load {r['load']}`)" if r.get("load") else ""
    return (
        markdown_table(rows, align="lrrrrl")
        + f"\n\nFirst paint: the virtual table is {ratio:.1f}× faster than the DataTable (p50). "
        f"The add of {r['add']} files took {r['ingest_s']:.1f} s in a child process, "
        f"{r['thread_ingest_s']:.1f} s in the app's threads. Load average "
        f"{r['machine']['loadavg'][0]:.1f} at the start, {r['loadavg_end'][0]:.1f} at the end{load} "
        f"(2 cores shared with other work).\n\n`{r['command']}`"
    )


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
