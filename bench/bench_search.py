#!/usr/bin/env python
"""Search latency of kbdesk: the default path (memory-mapped matrix file) vs sqlite-vec's vec0 vs
the numpy backend's in-memory matrix vs plain numpy, fresh processes, plus keyword/hybrid.

Run from the repository root::

    .venv/bin/python bench/bench_search.py            # full: 10k and 100k chunks, 384 and 1536 dims
    .venv/bin/python bench/bench_search.py --quick    # 10k chunks only (a minute or two)
    .venv/bin/python bench/bench_search.py --sets 2000x384,2000x1536 --queries 20   # a smoke run

What it measures, in one run (each data set in its own child process, so peak RSS is
per data set and one data set's memory does not slow the next):

- vector search p50/p95 through ``desk.search(mode="vector", limit=10)`` for kbdesk's
  default path (the sqlite-vec backend scanning the KB's memory-mapped float32 matrix
  file, ``default (matrix file)``), and with matrix files switched off: sqlite-vec's
  ``vec0`` scan (``sqlite-vec``, the default before matrix files) and the numpy backend's
  in-memory matrix (``numpy``), interleaved per query with plain numpy exact search
  on the same vectors (``M @ q`` then ``argpartition``: the baseline), and with each
  backend's index alone (``store.vector_candidates``), so noise from other processes
  hits every column alike;
- the one-off costs: opening the desk, the first sqlite-vec search (which builds the
  ``vec0`` index from ``kb_chunks.embedding``; the bench invalidates it first so every
  run measures a build from scratch), the first numpy search (which loads the matrix);
- keyword and hybrid latency on SciFact text (on the largest data set of the smallest
  dimension: 100k x 384 in the full run), with the hybrid's parts timed alone;
- sqlite-vec's own options side by side, by direct SQL on the same unit vectors:
  ``vec0`` with ``distance_metric=l2`` vs ``cosine``, the default ``chunk_size`` vs 256,
  a file vs ``:memory:``;
- DB build throughput (chunks/s through ``desk.add_document``), as a side figure;
- fresh processes (what one ``kbdesk search`` costs): a new interpreter imports kbdesk,
  opens the desk and runs one vector search, for each of the three paths in rotating
  order; wall time of the whole process and its peak RSS.

Built databases are cached under ``bench/results/`` (gitignored); ``--rebuild`` makes
them again. The full run rewrites ``docs/BENCHMARKS-search.md`` (``--no-doc`` to skip);
a hand-written section between the ``discussion`` markers in that file is kept.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import scifact
from harness import (
    command_line,
    file_mb,
    machine_info,
    malloc_trim,
    paired_ratios,
    parser,
    peak_rss_mb,
    rss_mb,
    rss_now,
    run_in_child,
    save_result,
    scratch_dir,
    summary,
    timed,
    timed_rounds,
)
from harness.blas import OpenBlas
from harness.paths import RESULTS, require_scifact
from reports import search as report
from vector_kb import (
    KB_NAME,
    build_kb_db,
    cached_meta,
    exact_top,
    fts_rows_matched,
    kb_id_of,
    load_matrix,
    overlap,
    raw_connection,
    remove_matrix_files,
    unit_rows,
)

DB_FORMAT = "kbdesk-search-bench-db/1"  # bump when the generated data changes
DOC_CHUNKS = 500  # chunks per document (one add_document transaction each)
LIMIT = 10
HYBRID_POOL = 50  # what kbdesk.search asks each ranker for at limit 10 (max(10*5, 50))
FULL_SETS = "10000x384,10000x1536,100000x384,100000x1536"
QUICK_SETS = "10000x384,10000x1536"


def parse_sets(text: str) -> list[dict[str, Any]]:
    """``NxD,NxD``: the data sets; keyword/hybrid text is measured on the largest set of the smallest
    dimension (100k x 384 in the full run, 10k x 384 in the quick one)."""
    sets = [{"n": int(n), "d": int(d)} for n, d in (s.lower().split("x") for s in text.split(","))]
    d_text = min(s["d"] for s in sets)
    n_text = max(s["n"] for s in sets if s["d"] == d_text)
    return [{**s, "text": (s["n"], s["d"]) == (n_text, d_text)} for s in sets]


def db_path(n: int, d: int) -> Path:
    return RESULTS / f"search-{n // 1000}k-{d}.db"


def text_queries(count: int) -> list[str]:
    claims = scifact.claims()
    random.Random(42).shuffle(claims)
    return [claims[i % len(claims)] for i in range(count)]


# ── building a database (child process) ────────────────────────────────────────
def build(n: int, d: int) -> dict[str, Any]:
    """SciFact pieces (then perturbed copies) with random unit vectors, through the sqlite-vec desk."""
    rng = np.random.default_rng([n, d, 7])
    texts, _ = scifact.chunk_texts(n, scifact.pieces())
    return build_kb_db(
        db_path(n, d),
        fmt=DB_FORMAT,
        d=d,
        texts=texts,
        backend="sqlite-vec",
        doc_chunks=DOC_CHUNKS,
        vectors=lambda start, stop: unit_rows(rng, stop - start, d),
    )


# ── measuring (child process) ──────────────────────────────────────────────────
def db_sizes(path: Path, kb_id: str) -> dict[str, float]:
    """Used pages of the file, and the pages of the KB's vec0 tables (dbstat), in MB."""
    from kbdesk.store.sqlite.vectors import vec_table

    conn = raw_connection(path)
    try:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        used = conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]
        out = {"used_mb": used * page / 1e6, "file_mb": file_mb(path)}
        with contextlib.suppress(Exception):  # dbstat is a compile-time option
            row = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE ?", (vec_table(kb_id) + "%",)).fetchone()
            out["vec0_mb"] = (row[0] or 0) / 1e6
        return out
    finally:
        conn.close()


