"""What keeps an app's UI thread busy: a sampling profile of one thread, and the collector's pauses.

    with UiSampler() as sampler, GcPauses() as gc_pauses:
        ...  # drive the app
    print(sampler.report(), gc_pauses.report())

The sampler looks at the UI thread's stack every ``interval`` seconds from a thread of its
own (it takes the interpreter lock for that look, so keep the interval a few ms) and counts,
for every function on the stack, the samples it was in (inclusive) and the samples it was
the innermost (self). Samples where the thread waits in the event loop's ``select`` are idle.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections import Counter
from typing import Any

IDLE = {"select", "_run_once", "run_forever", "poll"}


class UiSampler:
    def __init__(self, interval: float = 0.002, thread_id: int | None = None) -> None:
        self.interval = interval
        self.thread_id = thread_id or threading.get_ident()
        self.total = 0
        self.idle = 0
        self.inclusive: Counter[str] = Counter()
        self.innermost: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ui-sampler", daemon=True)

    def __enter__(self) -> UiSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            frame = sys._current_frames().get(self.thread_id)
            if frame is None:
                continue
            self.total += 1
            if frame.f_code.co_name in IDLE:
                self.idle += 1
                continue
            names = []
            f: Any = frame
            while f is not None:
                names.append(_name(f))
                f = f.f_back
            self.innermost[names[0]] += 1
            for name in set(names):
                self.inclusive[name] += 1

    def report(self, top: int = 25) -> str:
        busy = self.total - self.idle
        lines = [f"UI thread: {self.total} samples every {self.interval * 1e3:.0f} ms, {busy} busy"]
        lines.append("  inclusive (kbdesk and textual functions):")
        shown = [(n, c) for n, c in self.inclusive.most_common() if "kbdesk" in n or "textual" in n]
        lines += [f"    {c / max(busy, 1):6.1%} {n}" for n, c in shown[:top]]
        lines.append("  innermost:")
        lines += [f"    {c / max(busy, 1):6.1%} {n}" for n, c in self.innermost.most_common(top)]
        return "\n".join(lines)


def _name(frame: Any) -> str:
    path = frame.f_code.co_filename
    for marker in ("site-packages/", "src/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{frame.f_code.co_name}"


class GcPauses:
    """Every collection of the cyclic garbage collector: its generation and how long it took."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((info["generation"], time.perf_counter() - self._started))

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def report(self) -> str:
        parts = []
        for gen in (0, 1, 2):
            times = [t for g, t in self.pauses if g == gen]
            if times:
                parts.append(
                    f"gen {gen}: {len(times)} collections, {sum(times) * 1e3:.0f} ms in all, "
                    f"longest {max(times) * 1e3:.1f} ms"
                )
        return "collector: " + ("; ".join(parts) or "no collection")
