#!/usr/bin/env python
"""kbdesk serve under load: what HTTP adds to a search, and a mixed load of searches and uploads.

Run from the repository root::

    .venv/bin/python bench/bench_serve.py            # 10k-chunk KB, 300 paired searches, 60 s load
    .venv/bin/python bench/bench_serve.py --quick    # 2k chunks, 100 searches, 15 s load

What it measures, in one run, against a real ``kbdesk serve`` process on loopback (the
one a user starts, access log off):

1. **HTTP overhead.** The same search (SciFact claims as queries, limit 5, on a
   keyword-only KB of SciFact pieces: 10k chunks) through the library (``desk.search``
   in this process, on the same database file) and through ``POST /api/.../search``
   (httpx with keep-alive), interleaved query by query in a random order, so both see the
   same noise. The overhead is the paired difference per query (HTTP minus library).
2. **Mixed load.** ``--clients`` threads, each with its own connection, for ``--seconds``:
   9 searches for every upload of a small new Markdown file (each a new document that goes
   through the ingestion pipeline). p50/p95 per kind, throughput, every answer that was
   not a 200/202 (or failed at the transport) counted as an error; afterwards every
   uploaded document must reach ``ready`` exactly once (a duplicate or a lost one counts
   as an error too).

Results go to ``bench/results/serve.json``; the figures are recorded in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

import scifact
from harness import command_line, kbdesk_cli, machine_info, parser, save_result, scratch_dir, summary
from harness.tables import fmt_ms, markdown_table

KB = "bench"


def build(home: Path, chunks: int) -> str:
    """A keyword-only KB of ``chunks`` SciFact pieces (100 per document); its id."""
    from kbdesk import open_desk
    from kbdesk.models import ChunkInput

    texts, _ = scifact.chunk_texts(chunks, scifact.pieces())
    with open_desk(home=home) as desk:
        kb = desk.create_kb(KB, keyword_only=True)
        for start in range(0, len(texts), 100):
            part = texts[start : start + 100]
            desk.add_document(kb.id, f"doc-{start // 100:04d}.txt", [ChunkInput(t, len(t) // 4) for t in part])
        return kb.id


def token(home: Path) -> str:
    out = subprocess.run(
        kbdesk_cli("--home", home, "token", "create", "--user", "bench", "--json"),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["token"]


def start_server(home: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        kbdesk_cli("--home", home, "serve", "--port", port, "--log-level", "warning"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api"
    for _ in range(600):
        try:
            httpx.get(base, timeout=1)
            return proc, base
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("kbdesk serve did not start")


def overhead(home: Path, base: str, secret: str, kb_id: str, queries: list[str], warmup: int) -> dict[str, Any]:
    from kbdesk import open_desk

    lib_t, http_t, same = [], [], 0
    order = random.Random(7)
    with open_desk(home=home) as desk, httpx.Client(headers={"Authorization": f"Bearer {secret}"}) as client:
        url = f"{base}/knowledge-bases/{kb_id}/search"
        for i, query in enumerate(queries):
            results: dict[str, list[str]] = {}
            for kind in order.sample(["lib", "http"], 2):
                t = time.perf_counter()
                if kind == "lib":
                    found = [r.content for r in desk.search([kb_id], query, limit=5).results]
                else:
                    answer = client.post(url, json={"query": query, "limit": 5})
                    answer.raise_for_status()
                    found = [r["content"] for r in answer.json()["data"]]
                elapsed = time.perf_counter() - t
                results[kind] = found
                if i >= warmup:
                    (lib_t if kind == "lib" else http_t).append(elapsed)
            same += results["lib"] == results["http"]
    diff = np.asarray(http_t) - np.asarray(lib_t)
    return {
        "library": summary(lib_t),
        "http": summary(http_t),
        "overhead_ms": {"p50": float(np.percentile(diff, 50) * 1e3), "p95": float(np.percentile(diff, 95) * 1e3)},
        "ratio_p50": float(np.percentile(http_t, 50) / np.percentile(lib_t, 50)),
        "same_results": same,
        "queries": len(lib_t),
    }


def load(base: str, secret: str, kb_id: str, queries: list[str], seconds: float, clients: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {"search": [], "upload": []}
    errors: list[str] = []
    uploaded: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    start = threading.Barrier(clients)

    def worker(n: int) -> None:
        rng = random.Random(n)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=120) as client:
            start.wait()
            i = 0
            while time.monotonic() < stop:
                i += 1
                kind = "upload" if rng.random() < 0.1 else "search"
                t = time.perf_counter()
                try:
                    if kind == "search":
                        answer = client.post(
                            f"/knowledge-bases/{kb_id}/search", json={"query": rng.choice(queries), "limit": 5}
                        )
                    else:
                        text = f"# Note {n}-{i}\n\n{rng.choice(queries)}\n\nLoad test note {n} {i}.\n"
                        answer = client.post(
                            f"/knowledge-bases/{kb_id}/documents", files={"file": (f"load-{n}-{i}.md", text.encode())}
                        )
                    elapsed = time.perf_counter() - t
                    ok = answer.status_code == (202 if kind == "upload" else 200)
                except httpx.HTTPError as exc:
                    elapsed, ok, answer = time.perf_counter() - t, False, exc
                with lock:
                    times[kind].append(elapsed)
                    if not ok:
                        errors.append(f"{kind}: {getattr(answer, 'status_code', answer)}")
                    elif kind == "upload":
                        uploaded.append(answer.json()["id"])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    settled = settle(base, secret, kb_id, uploaded)
    if settled["not_ready"] or settled["duplicates"]:
        errors.append(f"after the load: {settled}")
    return {
        "seconds": wall,
        "clients": clients,
        "search": summary(times["search"]),
        "upload": summary(times["upload"]),
        "requests": sum(len(v) for v in times.values()),
        "per_second": sum(len(v) for v in times.values()) / wall,
        "errors": len(errors),
        "error_samples": errors[:10],
        **settled,
    }


def settle(base: str, secret: str, kb_id: str, uploaded: list[str], timeout: float = 300) -> dict[str, Any]:
    """Wait until every uploaded document is ready; count those that are not, and duplicates."""
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=60) as client:
        deadline = time.monotonic() + timeout
        while True:
            docs = [
                d
                for d in client.get(f"/knowledge-bases/{kb_id}/documents").json()["data"]
                if d["filename"].startswith("load-")
            ]
            pending = [d for d in docs if d["status"] not in ("ready", "error")]
            if not pending or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    names = [d["filename"] for d in docs]
    return {
        "uploaded": len(uploaded),
        "documents": len(docs),
        "duplicates": len(names) - len(set(names)),
        "not_ready": sum(d["status"] != "ready" for d in docs) + len(set(uploaded) - {d["id"] for d in docs}),
    }


def report(data: dict[str, Any]) -> str:
    o, m = data["overhead"], data["load"]
    rows = [
        {"path": path, "p50 ms": fmt_ms(s["p50"]), "p95 ms": fmt_ms(s["p95"])}
        for path, s in (
            ("library: desk.search", o["library"]),
            ("HTTP: POST /api/…/search", o["http"]),
            ("overhead (paired difference)", o["overhead_ms"]),
        )
    ]
    load_rows = [
        {"kind": kind, "requests": m[kind]["n"], "p50 ms": fmt_ms(m[kind]["p50"]), "p95 ms": fmt_ms(m[kind]["p95"])}
        for kind in ("search", "upload")
    ]
    return "\n".join(
        [
            f"Machine load average {data['load_average_before']:.1f} before, {data['load_average_after']:.1f} after.",
            f"Search on a {data['chunks']:,}-chunk keyword KB, {o['queries']} queries "
            f"({o['same_results']} of {o['queries'] + 20} with identical results on both paths; HTTP p50 = "
            f"{o['ratio_p50']:.2f}x the library's):",
            "",
            markdown_table(rows),
            "",
            f"Mixed load: {m['clients']} clients for {m['seconds']:.0f} s, {m['requests']} requests "
            f"({m['per_second']:.0f}/s), {m['errors']} errors; {m['uploaded']} uploads, {m['documents']} documents, "
            f"{m['duplicates']} duplicates, {m['not_ready']} not ready:",
            "",
            markdown_table(load_rows),
        ]
    )


def main() -> None:
    ap = parser(__doc__, quick="2k chunks, 100 searches, a 15-second load")
    ap.add_argument("--chunks", type=int, help="chunks in the KB (default 10000; quick 2000)")
    ap.add_argument("--queries", type=int, help="paired searches (default 300; quick 100)")
    ap.add_argument("--seconds", type=float, help="length of the mixed load (default 60; quick 15)")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients in the load (default 8)")
    args = ap.parse_args()
    chunks = args.chunks or (2000 if args.quick else 10_000)
    count = args.queries or (100 if args.quick else 300)
    seconds = args.seconds or (15.0 if args.quick else 60.0)
    claims = scifact.claims()
    random.Random(42).shuffle(claims)
    queries = [claims[i % len(claims)] for i in range(count + 20)]
    with scratch_dir("serve-") as home:
        os.environ.pop("KBDESK_DB", None)
        kb_id = build(home, chunks)
        secret = token(home)
        proc, base = start_server(home)
        try:
            data = {
                "command": command_line(),
                "machine": machine_info(),
                "chunks": chunks,
                "load_average_before": os.getloadavg()[0],
                "overhead": overhead(home, base, secret, kb_id, queries, warmup=20),
                "load": load(base, secret, kb_id, queries, seconds, args.clients),
                "load_average_after": os.getloadavg()[0],
            }
        finally:
            proc.terminate()
            proc.wait(60)
    save_result("serve", data)
    print(report(data))
    print(f"\n{data['command']}")
    if data["load"]["errors"]:
        print(f"errors: {data['load']['error_samples']}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