def ingest_once(desk: Any, kb_id: str, d: int, chunks: list[str], tag: str) -> dict[str, float]:
    """Add one document of ``chunks`` to the KB and delete it again, timing both."""
    vectors = unit_rows(np.random.default_rng([len(chunks), d, 3]), len(chunks), d)
    added, doc = timed(lambda: desk.add_document(kb_id, f"incremental-{tag}.txt", chunks, vectors=vectors))
    deleted, _ = timed(lambda: desk.delete_document(doc.id))
    return {"add_s": added, "delete_s": deleted, "chunks": len(chunks)}


FRESH_PATHS = {"default (matrix file)": ("auto", True), "sqlite-vec": ("sqlite-vec", False), "numpy": ("numpy", False)}
_FRESH = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from kbdesk import open_desk
db, home, backend, files, d, seed = sys.argv[1:7]
desk = open_desk(db=db, home=home, backend=None if backend == "auto" else backend)
desk.store.vectors.matrices.enabled = files == "1"
q = np.random.default_rng(int(seed)).standard_normal(int(d)).astype(np.float32)
t1 = time.perf_counter()
hits = desk.search([desk.list_kbs()[0].id], "q", query_vector=q, limit=10, threshold=0.0, mode="vector").results
t2 = time.perf_counter()
# VmHWM: this process's own peak (ru_maxrss carries the parent's from before the fork)
hwm = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print(json.dumps({"inside_s": t2 - t0, "search_s": t2 - t1, "hits": len(hits), "peak_rss_mb": hwm * 1024 / 1e6}))
"""


def fresh_processes(path: Path, home: Path, d: int, rounds: int) -> dict[str, Any]:
    """One vector search per new interpreter, for each path in rotating order: wall time of the
    whole process (start-up, imports, open, search, exit) and its own peak RSS."""
    import json
    import subprocess

    out: dict[str, dict[str, list[float]]] = {
        name: {"wall_s": [], "search_s": [], "peak_rss_mb": []} for name in FRESH_PATHS
    }
    names = list(FRESH_PATHS)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            backend, files = FRESH_PATHS[name]
            t = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", _FRESH, str(path), str(home), backend, "1" if files else "0", str(d), str(r)],
                capture_output=True,
                text=True,
                check=True,
            )
            wall = time.perf_counter() - t
            got = json.loads(done.stdout)
            assert got["hits"] == LIMIT, got
            out[name]["wall_s"].append(wall)
            out[name]["search_s"].append(got["search_s"])
            out[name]["peak_rss_mb"].append(got["peak_rss_mb"])
    return {
        name: {
            "wall": summary(v["wall_s"]),
            "search": summary(v["search_s"]),
            "peak_rss_mb_median": float(np.median(v["peak_rss_mb"])),
            "peak_rss_mb_max": float(np.max(v["peak_rss_mb"])),
        }
        for name, v in out.items()
    }


def measure(spec: dict[str, Any], queries: int, warmup: int, fresh_rounds: int = 15) -> dict[str, Any]:
    from kbdesk import open_desk
    from kbdesk.store.sqlite.vectors import vec_table

    n, d = spec["n"], spec["d"]
    path = db_path(n, d)
    blas = OpenBlas()
    res: dict[str, Any] = {"spec": spec, "loadavg_start": os.getloadavg()[0], "rss": {"start": rss_now()}, "once": {}}
    once, rss = res["once"], res["rss"]

    # every run measures an index build from scratch: mark the vec0 index stale
    conn = raw_connection(path)
    conn.execute("UPDATE kb_vector_state SET indexed_version = -1")
    conn.close()
    once["db_mb_before_index"] = file_mb(path)

    with scratch_dir("home-") as home:
        once["open_sqlite_vec_s"], desk_vec = timed(lambda: open_desk(db=path, home=home, backend="sqlite-vec"))
        once["open_numpy_s"], desk_np = timed(lambda: open_desk(db=path, home=home, backend="numpy"))
        desk_mf = open_desk(db=path, home=home)
        kb = desk_vec.kb(KB_NAME)
        store_vec, store_np, store_mf = desk_vec.store, desk_np.store, desk_mf.store
        assert store_vec.vectors.name == "sqlite-vec" and store_np.vectors.name == "numpy"
        assert store_mf.vectors.name == "sqlite-vec" and store_mf.vectors.matrices.enabled
        store_vec.vectors.matrices.enabled = store_np.vectors.matrices.enabled = False  # the paths before
        remove_matrix_files(path)
        once["sizes_before_index"] = db_sizes(path, kb.id)
        # ingestion into the existing KB while the vec0 index is stale (no vec0 work)
        extra = scifact.pieces()[:DOC_CHUNKS]
        res["ingest_stale"] = ingest_once(desk_vec, kb.id, d, extra, "stale")

        qv = unit_rows(np.random.default_rng([n, d, 99]), warmup + queries + 1, d)

        def vsearch(desk: Any, i: int) -> Any:
            return desk.search([kb.id], "bench query", query_vector=qv[i], limit=LIMIT, threshold=0.0, mode="vector")

        # one-off costs, in this order: sqlite-vec index build, numpy matrix load
        once["first_search_sqlite_vec_s"], _ = timed(lambda: vsearch(desk_vec, -1))
        rss["after_index_build"] = rss_now()
        once["db_mb_after_index"] = file_mb(path)
        once["sizes_after_index"] = db_sizes(path, kb.id)
        once["wal_mb_after_index"] = file_mb(Path(f"{path}-wal"))
        once["second_search_sqlite_vec_s"], _ = timed(lambda: vsearch(desk_vec, -1))

        rss_before = rss_mb()
        once["first_search_numpy_s"], _ = timed(lambda: vsearch(desk_np, -1))
        rss["after_numpy_load"] = rss_now()
        once["numpy_load_rss_delta_mb"] = rss_mb() - rss_before
        once["numpy_load_peak_over_before_mb"] = peak_rss_mb() - rss_before
        if malloc_trim():  # how much of that was freed heap kept by malloc
            once["numpy_load_rss_delta_after_trim_mb"] = rss_mb() - rss_before
        once["second_search_numpy_s"], _ = timed(lambda: vsearch(desk_np, -1))
        rss_before = rss_mb()
        once["first_search_matrix_file_s"], _ = timed(lambda: vsearch(desk_mf, -1))  # writes the file
        once["matrix_file_write_rss_delta_mb"] = rss_mb() - rss_before
        once["second_search_matrix_file_s"], _ = timed(lambda: vsearch(desk_mf, -1))  # the streamed scan
        once["third_search_matrix_file_s"], _ = timed(lambda: vsearch(desk_mf, -1))  # maps it

        once["baseline_load_s"], (seqs, matrix) = timed(lambda: load_matrix(path, kb.id, d))
        rss["after_baseline_load"] = rss_now()
        once["matrix_mb"] = matrix.nbytes / 1e6

        # what-if: kbdesk's own vec0 query on a connection with memory-mapped I/O
        mconn = raw_connection(path)
        mconn.execute(f"PRAGMA mmap_size = {int(file_mb(path) * 1e6 * 2)}")
        msql = f"SELECT rowid, distance FROM {vec_table(kb.id)} WHERE embedding MATCH ? AND k = ? ORDER BY distance"
        methods: dict[str, Callable[[int], Any]] = {
            "default (matrix file)": lambda i: vsearch(desk_mf, i),
            "matrix file index": lambda i: store_mf.vector_candidates(kb.id, d, qv[i], LIMIT),
            "sqlite-vec": lambda i: vsearch(desk_vec, i),
            "numpy": lambda i: vsearch(desk_np, i),
            "baseline": lambda i: exact_top(matrix, qv[i], LIMIT),
            "sqlite-vec index": lambda i: store_vec.vector_candidates(kb.id, d, qv[i], LIMIT),
            "numpy index": lambda i: store_np.vector_candidates(kb.id, d, qv[i], LIMIT),
            "what-if: vec0 query with mmap": lambda i: mconn.execute(msql, (qv[i].tobytes(), LIMIT)).fetchall(),
        }
        if blas.lib:

            def one_thread(fn: Callable[[int], Any]) -> Callable[[int], Any]:
                def run(i: int) -> Any:
                    with blas.threads(1):
                        return fn(i)

                return run

            methods["baseline 1 thread"] = one_thread(lambda i: exact_top(matrix, qv[i], LIMIT))
            methods["numpy 1 thread"] = one_thread(lambda i: vsearch(desk_np, i))
        times, outputs = timed_rounds(methods, queries, warmup)
        mconn.close()
        res["vector"] = {name: summary(ts) for name, ts in times.items()}
        res["vector_paired_ratio"] = paired_ratios(times, "baseline")
        rss["after_vector_queries"] = rss_now()

        # agreement with exact search (top-10 sets) and the similarity values returned
        exact = [seqs[top].tolist() for top in outputs["baseline"]]
        res["recall_at_10"] = {
            name: overlap([[s for s, _ in hits] for hits in outputs[name]], exact, LIMIT)
            for name in ("sqlite-vec index", "numpy index", "matrix file index")
        }
        worst = 0.0
        for i, hits in enumerate(outputs["sqlite-vec index"]):
            for seq, sim in hits:
                row = int(np.searchsorted(seqs, seq))
                worst = max(worst, abs(sim - float(matrix[row] @ qv[warmup + i])))
        res["sqlite_vec_max_similarity_error"] = worst

        # ingestion into the existing KB while the vec0 index is fresh: vec0 rows are written
        # in the same transaction (SqliteVecIndex.after_write)
        res["ingest_fresh"] = ingest_once(desk_vec, kb.id, d, extra, "fresh")
        assert store_vec.vectors.is_fresh(store_vec.connection(), kb.id)

        if spec["text"]:
            res["text"] = measure_text(desk_vec, desk_np, kb.id, d, queries, warmup)
            rss["after_text_queries"] = rss_now()
        vsearch(desk_vec, -1)  # both stored paths current before the fresh processes start
        vsearch(desk_mf, -1)
        desk_vec.close()
        desk_np.close()
        desk_mf.close()
        res["fresh_process"] = fresh_processes(path, home, d, rounds=fresh_rounds)
    res["loadavg_end"] = os.getloadavg()[0]
    return res


_WORD = re.compile(r"\w+", re.UNICODE)


def fts_expr(text: str, *, stopwords: frozenset[str] | None) -> str:
    """An FTS5 OR-query of the text's distinct words (at most 64), like kbdesk's, built here
    so the variants below do not move when kbdesk's own query builder changes."""
    seen: list[str] = []
    for token in _WORD.findall(text.lower()):
        if token not in seen:
            seen.append(token)
        if len(seen) == 64:
            break
    kept = [t for t in seen if not stopwords or t not in stopwords] or seen
    return " OR ".join(f'"{t}"' for t in kept)


