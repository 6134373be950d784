#!/usr/bin/env python
"""Search latency of kbdesk: sqlite-vec vs numpy backend vs plain numpy, plus keyword/hybrid.

Run from the repository root::

    .venv/bin/python bench/bench_search.py            # full: 10k and 100k chunks, 384 and 1536 dims
    .venv/bin/python bench/bench_search.py --quick    # 10k chunks only (a minute or two)

What it measures, in one run (each data set in its own child process, so peak RSS is
per data set and one data set's memory does not slow the next):

- vector search p50/p95 through ``desk.search(mode="vector", limit=10)`` for the
  sqlite-vec and numpy backends, interleaved per query with plain numpy exact search
  on the same vectors (``M @ q`` then ``argpartition``: the baseline), and with each
  backend's index alone (``store.vector_candidates``), so noise from other processes
  hits every column alike;
- the one-off costs: opening the desk, the first sqlite-vec search (which builds the
  ``vec0`` index from ``kb_chunks.embedding``; the bench invalidates it first so every
  run measures a build from scratch), the first numpy search (which loads the matrix);
- keyword and hybrid latency on SciFact text (``--text`` data set: 100k x 384 in the
  full run), with the hybrid's parts timed alone;
- sqlite-vec's own options side by side, by direct SQL on the same unit vectors:
  ``vec0`` with ``distance_metric=l2`` vs ``cosine``, the default ``chunk_size`` vs 256,
  a file vs ``:memory:``;
- DB build throughput (chunks/s through ``desk.add_document``), as a side figure.

Built databases are cached under ``bench/results/`` (gitignored); ``--rebuild`` makes
them again. The full run rewrites ``docs/BENCHMARKS-search.md`` (``--no-doc`` to skip);
a hand-written section between the ``discussion`` markers in that file is kept.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import platform
import random
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "BENCHMARKS-search.md"
SCIFACT = Path(os.environ.get("KBDESK_BENCH_SCIFACT", "/work/shared/eval/scifact"))

DB_FORMAT = "kbdesk-search-bench-db/1"  # bump when the generated data changes
DOC_CHUNKS = 500  # chunks per document (one add_document transaction each)
PIECE_CHARS = 1000  # target characters per chunk of SciFact text
KB_NAME = "bench"
MODEL_ID = "bench-model"
LIMIT = 10
HYBRID_POOL = 50  # what kbdesk.search asks each ranker for at limit 10 (max(10*5, 50))
AIM_VECTOR_MS = 10.0  # exact vector search p50 at 100k x 384
AIM_HYBRID_MS = 50.0  # full hybrid query at 100k chunks
DISCUSSION_START = "<!-- discussion:start -->"
DISCUSSION_END = "<!-- discussion:end -->"

FULL_SETS = [
    {"n": 10_000, "d": 384, "text": False},
    {"n": 10_000, "d": 1536, "text": False},
    {"n": 100_000, "d": 384, "text": True},
    {"n": 100_000, "d": 1536, "text": False},
]
QUICK_SETS = [
    {"n": 10_000, "d": 384, "text": True},
    {"n": 10_000, "d": 1536, "text": False},
]


# ── small helpers ──────────────────────────────────────────────────────────────
def rss_mb() -> float:
    """Current resident set size (MB)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (MB; ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def summary(samples_s: list[float]) -> dict[str, float]:
    ms = [s * 1e3 for s in samples_s]
    return {"p50": pct(ms, 50), "p95": pct(ms, 95), "mean": float(np.mean(ms)), "min": float(np.min(ms)),
            "n": len(ms)}


def unit_rows(rng: np.random.Generator, rows: int, d: int) -> np.ndarray:
    x = rng.standard_normal((rows, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def db_path(n: int, d: int) -> Path:
    return RESULTS / f"search-{n // 1000}k-{d}.db"


def file_mb(path: Path) -> float:
    return path.stat().st_size / 1e6 if path.exists() else 0.0


class OpenBlas:
    """The OpenBLAS numpy links, through ctypes (threadpoolctl is not a dependency)."""

    def __init__(self) -> None:
        self.lib = None
        self.prefix = ""
        self.path = ""
        with open("/proc/self/maps") as fh:
            libs = sorted({line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line})
        for path in libs:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix, suffix in (("scipy_openblas_", "64_"), ("openblas_", "64_"), ("openblas_", "")):
                if hasattr(lib, f"{prefix}get_num_threads{suffix}"):
                    self.lib, self.prefix, self.suffix, self.path = lib, prefix, suffix, path
                    break
            if self.lib:
                break

    def _fn(self, name: str) -> Any:
        return getattr(self.lib, f"{self.prefix}{name}{self.suffix}")

    def threads(self) -> int | None:
        return int(self._fn("get_num_threads")()) if self.lib else None

    def set_threads(self, n: int) -> None:
        if self.lib:
            self._fn("set_num_threads")(ctypes.c_int(n))

    def info(self) -> dict[str, Any]:
        if not self.lib:
            return {"found": False}
        config = self._fn("get_config")
        config.restype = ctypes.c_char_p
        core = self._fn("get_corename")
        core.restype = ctypes.c_char_p
        return {"found": True, "library": Path(self.path).name, "config": config().decode().strip(),
                "corename": core().decode().strip(), "threads": self.threads()}


@contextlib.contextmanager
def blas_threads(blas: OpenBlas, n: int):
    before = blas.threads()
    blas.set_threads(n)
    try:
        yield
    finally:
        if before:
            blas.set_threads(before)


def raw_connection(path: Path | str):
    """A connection with sqlite-vec loaded, made the way kbdesk makes them."""
    from kbdesk.store.driver import choose_driver, load_extensions

    driver = choose_driver("sqlite-vec")
    conn = driver.module.connect(str(path), isolation_level=None)
    load_extensions(conn, driver)
    return conn


# ── data ───────────────────────────────────────────────────────────────────────
def scifact_pieces() -> list[str]:
    """SciFact title + abstract, split at sentence ends into ~PIECE_CHARS pieces."""
    pieces: list[str] = []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            text = f"{doc.get('title', '').strip()}. {doc.get('text', '').strip()}".strip(" .")
            buf = ""
            for sentence in re.split(r"(?<=[.!?])\s+", text):
                if buf and len(buf) + 1 + len(sentence) > PIECE_CHARS:
                    pieces.append(buf)
                    buf = sentence
                else:
                    buf = f"{buf} {sentence}" if buf else sentence
            if buf:
                pieces.append(buf)
    return pieces


def chunk_texts(n: int) -> list[str]:
    """``n`` chunk texts: the SciFact pieces, then perturbed copies (10% of words dropped,
    words rotated) until there are enough, so repeats are not identical postings."""
    pieces = scifact_pieces()
    out: list[str] = list(pieces[:n])
    rnd = 0
    while len(out) < n:
        rnd += 1
        rng = random.Random(rnd)
        for piece in pieces:
            words = [w for w in piece.split() if rng.random() >= 0.1] or piece.split()
            cut = rng.randrange(len(words))
            out.append(" ".join(words[cut:] + words[:cut]))
            if len(out) == n:
                break
    return out


def text_queries(count: int) -> list[str]:
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as fh:
        claims = [json.loads(line)["text"] for line in fh]
    random.Random(42).shuffle(claims)
    return [claims[i % len(claims)] for i in range(count)]


# ── building the databases (child process) ─────────────────────────────────────
def build_db(n: int, d: int) -> dict[str, Any]:
    from kbdesk import open_desk

    path = db_path(n, d)
    tmp = path.with_name(path.stem + ".building.db")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    home = Path(tempfile.mkdtemp(prefix="home-", dir=RESULTS))
    texts = chunk_texts(n)
    rng = np.random.default_rng([n, d, 7])
    add_s = 0.0
    t_all = time.perf_counter()
    try:
        with open_desk(db=tmp, home=home, backend="sqlite-vec") as desk:
            kb = desk.create_kb(KB_NAME, model_id=MODEL_ID, dimensions=d)
            for start in range(0, n, DOC_CHUNKS):
                chunks = texts[start:start + DOC_CHUNKS]
                vectors = unit_rows(rng, len(chunks), d)
                t = time.perf_counter()
                desk.add_document(kb.id, f"doc-{start // DOC_CHUNKS:04d}.txt", chunks, vectors=vectors)
                add_s += time.perf_counter() - t
        conn = raw_connection(tmp)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    total_s = time.perf_counter() - t_all
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    tmp.replace(path)
    meta = {"format": DB_FORMAT, "n": n, "d": d, "documents": (n + DOC_CHUNKS - 1) // DOC_CHUNKS,
            "add_document_s": add_s, "total_s": total_s, "chunks_per_s": n / add_s,
            "text_mb": sum(len(t.encode()) for t in texts) / 1e6, "db_mb": file_mb(path),
            "peak_rss_mb": peak_rss_mb(), "built_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return meta


def cached_meta(n: int, d: int) -> dict[str, Any] | None:
    path = db_path(n, d)
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return None
    if not path.exists() or meta.get("format") != DB_FORMAT or meta.get("n") != n or meta.get("d") != d:
        return None
    return meta


# ── measuring (child process) ──────────────────────────────────────────────────
def load_matrix(path: Path, kb_id: str, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The baseline's own copy of the vectors: streamed into a preallocated matrix."""
    conn = raw_connection(path)
    try:
        count = conn.execute("SELECT count(*) FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL",
                             (kb_id,)).fetchone()[0]
        seqs = np.empty(count, dtype=np.int64)
        matrix = np.empty((count, d), dtype=np.float32)
        cur = conn.execute("SELECT seq, embedding FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL "
                           "ORDER BY seq", (kb_id,))
        for i, (seq, blob) in enumerate(cur):
            seqs[i] = seq
            matrix[i] = np.frombuffer(blob, dtype=np.float32)
        return seqs, matrix
    finally:
        conn.close()


def db_sizes(path: Path, kb_id: str) -> dict[str, float]:
    """Used pages of the file, and the pages of the KB's vec0 tables (dbstat), in MB."""
    from kbdesk.store.vectors import vec_table

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
    t = time.perf_counter()
    doc = desk.add_document(kb_id, f"incremental-{tag}.txt", chunks, vectors=vectors)
    added = time.perf_counter() - t
    t = time.perf_counter()
    desk.delete_document(doc.id)
    return {"add_s": added, "delete_s": time.perf_counter() - t, "chunks": len(chunks)}


def exact_top(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    """The baseline: what a user writes in five lines."""
    sims = matrix @ q
    top = np.argpartition(sims, -k)[-k:]
    return top[np.argsort(-sims[top])]


def timed_rounds(methods: dict[str, Callable[[int], Any]], count: int, warmup: int,
                 offset: int = 0) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Run every method on query i, in a fresh random order for each query (so noise, cache
    effects and whatever ran just before are shared by all columns); return per-method
    timings (s) and outputs."""
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


def measure(spec: dict[str, Any], queries: int, warmup: int) -> dict[str, Any]:
    from kbdesk import open_desk

    n, d, with_text = spec["n"], spec["d"], spec["text"]
    path = db_path(n, d)
    blas = OpenBlas()
    res: dict[str, Any] = {"spec": spec, "loadavg_start": os.getloadavg()[0], "rss": {}, "once": {}}
    res["rss"]["start"] = (rss_mb(), peak_rss_mb())

    # every run measures an index build from scratch: mark the vec0 index stale
    conn = raw_connection(path)
    conn.execute("UPDATE kb_vector_state SET indexed_version = -1")
    conn.close()
    res["once"]["db_mb_before_index"] = file_mb(path)

    home = Path(tempfile.mkdtemp(prefix="home-", dir=RESULTS))
    try:
        t = time.perf_counter()
        desk_vec = open_desk(db=path, home=home, backend="sqlite-vec")
        res["once"]["open_sqlite_vec_s"] = time.perf_counter() - t
        t = time.perf_counter()
        desk_np = open_desk(db=path, home=home, backend="numpy")
        res["once"]["open_numpy_s"] = time.perf_counter() - t
        kb = desk_vec.kb(KB_NAME)
        assert desk_vec.store.vectors.name == "sqlite-vec" and desk_np.store.vectors.name == "numpy"
        res["once"]["sizes_before_index"] = db_sizes(path, kb.id)
        # ingestion into the existing KB while the vec0 index is stale (no vec0 work)
        extra = scifact_pieces()[:DOC_CHUNKS]
        res["ingest_stale"] = ingest_once(desk_vec, kb.id, d, extra, "stale")

        qrng = np.random.default_rng([n, d, 99])
        qv = unit_rows(qrng, warmup + queries + 1, d)

        def vsearch(desk: Any, i: int) -> Any:
            return desk.search([kb.id], "bench query", query_vector=qv[i], limit=LIMIT, threshold=0.0,
                               mode="vector")

        # one-off costs, in this order: sqlite-vec index build, numpy matrix load
        t = time.perf_counter()
        vsearch(desk_vec, len(qv) - 1)
        res["once"]["first_search_sqlite_vec_s"] = time.perf_counter() - t
        res["rss"]["after_index_build"] = (rss_mb(), peak_rss_mb())
        res["once"]["db_mb_after_index"] = file_mb(path)
        res["once"]["sizes_after_index"] = db_sizes(path, kb.id)
        res["once"]["wal_mb_after_index"] = file_mb(Path(f"{path}-wal"))
        t = time.perf_counter()
        vsearch(desk_vec, len(qv) - 1)
        res["once"]["second_search_sqlite_vec_s"] = time.perf_counter() - t

        rss_before = rss_mb()
        t = time.perf_counter()
        vsearch(desk_np, len(qv) - 1)
        res["once"]["first_search_numpy_s"] = time.perf_counter() - t
        res["rss"]["after_numpy_load"] = (rss_mb(), peak_rss_mb())
        res["once"]["numpy_load_rss_delta_mb"] = rss_mb() - rss_before
        res["once"]["numpy_load_peak_over_before_mb"] = peak_rss_mb() - rss_before
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)  # how much of that was freed heap kept by malloc
            res["once"]["numpy_load_rss_delta_after_trim_mb"] = rss_mb() - rss_before
        t = time.perf_counter()
        vsearch(desk_np, len(qv) - 1)
        res["once"]["second_search_numpy_s"] = time.perf_counter() - t

        t = time.perf_counter()
        seqs, matrix = load_matrix(path, kb.id, d)
        res["once"]["baseline_load_s"] = time.perf_counter() - t
        res["rss"]["after_baseline_load"] = (rss_mb(), peak_rss_mb())
        res["once"]["matrix_mb"] = matrix.nbytes / 1e6

        store_vec, store_np = desk_vec.store, desk_np.store
        # what-if: kbdesk's own vec0 query on a connection with memory-mapped I/O
        from kbdesk.store.vectors import vec_table

        mconn = raw_connection(path)
        mconn.execute(f"PRAGMA mmap_size = {int(file_mb(path) * 1e6 * 2)}")
        msql = (f"SELECT rowid, distance FROM {vec_table(kb.id)} WHERE embedding MATCH ? AND k = ? "
                "ORDER BY distance")
        methods: dict[str, Callable[[int], Any]] = {
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
                    with blas_threads(blas, 1):
                        return fn(i)
                return run
            methods["baseline 1 thread"] = one_thread(lambda i: exact_top(matrix, qv[i], LIMIT))
            methods["numpy 1 thread"] = one_thread(lambda i: vsearch(desk_np, i))
        times, outputs = timed_rounds(methods, queries, warmup)
        mconn.close()
        res["vector"] = {name: summary(ts) for name, ts in times.items()}
        res["vector_paired_ratio"] = {
            name: float(np.median(np.asarray(times[name]) / np.asarray(times["baseline"])))
            for name in times if name != "baseline"}
        res["rss"]["after_vector_queries"] = (rss_mb(), peak_rss_mb())

        # agreement with exact search (top-10 sets) and the similarity values returned
        exact = [set(seqs[top].tolist()) for top in outputs["baseline"]]
        for name in ("sqlite-vec index", "numpy index"):
            got = [set(s for s, _ in hits) for hits in outputs[name]]
            res.setdefault("recall_at_10", {})[name] = float(np.mean([len(a & b) / LIMIT for a, b in zip(got, exact)]))
        worst = 0.0
        for i, hits in enumerate(outputs["sqlite-vec index"]):
            qi = warmup + i
            for seq, sim in hits:
                row = int(np.searchsorted(seqs, seq))
                worst = max(worst, abs(sim - float(matrix[row] @ qv[qi])))
        res["sqlite_vec_max_similarity_error"] = worst

        # ingestion into the existing KB while the vec0 index is fresh: vec0 rows are written
        # in the same transaction (SqliteVecIndex.after_write)
        res["ingest_fresh"] = ingest_once(desk_vec, kb.id, d, extra, "fresh")
        assert desk_vec.store.vectors.is_fresh(desk_vec.store.connection(), kb.id)

        if with_text:
            res["text"] = measure_text(desk_vec, desk_np, kb.id, d, path, queries, warmup)
            res["rss"]["after_text_queries"] = (rss_mb(), peak_rss_mb())
        desk_vec.close()
        desk_np.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    res["loadavg_end"] = os.getloadavg()[0]
    return res


# Used only when kbdesk has no stopword list of its own (it has one since 4504a56).
BENCH_STOPWORDS = frozenset("""a an and are as at be been but by can could did do does for from had has have
how in into is it its may might more most no not of on or our should such than that the their then there
these they this those to was we were what when which while who will with would""".split())
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


def measure_text(desk_vec: Any, desk_np: Any, kb_id: str, d: int, path: Path, queries: int,
                 warmup: int) -> dict[str, Any]:
    from kbdesk.store import lookup

    stopwords = getattr(lookup, "STOPWORDS", BENCH_STOPWORDS)
    texts = text_queries(warmup + queries)
    qv = unit_rows(np.random.default_rng([d, 1234]), warmup + queries, d)
    store = desk_vec.store
    conn = store.connection()
    join_sql = ("SELECT f.rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts f "
                "JOIN kb_chunks c ON c.seq = f.rowid WHERE kb_chunks_fts MATCH ? AND c.kb_id IN (?) "
                "ORDER BY score DESC, f.rowid LIMIT ?")
    alone_sql = ("SELECT rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
                 "ORDER BY score DESC, rowid LIMIT ?")

    def search(desk: Any, i: int, mode: str) -> Any:
        return desk.search([kb_id], texts[i], query_vector=None if mode == "keyword" else qv[i],
                           limit=LIMIT, threshold=0.0, mode=mode)

    def fts_variant(i: int, *, stop: bool, join: bool) -> list[Any]:
        expr = fts_expr(texts[i], stopwords=stopwords if stop else None)
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
    out: dict[str, Any] = {"latency": {name: summary(ts) for name, ts in times.items()},
                           "stopwords": len(stopwords),
                           "stopwords_from": "kbdesk" if hasattr(lookup, "STOPWORDS") else "bench"}
    out["keyword_results_mean"] = float(np.mean([len(r.results) for r in outputs["keyword"]]))
    timed = texts[warmup:]
    out["terms_mean"] = float(np.mean([fts_expr(t, stopwords=None).count(" OR ") + 1 for t in timed]))
    out["terms_no_stopwords_mean"] = float(np.mean([fts_expr(t, stopwords=stopwords).count(" OR ") + 1
                                                    for t in timed]))
    count_sql = "SELECT count(*) FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ?"
    out["fts_rows_matched_mean"] = float(np.mean([
        conn.execute(count_sql, (fts_expr(t, stopwords=None),)).fetchone()[0] for t in timed[:20]]))
    out["fts_rows_matched_no_stopwords_mean"] = float(np.mean([
        conn.execute(count_sql, (fts_expr(t, stopwords=stopwords),)).fetchone()[0] for t in timed[:20]]))
    # one KB holds every chunk here, so the join changes nothing but the time
    same = [a == b for a, b in zip(outputs["SQL: stopwords out, join"], outputs["SQL: stopwords out, no join"])]
    out["no_join_same_results"] = float(np.mean(same))
    # how much the top-10 moves when stopwords are left out (a hint at quality, not a measure of it)
    every10 = [[seq for seq, _ in hits[:LIMIT]] for hits in outputs["SQL: every word, join"]]
    stop10 = [[seq for seq, _ in hits[:LIMIT]] for hits in outputs["SQL: stopwords out, join"]]
    out["no_stopwords_top10_overlap"] = float(np.mean([len(set(x) & set(y)) / max(len(x), 1)
                                                       for x, y in zip(every10, stop10)]))
    return out


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
    work = Path(tempfile.mkdtemp(prefix="vec0-", dir=RESULTS))
    res: dict[str, Any] = {"n": n, "d": d, "loadavg_start": os.getloadavg()[0], "build_s": {}}
    try:
        sconn = raw_connection(src)
        kb_id = sconn.execute("SELECT id FROM knowledge_bases WHERE name = ?", (KB_NAME,)).fetchone()[0]
        sconn.close()
        seqs, matrix = load_matrix(src, kb_id, d)
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
            conn.execute(f"INSERT INTO main.{v['table']}(rowid, embedding) SELECT seq, embedding FROM src.kb_chunks "
                         "WHERE kb_id = ? AND embedding IS NOT NULL ORDER BY seq", (kb_id,))
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
        res["paired_ratio"] = {name: float(np.median(np.asarray(ts) / np.asarray(times["plain numpy"])))
                               for name, ts in times.items()}
        ref = outputs["l2 (kbdesk's table)"]
        res["agreement"] = {}
        for name, outs in outputs.items():
            if name in ("l2 (kbdesk's table)", "plain numpy"):
                continue
            res["agreement"][name] = {
                "same_order": float(np.mean([[r for r, _ in a] == [r for r, _ in b] for a, b in zip(ref, outs)])),
                "same_set": float(np.mean([{r for r, _ in a} == {r for r, _ in b} for a, b in zip(ref, outs)])),
            }
        for conn in conns.values():
            conn.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
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
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            m @ q
            ts.append(time.perf_counter() - t)
        return min(ts)

    out["gb_s_all_threads"] = m.nbytes / best() / 1e9
    if blas.lib:
        with blas_threads(blas, 1):
            out["gb_s_one_thread"] = m.nbytes / best() / 1e9
    return out


# ── the machine ────────────────────────────────────────────────────────────────
def machine_info() -> dict[str, Any]:
    from kbdesk.store.driver import choose_driver

    driver = choose_driver("sqlite-vec")
    conn = driver.module.connect(":memory:")
    from kbdesk.store.driver import load_extensions

    load_extensions(conn, driver)
    vec_debug = conn.execute("SELECT vec_debug()").fetchone()[0]
    conn.close()
    flags = re.search(r"Build flags:(.*)", vec_debug)
    cpu = ""
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    cache = ""
    with contextlib.suppress(Exception):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        cache = "; ".join(line.split(":")[0].strip() + " " + line.split(":", 1)[1].strip()
                          for line in out.splitlines() if re.match(r"\s*L[23] cache", line))
    git = ""
    with contextlib.suppress(Exception):
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, check=False).stdout.strip()
        git = head + (" (src/ has uncommitted changes)" if dirty else "")
    mem = ""
    with contextlib.suppress(OSError):
        mem = f"{int(open('/proc/meminfo').readline().split()[1]) / 1e6:.1f} GB"
    return {
        "nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "cpu": cpu, "cache": cache,
        "memory": mem, "python": platform.python_version(), "platform": platform.platform(),
        "sqlite_driver": driver.name, "sqlite": driver.sqlite_version, "sqlite_vec": driver.vec_version,
        "sqlite_vec_build_flags": (flags.group(1).strip() if flags else "?") or "(none)",
        "numpy": np.__version__, "openblas": OpenBlas().info(),
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")},
        "git": git, "loadavg": os.getloadavg(),
    }


# ── the orchestrator ───────────────────────────────────────────────────────────
def child(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task in a fresh interpreter; return its JSON result."""
    with tempfile.NamedTemporaryFile("r", suffix=".json", dir=RESULTS, delete=False) as fh:
        out = Path(fh.name)
    try:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(task), "--child-out", str(out)]
        subprocess.run(cmd, check=True)
        return json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)


def run_child(task: dict[str, Any]) -> dict[str, Any]:
    kind = task["kind"]
    if kind == "build":
        return build_db(task["n"], task["d"])
    if kind == "measure":
        return measure(task["spec"], task["queries"], task["warmup"])
    if kind == "vec0":
        return measure_vec0(task["n"], task["d"], task["queries"], task["warmup"])
    if kind == "bandwidth":
        return measure_bandwidth()
    raise SystemExit(f"unknown task {kind}")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10k chunks only (a minute or two)")
    ap.add_argument("--queries", type=int, default=None, help="timed queries per data set (default 100; quick 60)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed warm-up queries (default 5)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached databases")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/BENCHMARKS-search.md")
    ap.add_argument("--doc", action="store_true", help="rewrite the doc even for --quick")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        sys.path.insert(0, str(ROOT / "src"))
        result = run_child(json.loads(args.child))
        Path(args.child_out).write_text(json.dumps(result))
        return 0

    RESULTS.mkdir(parents=True, exist_ok=True)
    queries = args.queries or (60 if args.quick else 100)
    if queries < 50:
        log(f"note: {queries} queries (< 50): percentiles are rough")
    sets = QUICK_SETS if args.quick else FULL_SETS
    command = ".venv/bin/python bench/bench_search.py" + ("".join(" " + shlex.quote(a) for a in (argv or sys.argv[1:])))
    t_start = time.perf_counter()

    machine = machine_info()
    log(f"machine: {machine['nproc']} CPUs, python {machine['python']}, sqlite {machine['sqlite']} "
        f"({machine['sqlite_driver']}), sqlite-vec {machine['sqlite_vec']}, numpy {machine['numpy']}, "
        f"OpenBLAS threads {machine['openblas'].get('threads')}")

    builds: dict[str, Any] = {}
    for spec in sets:
        key = f"{spec['n']}x{spec['d']}"
        meta = None if args.rebuild else cached_meta(spec["n"], spec["d"])
        if meta is None:
            log(f"building {db_path(spec['n'], spec['d']).name} ...")
            meta = child({"kind": "build", "n": spec["n"], "d": spec["d"]})
            meta["fresh"] = True
        else:
            meta["fresh"] = False
        builds[key] = meta

    log("measuring memory read rate ...")
    bandwidths = [child({"kind": "bandwidth"})]
    runs = []
    for spec in sets:
        log(f"measuring {spec['n']} x {spec['d']}{' (+ keyword/hybrid)' if spec['text'] else ''} ...")
        runs.append(child({"kind": "measure", "spec": spec, "queries": queries, "warmup": args.warmup}))
    vec0 = []
    largest = max(spec["n"] for spec in sets)
    for d in sorted({spec["d"] for spec in sets if spec["n"] == largest}):
        log(f"measuring vec0 variants (l2 / cosine / chunk_size) at {largest} x {d} ...")
        vec0.append(child({"kind": "vec0", "n": largest, "d": d, "queries": queries, "warmup": args.warmup}))
    log("measuring memory read rate again ...")
    bandwidths.append(child({"kind": "bandwidth"}))
    bandwidth = {key: max(b.get(key, 0.0) for b in bandwidths) for key in bandwidths[0]}
    bandwidth["samples"] = bandwidths

    report = {"command": command, "quick": args.quick, "queries": queries, "warmup": args.warmup,
              "machine": machine, "bandwidth": bandwidth, "builds": builds, "runs": runs, "vec0": vec0,
              "git_end": machine_info()["git"], "wall_s": time.perf_counter() - t_start, "date": time.strftime("%Y-%m-%d %H:%M")}
    (RESULTS / f"search-{'quick' if args.quick else 'full'}.json").write_text(json.dumps(report, indent=1))
    text = render(report)
    print(text)
    if (not args.quick or args.doc) and not args.no_doc:
        write_doc(text)
        log(f"wrote {DOC.relative_to(ROOT)}")
    return 0


# ── rendering ──────────────────────────────────────────────────────────────────
def fmt_ms(x: float) -> str:
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def k(n: int) -> str:
    return f"{n // 1000}k"


def render(r: dict[str, Any]) -> str:
    m, bw = r["machine"], r["bandwidth"]
    ob = m["openblas"]
    lines: list[str] = []
    add = lines.append
    add(f"Command: `{r['command']}` — {r['queries']} timed queries per data set after {r['warmup']} warm-up, "
        f"limit {LIMIT}, run {r['date']}, {r['wall_s'] / 60:.1f} min wall.")
    add("")
    add(f"Machine: {m['nproc']} CPUs ({m['cpu']}; {m['cache']}; {m['memory']} RAM), shared with other "
        f"engineers' test runs (load average {m['loadavg'][0]:.2f} at start). Python {m['python']}, "
        f"SQLite {m['sqlite']} via {m['sqlite_driver']}, sqlite-vec {m['sqlite_vec']} (build flags: "
        f"{m['sqlite_vec_build_flags']}), numpy {m['numpy']}, "
        + (f"OpenBLAS `{ob['config']}` core {ob['corename']}, {ob['threads']} threads" if ob.get("found")
           else "OpenBLAS not found")
        + f"; OPENBLAS_CORETYPE={m['env']['OPENBLAS_CORETYPE'] or 'unset'}, "
        f"OPENBLAS_NUM_THREADS={m['env']['OPENBLAS_NUM_THREADS'] or 'unset'}. kbdesk at {m['git'] or '?'}"
        + (f" at the start, {r['git_end']} at the end (other engineers commit while it runs)"
           if r.get("git_end") and r["git_end"] != m["git"] else "") + ".")
    add("")
    bw_all = bw["gb_s_all_threads"]
    add(f"Memory read rate (float32 gemv over 1 GiB, larger than L3): {bw_all:.1f} GB/s with all OpenBLAS "
        f"threads" + (f", {bw['gb_s_one_thread']:.1f} GB/s on one thread" if "gb_s_one_thread" in bw else "")
        + " (best of a measurement before and after the run). \"Floor\" below = bytes scanned ÷ the "
        "all-threads rate; a data set that fits in L3 can be scanned faster than that.")
    add("")

    # vector latency
    add("### Vector search latency (ms), `desk.search(mode=\"vector\", limit=10)`")
    add("")
    add("| chunks × dims | MB scanned | floor | plain numpy p50 / p95 (min) | sqlite-vec p50 / p95 (min) | "
        "× plain | numpy backend p50 / p95 (min) | × plain |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|")

    def trio(st: dict[str, float]) -> str:
        return f"{fmt_ms(st['p50'])} / {fmt_ms(st['p95'])} ({fmt_ms(st['min'])})"

    for run in r["runs"]:
        s, v, ratio = run["spec"], run["vector"], run["vector_paired_ratio"]
        mb = s["n"] * s["d"] * 4 / 1e6
        add(f"| {k(s['n'])} × {s['d']} | {mb:.0f} | {fmt_ms(mb / 1e3 / bw_all * 1e3)} | {trio(v['baseline'])} | "
            f"{trio(v['sqlite-vec'])} | {ratio['sqlite-vec']:.1f}× | {trio(v['numpy'])} | {ratio['numpy']:.1f}× |")
    add("")
    add("Plain numpy = `M @ q` + `argpartition` on an in-memory float32 matrix (OpenBLAS, all threads), "
        "the floor a user writes in five lines. \"× plain\" = the median over queries of (backend time ÷ "
        "plain-numpy time for the same query, measured moments apart), which is steadier than a ratio of "
        "p50s when other processes come and go. (min) = the fastest query: what the machine does when "
        "nobody else is using it.")
    add("")
    add("### Where the vector time goes (p50 ms)")
    add("")
    add("| chunks × dims | plain numpy | plain numpy, 1 thread | sqlite-vec index only | "
        "sqlite-vec desk.search | what-if: vec0 + mmap | numpy index only | numpy desk.search | "
        "numpy desk.search, 1 thread | recall@10 sqlite-vec / numpy |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def cell(v: dict[str, Any], name: str) -> str:
        return fmt_ms(v[name]["p50"]) if name in v else "n/a"

    for run in r["runs"]:
        s, v = run["spec"], run["vector"]
        rec = run.get("recall_at_10", {})
        add(f"| {k(s['n'])} × {s['d']} | {cell(v, 'baseline')} | {cell(v, 'baseline 1 thread')} | "
            f"{cell(v, 'sqlite-vec index')} | {cell(v, 'sqlite-vec')} | {cell(v, 'what-if: vec0 query with mmap')} | "
            f"{cell(v, 'numpy index')} | {cell(v, 'numpy')} | {cell(v, 'numpy 1 thread')} | "
            f"{rec.get('sqlite-vec index', float('nan')):.3f} / {rec.get('numpy index', float('nan')):.3f} |")
    add("")
    add("\"index only\" = `store.vector_candidates(kb, dims, q, 10)`: the backend's scan without the "
        "search pipeline (KB lookup, query checks, result rows). \"1 thread\" = the same call with OpenBLAS "
        "set to one thread around it. \"what-if: vec0 + mmap\" = kbdesk's vec0 SQL on its own connection "
        "with `PRAGMA mmap_size` set (not what kbdesk does today). Recall = overlap of the top-10 with plain "
        "numpy's exact top-10; largest |similarity error| of sqlite-vec's `1 - d²/2`: "
        + ", ".join(f"{run['sqlite_vec_max_similarity_error']:.1e}" for run in r["runs"]) + ".")
    add("")

    # one-off costs
    add("### One-off costs and memory")
    add("")
    add("| chunks × dims | open desk (s) | sqlite-vec first search = index build (s) | numpy first search = "
        "matrix load (s) | baseline load, streamed (s) | numpy load: RSS +MB / peak +MB / +MB after malloc_trim "
        "| matrix MB | "
        "vec0 tables MB | DB file MB | WAL MB after index | peak RSS MB (whole run) |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for run in r["runs"]:
        s, o = run["spec"], run["once"]
        peak = max(p for _, p in run["rss"].values())
        add(f"| {k(s['n'])} × {s['d']} | {o['open_sqlite_vec_s']:.2f} / {o['open_numpy_s']:.2f} | "
            f"{o['first_search_sqlite_vec_s']:.2f} | {o['first_search_numpy_s']:.2f} | {o['baseline_load_s']:.2f} | "
            f"{o['numpy_load_rss_delta_mb']:.0f} / {o['numpy_load_peak_over_before_mb']:.0f} / "
            f"{o.get('numpy_load_rss_delta_after_trim_mb', float('nan')):.0f} | "
            f"{o['matrix_mb']:.0f} | {o.get('sizes_after_index', {}).get('vec0_mb', float('nan')):.0f} | "
            f"{o['db_mb_after_index']:.0f} | "
            f"{o['wal_mb_after_index']:.0f} | {peak:.0f} |")
    add("")
    add("RSS per phase (current / peak-so-far, MB), from `/proc/self/statm` and `getrusage`:")
    add("")
    phases = ["start", "after_index_build", "after_numpy_load", "after_baseline_load", "after_vector_queries",
              "after_text_queries"]
    add("| chunks × dims | " + " | ".join(p.replace("_", " ") for p in phases) + " |")
    add("|---|" + "---:|" * len(phases))
    for run in r["runs"]:
        s = run["spec"]
        cells = [f"{run['rss'][p][0]:.0f} / {run['rss'][p][1]:.0f}" if p in run["rss"] else "—" for p in phases]
        add(f"| {k(s['n'])} × {s['d']} | " + " | ".join(cells) + " |")
    add("")

    add("Ingestion into the existing KB (one document of 500 SciFact chunks with vectors, then deleted), "
        "s per document and chunks/s:")
    add("")
    add("| chunks × dims | add, vec0 index stale | add, vec0 index fresh | delete, stale | delete, fresh |")
    add("|---|---:|---:|---:|---:|")
    for run in r["runs"]:
        s, a, b = run["spec"], run["ingest_stale"], run["ingest_fresh"]
        add(f"| {k(s['n'])} × {s['d']} | {a['add_s']:.2f} ({a['chunks'] / a['add_s']:.0f}/s) | "
            f"{b['add_s']:.2f} ({b['chunks'] / b['add_s']:.0f}/s) | {a['delete_s']:.2f} | {b['delete_s']:.2f} |")
    add("")
    add("\"fresh\" = the sqlite-vec index is up to date, so `add_document` also inserts the vectors into vec0 "
        "in its transaction; while it is stale (never searched since the last numpy-side write, or a new KB) "
        "nothing is written to vec0 and the next sqlite-vec search rebuilds the whole table (the \"index "
        "build\" column above).")
    add("")

    # text
    for run in r["runs"]:
        if "text" not in run:
            continue
        s, t = run["spec"], run["text"]
        lat = t["latency"]
        add(f"### Keyword and hybrid latency (ms) at {k(s['n'])} chunks × {s['d']} (SciFact text, random vectors)")
        add("")
        add("| query | p50 | p95 |")
        add("|---|---:|---:|")
        for name, st in lat.items():
            add(f"| {name} | {fmt_ms(st['p50'])} | {fmt_ms(st['p95'])} |")
        add("")
        add(f"SciFact claims as queries: {t['terms_mean']:.1f} distinct words on average, "
            f"{t['terms_no_stopwords_mean']:.1f} without stopwords ({t['stopwords']} words, "
            f"{'kbdesk' + chr(39) + 's list' if t['stopwords_from'] == 'kbdesk' else 'the bench' + chr(39) + 's list'}); "
            f"OR-ed, one query matches {t['fts_rows_matched_mean']:.0f} of {s['n']} chunks on average with every "
            f"word, {t['fts_rows_matched_no_stopwords_mean']:.0f} without stopwords. \"keyword\" and \"hybrid\" "
            f"are `desk.search`; \"part\" rows time one step of the hybrid alone (kbdesk's own calls); \"SQL\" "
            f"rows are top-{HYBRID_POOL} FTS5 queries written here (with or without the join to `kb_chunks` that "
            f"restricts hits to the KB), for comparison whatever kbdesk's query builder does today. Without the "
            f"join the top-{HYBRID_POOL} was the same for {t['no_join_same_results'] * 100:.0f}% of queries "
            f"(one KB holds every chunk here); leaving the stopwords out kept "
            f"{t['no_stopwords_top10_overlap'] * 100:.0f}% of the BM25 top-10.")
        add("")

    # vec0 variants
    add("### sqlite-vec's own options (direct SQL on a connection with sqlite-vec loaded, same unit vectors)")
    add("")
    add("| data set | vec0 table | build (s) | p50 ms | p95 ms | × plain numpy | same top-10 as kbdesk's table |")
    add("|---|---|---:|---:|---:|---:|---|")
    for mt in r["vec0"]:
        for name, st in mt["latency"].items():
            build = mt["build_s"].get(name)
            agree = mt["agreement"].get(name)
            agree_s = (f"order {agree['same_order'] * 100:.0f}%, set {agree['same_set'] * 100:.0f}%"
                       if agree else "—")
            add(f"| {k(mt['n'])} × {mt['d']} | {name} | {f'{build:.2f}' if build is not None else '—'} | "
                f"{fmt_ms(st['p50'])} | {fmt_ms(st['p95'])} | {mt['paired_ratio'][name]:.1f}× | {agree_s} |")
    add("")
    add("Each table is built like kbdesk's index (`INSERT INTO vec(rowid, embedding) SELECT seq, embedding "
        "FROM kb_chunks ... ORDER BY seq`, one transaction) in a fresh WAL database file (or `:memory:`). "
        "vec0 stores vectors in chunks of `chunk_size` rows (default 1024) inside one BLOB per chunk.")
    add("")

    # build
    add("### Build (side figure): `desk.add_document`, 500 chunks per document")
    add("")
    add("| chunks × dims | chunks/s | add_document total (s) | text MB | DB MB (before vec0) | built |")
    add("|---|---:|---:|---:|---:|---|")
    for key, b in r["builds"].items():
        add(f"| {k(b['n'])} × {b['d']} | {b['chunks_per_s']:.0f} | {b['add_document_s']:.1f} | "
            f"{b['text_mb']:.0f} | {b['db_mb']:.0f} | {'this run' if b.get('fresh') else 'cached, ' + b['built_at']} |")
    add("")

    # aims
    add("### Aims")
    add("")
    target = next((run for run in r["runs"] if run["spec"]["n"] == 100_000 and run["spec"]["d"] == 384), None)
    if target is None:
        add("(The aims are stated at 100k chunks; this run did not measure 100k.)")
    else:
        v = target["vector"]
        add("| aim | sqlite-vec | numpy backend | plain numpy |")
        add("|---|---|---|---|")
        def verdict(st: dict[str, float], aim: float) -> str:
            x = st["p50"]
            return (f"p50 {fmt_ms(x)} ms — {'meets' if x <= aim else 'misses'} (p95 {fmt_ms(st['p95'])}, "
                    f"fastest {fmt_ms(st['min'])})")
        add(f"| vector p50 ≤ {AIM_VECTOR_MS:.0f} ms at 100k × 384 | {verdict(v['sqlite-vec'], AIM_VECTOR_MS)} | "
            f"{verdict(v['numpy'], AIM_VECTOR_MS)} | {verdict(v['baseline'], AIM_VECTOR_MS)} |")
        if "text" in target:
            lat = target["text"]["latency"]
            add(f"| hybrid p50 ≤ {AIM_HYBRID_MS:.0f} ms at 100k | {verdict(lat['hybrid sqlite-vec'], AIM_HYBRID_MS)} | "
                f"{verdict(lat['hybrid numpy'], AIM_HYBRID_MS)} | — |")
        add("")
        add(f"Verdicts are this run's p50, measured with a load average of {target['loadavg_start']:.1f}–"
            f"{target['loadavg_end']:.1f} on 2 CPUs; \"fastest\" is the quickest of the {target['vector']['numpy']['n']} "
            "queries, close to what an idle machine gives.")
    add("")
    add("Load average at the start / end of each measurement (other processes share the 2 CPUs): "
        + ", ".join(f"{k(run['spec']['n'])}×{run['spec']['d']} {run['loadavg_start']:.1f}/{run['loadavg_end']:.1f}"
                    for run in r["runs"])
        + "".join(f", vec0 {k(mt['n'])}×{mt['d']} {mt['loadavg_start']:.1f}/{mt['loadavg_end']:.1f}"
                  for mt in r["vec0"]) + ".")
    return "\n".join(lines)


def write_doc(tables: str) -> None:
    keep = f"{DISCUSSION_START}\n(Conclusions are written by hand here; the bench keeps this section.)\n{DISCUSSION_END}"
    if DOC.exists():
        old = DOC.read_text()
        a, b = old.find(DISCUSSION_START), old.find(DISCUSSION_END)
        if a >= 0 and b > a:
            keep = old[a:b + len(DISCUSSION_END)]
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(
        "# Search latency: sqlite-vec vs numpy vs plain numpy, keyword and hybrid\n\n"
        "Written by `bench/bench_search.py` (full run); the tables below are regenerated on every full run, "
        "the discussion is kept.\n\n"
        "## How it is measured\n\n"
        "- One database per data set (`bench/results/`, cached): one KB, documents of 500 chunks added with "
        "`desk.add_document`, chunk texts from SciFact abstracts cut at sentence ends into ~1000-character "
        "pieces (≈10.4k pieces; beyond that, copies with 10% of the words dropped and the words rotated), "
        "random unit vectors.\n"
        "- Each data set is measured in its own process; both backends open the same file "
        "(`open_desk(backend=\"sqlite-vec\")` and `open_desk(backend=\"numpy\")`). The sqlite-vec index is "
        "marked stale first, so its first search always includes a full `vec0` build.\n"
        "- Timed queries run every method on the same query, in a fresh random order per query, so noise "
        "from other processes on this shared 2-CPU machine lands on all columns alike; the paired ratios to "
        "plain numpy are the figures to compare across machines, the (min) column is the quiet-machine "
        "figure.\n"
        "- Rows marked \"what-if\" or \"SQL\" are direct SQL written in the bench (not kbdesk code), to show "
        "what a change would buy.\n"
        "- OS page cache is warm (the databases were just built or read); this is in-memory search speed.\n\n"
        "## Discussion\n\n" + keep + "\n\n## Results\n\n" + tables + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
