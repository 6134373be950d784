"""Timing: one call, interleaved rounds over several methods, best-of runs, and their summaries.

Every figure is seconds while measured and milliseconds in summaries.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``(seconds, result)`` of one call."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def summary(samples_s: Sequence[float]) -> dict[str, float]:
    """p50, p95, mean and min in ms, and the number of samples."""
    ms = np.asarray(samples_s, dtype=np.float64) * 1e3
    return {
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "mean": float(ms.mean()),
        "min": float(ms.min()),
        "n": int(ms.size),
    }


def repeat(fn: Callable[[Any], Any], inputs: Iterable[Any], warmup: int = 0) -> tuple[list[Any], list[float]]:
    """``fn`` on each input in turn, after ``warmup`` untimed calls on the first inputs; outputs and seconds."""
    inputs = list(inputs)
    for item in inputs[:warmup]:
        fn(item)
    outputs, times = [], []
    for item in inputs:
        t = time.perf_counter()
        outputs.append(fn(item))
        times.append(time.perf_counter() - t)
    return outputs, times


def timed_rounds(
    methods: Mapping[str, Callable[[int], Any]], count: int, warmup: int, offset: int = 0
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Run every method on query i, in a fresh random order for each query (so noise, cache
    effects and whatever ran just before are shared by all columns); return per-method
    timings (s) and outputs of the ``count`` timed queries after ``warmup`` untimed ones."""
    names = list(methods)
    times: dict[str, list[float]] = {name: [] for name in names}
    outputs: dict[str, list[Any]] = {name: [] for name in names}
    order = random.Random(len(names) * 1000 + count)
    for i in range(warmup + count):
        for name in order.sample(names, len(names)):
            t = time.perf_counter()
            out = methods[name](offset + i)
            elapsed = time.perf_counter() - t
            if i >= warmup:
                times[name].append(elapsed)
                outputs[name].append(out)
    return times, outputs


def paired_ratios(times: Mapping[str, Sequence[float]], base: str) -> dict[str, float]:
    """For every other method: the median over queries of its time ÷ ``base``'s time for the same
    query (steadier than a ratio of medians when other processes come and go)."""
    ref = np.asarray(times[base])
    return {name: float(np.median(np.asarray(ts) / ref)) for name, ts in times.items() if name != base}


def best_of(
    fns: Sequence[Callable[[], Any]],
    rounds: int,
    *,
    budget: float = 0.0,
    max_rounds: int = 50,
    clock: Callable[[], float] = time.perf_counter,
    collect: bool = False,
) -> tuple[list[float], list[Any]]:
    """Best time of each function, and its last result. The functions take turns, so both sides of a
    comparison see the same machine load: at least ``rounds`` turns, more (up to ``max_rounds``)
    until each has run ``budget`` seconds in all. ``collect`` runs ``gc.collect()`` before each call;
    the previous result is dropped before each call either way."""
    best = [float("inf")] * len(fns)
    spent = [0.0] * len(fns)
    results: list[Any] = [None] * len(fns)
    turn = 0
    while turn < rounds or (min(spent) < budget and turn < max_rounds):
        for k, fn in enumerate(fns):
            results[k] = None
            if collect:
                gc.collect()
            started = clock()
            results[k] = fn()
            took = clock() - started
            best[k] = min(best[k], took)
            spent[k] += took
        turn += 1
    return best, results