def measure_text(desk_vec: Any, desk_np: Any, kb_id: str, d: int, queries: int, warmup: int) -> dict[str, Any]:
    from kbdesk.store.keywords import STOPWORDS

    texts = text_queries(warmup + queries)
    qv = unit_rows(np.random.default_rng([d, 1234]), warmup + queries, d)
    store = desk_vec.store
    conn = store.connection()
    join_sql = (
        "SELECT f.rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts f "
        "JOIN kb_chunks c ON c.seq = f.rowid WHERE kb_chunks_fts MATCH ? AND c.kb_id IN (?) "
        "ORDER BY score DESC, f.rowid LIMIT ?"
    )
    alone_sql = (
        "SELECT rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
        "ORDER BY score DESC, rowid LIMIT ?"
    )

    def search(desk: Any, i: int, mode: str) -> Any:
        return desk.search(
            [kb_id], texts[i], query_vector=None if mode == "keyword" else qv[i], limit=LIMIT, threshold=0.0, mode=mode
        )

    def fts_variant(i: int, *, stop: bool, join: bool) -> list[Any]:
        expr = fts_expr(texts[i], stopwords=STOPWORDS if stop else None)
        if join:
            return conn.execute(join_sql, (expr, kb_id, HYBRID_POOL)).fetchall()
        return conn.execute(alone_sql, (expr, HYBRID_POOL)).fetchall()

    methods: dict[str, Callable[[int], Any]] = {
        "keyword": lambda i: search(desk_vec, i, "keyword"),
        "hybrid sqlite-vec": lambda i: search(desk_vec, i, "hybrid"),
        "hybrid numpy": lambda i: search(desk_np, i, "hybrid"),
        "part: FTS candidates (k=50)": lambda i: store.keyword_candidates([kb_id], texts[i], HYBRID_POOL),
        "part: sqlite-vec index (k=50)": lambda i: store.vector_candidates(kb_id, d, qv[i], HYBRID_POOL),
        "part: numpy index (k=50)": lambda i: desk_np.store.vector_candidates(kb_id, d, qv[i], HYBRID_POOL),
        "SQL: every word, join": lambda i: fts_variant(i, stop=False, join=True),
        "SQL: every word, no join": lambda i: fts_variant(i, stop=False, join=False),
        "SQL: stopwords out, join": lambda i: fts_variant(i, stop=True, join=True),
        "SQL: stopwords out, no join": lambda i: fts_variant(i, stop=True, join=False),
    }
    times, outputs = timed_rounds(methods, queries, warmup)
    timed_texts = texts[warmup:]
    every = [fts_expr(t, stopwords=None) for t in timed_texts]
    without = [fts_expr(t, stopwords=STOPWORDS) for t in timed_texts]
    # one KB holds every chunk here, so the join changes nothing but the time
    same = [
        a == b for a, b in zip(outputs["SQL: stopwords out, join"], outputs["SQL: stopwords out, no join"], strict=True)
    ]
    # how much the top-10 moves when stopwords are left out (a hint at quality, not a measure of it)
    every10 = [[seq for seq, _ in hits[:LIMIT]] for hits in outputs["SQL: every word, join"]]
    stop10 = [[seq for seq, _ in hits[:LIMIT]] for hits in outputs["SQL: stopwords out, join"]]
    return {
        "latency": {name: summary(ts) for name, ts in times.items()},
        "stopwords": len(STOPWORDS),
        "stopwords_from": "kbdesk",
        "keyword_results_mean": float(np.mean([len(r.results) for r in outputs["keyword"]])),
        "terms_mean": float(np.mean([e.count(" OR ") + 1 for e in every])),
        "terms_no_stopwords_mean": float(np.mean([e.count(" OR ") + 1 for e in without])),
        "fts_rows_matched_mean": fts_rows_matched(conn, every[:20]),
        "fts_rows_matched_no_stopwords_mean": fts_rows_matched(conn, without[:20]),
        "no_join_same_results": float(np.mean(same)),
        "no_stopwords_top10_overlap": float(
            np.mean([len(set(x) & set(y)) / max(len(x), 1) for x, y in zip(every10, stop10, strict=True)])
        ),
    }


