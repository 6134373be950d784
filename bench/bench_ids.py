"""Benchmark: inserting chunk rows keyed by random (v4) or time-ordered (v7) UUIDs.

kbdesk's chunks have a unique index on their id. A random id lands at a random place in
that index, so once the index outgrows SQLite's page cache each insert touches another
page; a time-ordered id lands at the right edge. This measures adding 30,000 rows to a
table that already holds 300,000 (a fresh connection, so SQLite's own cache starts
cold), with kbdesk's two id makers, in turns. Not part of the test run.

    .venv/bin/python bench/bench_ids.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kbdesk.store.ids import new_ids, ordered_uuids
from kbdesk.store.sqlite.driver import choose_driver

TEXT = "word " * 100


def add_rows(conn, make, seq: int, count: int, batch: int) -> int:
    """Insert ``count`` rows in transactions of ``batch``, ids from ``make``; the next seq."""
    for _ in range(count // batch):
        ids = make(batch)
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(seq + i, ids[i], TEXT) for i in range(batch)])
        conn.execute("COMMIT")
        seq += batch
    return seq


def run(make, existing: int = 300_000, more: int = 30_000, batch: int = 10_000) -> float:
    module = choose_driver().module
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ids.db")
        conn = module.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, content TEXT)")
        seq = add_rows(conn, make, 1, existing, batch)
        conn.close()
        conn = module.connect(path, isolation_level=None)  # SQLite's own cache starts cold
        start = time.perf_counter()
        add_rows(conn, make, seq, more, batch)
        seconds = time.perf_counter() - start
        conn.close()
    return seconds


def main() -> None:
    makers = {"random (v4)": new_ids, "time-ordered (v7)": lambda n: [str(u) for u in ordered_uuids(n)]}
    best = {name: float("inf") for name in makers}
    for _ in range(3):
        for name, make in makers.items():
            best[name] = min(best[name], run(make))
    print(f"load average {os.getloadavg()[0]:.1f}; 30,000 rows added to 300,000, best of 3")
    print("| ids | seconds |\n|---|---:|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
