#!/usr/bin/env python
"""Search at scale: 100k and 1M chunks, exact vs binary-quantised vectors, keyword, hybrid.

Run from the repository root::

    .venv/bin/python bench/bench_scale.py --quick   # 100k x 384 only, a few minutes (after the first build)
    .venv/bin/python bench/bench_scale.py           # 100k x 384, 1M x 384, 1M x 768 (the full run)
    .venv/bin/python bench/bench_scale.py --sets 1000000x768 --queries 200
    .venv/bin/python bench/bench_scale.py --sets 20000x384 --queries 20   # a smoke run

Data (cached under ``bench/results/scale-*``, or ``$KBDESK_BENCH_DATA`` for the databases, e.g. a
scratch folder outside the repository; ``--rebuild`` makes it again):

- chunk texts: SciFact title + abstract cut at sentence ends into ~1000-character
  pieces (10.4k pieces), then perturbed copies (10% of the words dropped, the words
  rotated) until there are enough, so the keyword index sees real scientific prose with
  realistic term statistics, repeated ~100 times at 1M;
- vectors: *real* all-MiniLM-L6-v2 embeddings of the SciFact pieces (computed once with
  the ``bench`` extra and cached), and for each perturbed copy its piece's embedding plus
  isotropic Gaussian noise scaled so that the copy's cosine to its piece matches what
  MiniLM itself gives for such perturbed text (measured on a sample each build). 768-dim
  sets map the 384-dim embeddings through one fixed random Gaussian matrix (which keeps
  their geometry) and add the noise in 768 dims. Queries are the SciFact claims embedded
  the same way, so the nearest neighbours are the structured, clustered neighbourhoods
  of real text embeddings, not the flat ones of random vectors. Without the ``bench``
  extra a clustered synthetic stand-in is used and the report says so;
- rows are written through the store API: ``desk.add_document`` with documents of
  ``DOC_CHUNKS`` chunks.

Each data set is measured in its own child process (peak RSS is per data set). Every
timed query runs all methods in a rotating order, so load from other processes on this
shared machine lands on every column alike. The recall of the quantised path is against
plain numpy exact search on the same vectors, computed in the same run. The full run
rewrites ``docs/BENCHMARKS-scale.md`` (``--no-doc`` to skip; ``--doc`` for another run),
keeping its discussion.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from harness import (
    command_line,
    load_result,
    machine_info,
    parser,
    run_in_child,
    save_result,
)
from harness.paths import require_scifact
from reports import scale as report
from scale_data import (
    CALIBRATION_SAMPLE,
    DB_FORMAT,
    FULL_SETS,
    LIMIT,
    POOL,
    QUICK_SETS,
    build,
    db_path,
    embedding_summary,
    parse_sets,
)
from scale_measure import keyword_quality, measure
from vector_kb import (
    cached_meta,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


# ── orchestration ──────────────────────────────────────────────────────────────
def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__, quick=f"only {QUICK_SETS}, fewer queries", scifact=True)
    ap.add_argument("--sets", help="comma-separated NxD data sets, e.g. 1000000x768")
    ap.add_argument("--queries", type=int, help="timed queries per data set (default 100, quick 40)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rebuild", action="store_true", help="build the databases again")
    ap.add_argument("--no-vec0-bits", action="store_true", help="skip sqlite-vec's bit[] comparison")
    ap.add_argument("--no-doc", action="store_true", help=f"do not rewrite {report.DOC.relative_to(report.ROOT)}")
    ap.add_argument("--doc", action="store_true", help="rewrite the doc even for --quick or --sets")
    ap.add_argument("--build-only", action="store_true", help="build (or keep) the databases, measure nothing")
    ap.add_argument(
        "--keyword-quality",
        action="store_true",
        help="only: doc-level nDCG of bounded vs unbounded keyword search on 1M x 384 (or the first "
        "of --sets; into the doc)",
    )
    args = ap.parse_args(argv)
    require_scifact(args.scifact)
    sets = parse_sets(args.sets or (QUICK_SETS if args.quick else FULL_SETS))
    if args.keyword_quality:
        n, d = sets[0] if args.sets else (1_000_000, 384)
        result = run_in_child(keyword_quality, n=n, d=d, count=args.queries or 200)
        result.update(command=command_line(argv), run=time.strftime("%Y-%m-%d %H:%M"))
        save_result("scale-keyword-quality", result)
        print(json.dumps(result["variants"], indent=1))
        return
    queries = args.queries or (40 if args.quick else 100)
    started = time.time()
    result: dict[str, Any] = {
        "command": command_line(argv),
        "started": time.strftime("%Y-%m-%d %H:%M"),
        "machine": machine_info(),
        "queries": queries,
        "warmup": args.warmup,
        "sets": [],
    }
    result["embeddings"] = run_in_child(embedding_summary)
    for n, d in sets:
        meta = None if args.rebuild else cached_meta(db_path(n, d), DB_FORMAT, n, d)
        if meta is None:
            print(f"building {report.set_name(n, d)} ...", flush=True)
            meta = {**run_in_child(build, n=n, d=d), "cached": False}
        if args.build_only:
            continue
        print(f"measuring {report.set_name(n, d)} ...", flush=True)
        res = run_in_child(
            measure, n=n, d=d, queries=queries, warmup=args.warmup, vec0_bits=not args.no_vec0_bits and n >= 1_000_000
        )
        res["build"] = {"cached": True, **meta}
        result["sets"].append(res)
        print(report.short_summary(res), flush=True)
    if args.build_only:
        return
    result["wall_min"] = (time.time() - started) / 60
    save_result(f"scale-{'quick' if args.quick else 'custom' if args.sets else 'full'}", result)
    text = report.render(
        result, load_result("scale-keyword-quality"), limit=LIMIT, pool=POOL, calibration=CALIBRATION_SAMPLE
    )
    print(text)
    if (not (args.quick or args.sets) or args.doc) and not args.no_doc:
        report.write_doc(text)
        print(f"wrote {report.DOC.relative_to(report.ROOT)}")


if __name__ == "__main__":
    main()