def vec0_variants(d: int) -> list[dict[str, Any]]:
    """The vec0 tables compared by direct SQL: kbdesk's (l2, default chunk_size) first."""
    out = [{"name": "l2 (kbdesk's table)", "metric": "l2", "chunk_size": None, "where": "file"}]
    if d <= 512:
        out.append({"name": "cosine", "metric": "cosine", "chunk_size": None, "where": "file"})
    out.append({"name": "l2, chunk_size=256", "metric": "l2", "chunk_size": 256, "where": "file"})
    if d <= 512:
        out.append({"name": "l2, :memory:", "metric": "l2", "chunk_size": None, "where": "memory"})
        out.append({"name": "cosine, :memory:", "metric": "cosine", "chunk_size": None, "where": "memory"})
    return out


def measure_vec0(n: int, d: int, queries: int, warmup: int) -> dict[str, Any]:
    """sqlite-vec's own options on the same unit vectors, by direct SQL: distance_metric=l2
    vs cosine, the vec0 chunk_size, a file vs an in-memory database. Every table is built
    the way kbdesk builds its index (``INSERT ... SELECT seq, embedding FROM kb_chunks``)."""
    src = db_path(n, d)
    res: dict[str, Any] = {"n": n, "d": d, "loadavg_start": os.getloadavg()[0], "build_s": {}}
    with scratch_dir("vec0-") as work:
        kb_id = kb_id_of(src)
        _seqs, matrix = load_matrix(src, kb_id, d)
        conns = {"file": raw_connection(work / "vec0.db"), "memory": raw_connection(":memory:")}
        conns["file"].execute("PRAGMA journal_mode = WAL")
        for conn in conns.values():
            conn.execute("ATTACH DATABASE ? AS src", (str(src),))
        variants = vec0_variants(d)
        for i, v in enumerate(variants):
            conn = conns[v["where"]]
            v["table"] = f"v{i}"
            opts = f" distance_metric={v['metric']}" + (f", chunk_size={v['chunk_size']}" if v["chunk_size"] else "")
            t = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"CREATE VIRTUAL TABLE main.{v['table']} USING vec0(embedding float[{d}]{opts})")
            conn.execute(
                f"INSERT INTO main.{v['table']}(rowid, embedding) SELECT seq, embedding FROM src.kb_chunks "
                "WHERE kb_id = ? AND embedding IS NOT NULL ORDER BY seq",
                (kb_id,),
            )
            conn.execute("COMMIT")
            res["build_s"][v["name"]] = time.perf_counter() - t
        for conn in conns.values():
            conn.execute("DETACH DATABASE src")
        qv = unit_rows(np.random.default_rng([n, d, 5]), warmup + queries, d)

        def run(v: dict[str, Any]) -> Callable[[int], Any]:
            sql = f"SELECT rowid, distance FROM {v['table']} WHERE embedding MATCH ? AND k = ? ORDER BY distance"
            conn = conns[v["where"]]
            return lambda i: conn.execute(sql, (qv[i].tobytes(), LIMIT)).fetchall()

        methods = {v["name"]: run(v) for v in variants}
        methods["plain numpy"] = lambda i: exact_top(matrix, qv[i], LIMIT)
        times, outputs = timed_rounds(methods, queries, warmup)
        res["latency"] = {name: summary(ts) for name, ts in times.items()}
        res["paired_ratio"] = paired_ratios(times, "plain numpy")
        ref = outputs["l2 (kbdesk's table)"]
        res["agreement"] = {
            name: {
                "same_order": float(
                    np.mean([[r for r, _ in a] == [r for r, _ in b] for a, b in zip(ref, outs, strict=True)])
                ),
                "same_set": float(
                    np.mean([{r for r, _ in a} == {r for r, _ in b} for a, b in zip(ref, outs, strict=True)])
                ),
            }
            for name, outs in outputs.items()
            if name not in ("l2 (kbdesk's table)", "plain numpy")
        }
        for conn in conns.values():
            conn.close()
    res["loadavg_end"] = os.getloadavg()[0]
    return res


def measure_bandwidth() -> dict[str, Any]:
    """Streaming read rate from DRAM: a float32 gemv over 1 GiB (larger than any L3 here),
    all OpenBLAS threads, and one thread; best of several."""
    blas = OpenBlas()
    rows = (1 << 30) // (4 * 1024)
    m = np.random.default_rng(0).standard_normal((rows, 1024), dtype=np.float32)
    q = np.ones(1024, dtype=np.float32)
    out: dict[str, Any] = {"bytes": m.nbytes}

    def best(reps: int = 7) -> float:
        m @ q
        return min(timed(lambda: m @ q)[0] for _ in range(reps))

    out["gb_s_all_threads"] = m.nbytes / best() / 1e9
    if blas.lib:
        with blas.threads(1):
            out["gb_s_one_thread"] = m.nbytes / best() / 1e9
    return out


# ── the orchestrator ───────────────────────────────────────────────────────────
def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, quick="10k chunks only (a minute or two)", scifact=True)
    ap.add_argument("--sets", help=f"comma-separated NxD data sets (default {FULL_SETS}; quick {QUICK_SETS})")
    ap.add_argument("--queries", type=int, default=None, help="timed queries per data set (default 100; quick 60)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed warm-up queries (default 5)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached databases")
    ap.add_argument("--fresh", type=int, default=15, help="fresh processes per path and data set (default 15)")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/BENCHMARKS-search.md")
    ap.add_argument("--doc", action="store_true", help="rewrite the doc even for --quick or --sets")
    args = ap.parse_args(argv)
    require_scifact(args.scifact)

    queries = args.queries or (60 if args.quick else 100)
    if queries < 50:
        log(f"note: {queries} queries (< 50): percentiles are rough")
    sets = parse_sets(args.sets or (QUICK_SETS if args.quick else FULL_SETS))
    t_start = time.perf_counter()
    machine = machine_info()
    log(
        f"machine: {machine['cpus']} CPUs, python {machine['python']}, sqlite {machine['sqlite']} "
        f"({machine['sqlite_driver']}), sqlite-vec {machine['sqlite_vec']}, numpy {machine['numpy']}, "
        f"BLAS threads {machine['blas'].get('threads')}"
    )

    builds: dict[str, Any] = {}
    for spec in sets:
        meta = None if args.rebuild else cached_meta(db_path(spec["n"], spec["d"]), DB_FORMAT, spec["n"], spec["d"])
        if meta is None:
            log(f"building {db_path(spec['n'], spec['d']).name} ...")
            meta = {**run_in_child(build, n=spec["n"], d=spec["d"]), "fresh": True}
        builds[f"{spec['n']}x{spec['d']}"] = {"fresh": False, **meta}

    log("measuring memory read rate ...")
    bandwidths = [run_in_child(measure_bandwidth)]
    runs = []
    for spec in sets:
        log(f"measuring {spec['n']} x {spec['d']}{' (+ keyword/hybrid)' if spec['text'] else ''} ...")
        runs.append(run_in_child(measure, spec=spec, queries=queries, warmup=args.warmup, fresh_rounds=args.fresh))
    vec0 = []
    largest = max(spec["n"] for spec in sets)
    for d in sorted({spec["d"] for spec in sets if spec["n"] == largest}):
        log(f"measuring vec0 variants (l2 / cosine / chunk_size) at {largest} x {d} ...")
        vec0.append(run_in_child(measure_vec0, n=largest, d=d, queries=queries, warmup=args.warmup))
    log("measuring memory read rate again ...")
    bandwidths.append(run_in_child(measure_bandwidth))
    bandwidth = {key: max(b.get(key, 0.0) for b in bandwidths) for key in bandwidths[0]}
    bandwidth["samples"] = bandwidths

    result = {
        "command": command_line(argv),
        "quick": args.quick,
        "queries": queries,
        "warmup": args.warmup,
        "machine": machine,
        "bandwidth": bandwidth,
        "builds": builds,
        "runs": runs,
        "vec0": vec0,
        "git_end": machine_info()["git"],
        "wall_s": time.perf_counter() - t_start,
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    save_result(f"search-{'quick' if args.quick else 'custom' if args.sets else 'full'}", result)
    text = report.render(result, limit=LIMIT, pool=HYBRID_POOL)
    print(text)
    if (not (args.quick or args.sets) or args.doc) and not args.no_doc:
        report.write_doc(text)
        log(f"wrote {report.DOC.relative_to(report.ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
