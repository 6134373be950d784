"""bench_scale.py's measurements (each data set in a child process): exact vs quantised
vectors, sqlite-vec's bit[] comparison, keyword and hybrid search, and keyword quality
under bounded term budgets."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import scifact
from harness import (
    malloc_trim,
    paired_ratios,
    rss_mb,
    rss_now,
    scratch_dir,
    summary,
    timed,
    timed_rounds,
)
from harness.paths import scifact_dir
from harness.timing import repeat
from scale_data import (
    KB_NAME,
    LIMIT,
    POOL,
    db_path,
    embeddings,
    make_vectors,
    noise_scale,
    projection,
    query_texts,
    query_vectors,
)
from vector_kb import (
    exact_top,
    fts_rows_matched,
    kb_id_of,
    overlap,
    raw_connection,
    remove_matrix_files,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


# ── measuring (child process) ──────────────────────────────────────────────────
def stream_bits(path: Path, kb_id: str, d: int) -> tuple[float, int]:
    """What a load would cost without kb_vector_bits: read every vector, compute its bits."""
    from kbdesk.store.sqlite.quantized import sign_bits

    conn = raw_connection(path)
    t = time.perf_counter()
    count = 0
    cur = conn.execute("SELECT seq, embedding FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL", (kb_id,))
    while batch := cur.fetchmany(16384):
        sign_bits(np.frombuffer(b"".join(r[1] for r in batch), dtype=np.float32).reshape(len(batch), d))
        count += len(batch)
    conn.close()
    return time.perf_counter() - t, count


def fts_terms(text: str) -> list[str]:
    from kbdesk.store.sqlite.lookup import fts_query

    return re.findall(r'"([^"]+)"', fts_query(text))


def measure(n: int, d: int, queries: int, warmup: int, vec0_bits: bool) -> dict[str, Any]:
    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.store.sqlite.quantized import (
        DEFAULT_OVERSAMPLE,
        MIN_RESCORE,
        PRESELECT,
        asymmetric_scores,
        hamming,
        nearest,
        sign_bits,
    )

    path = db_path(n, d)
    res: dict[str, Any] = {"n": n, "d": d, "loadavg_start": os.getloadavg()[0], "rss": {"start": rss_now()}, "once": {}}
    once, rss = res["once"], res["rss"]
    emb = embeddings()
    total = warmup + queries
    qv = query_vectors(emb, d, total + 2)
    qt = query_texts(total + 2)
    defaults = parse_config({}).vector
    res["defaults"] = {"quantize_above": defaults.quantize_above, "oversample": defaults.oversample}

    # every run measures the one-off bits build: start without bits
    conn = raw_connection(path)
    conn.execute("DELETE FROM kb_vector_bits")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    remove_matrix_files(path)  # and the matrix file: its write is measured too
    with scratch_dir("home-") as home:

        def desk_with(quantize_above: int, matrix_files: bool = True) -> Any:
            cfg = parse_config({"vector": {"backend": "numpy", "quantize_above": quantize_above}})
            desk = open_desk(db=path, home=home, config=cfg)
            desk.store.vectors.matrices.enabled = matrix_files
            return desk

        # quantised whatever the size; rescoring from the matrix file once it is written (below)
        desk_q = desk_with(1, matrix_files=False)
        desk_x = desk_with(0, matrix_files=False)  # exact whatever the size, in memory (the floor shares it)
        kb = desk_q.kb(KB_NAME)
        store_q, store_x = desk_q.store, desk_x.store

        # one-off costs: bits built whole (first quantised search), bits read back (a new store)
        once["bits_build_s"], _ = timed(lambda: store_q.vector_candidates(kb.id, d, qv[-1], POOL))
        rss["after_bits_build"] = rss_now()
        desk_q.close()
        malloc_trim()
        rss0 = rss_mb()
        desk_q = desk_with(1, matrix_files=False)
        store_q = desk_q.store
        qidx = store_q.vectors.quantized
        once["bits_load_s"], _ = timed(lambda: store_q.vector_candidates(kb.id, d, qv[-1], POOL))
        codes = qidx.codes(store_q, kb.id, d)
        once["codes_mb"] = codes.nbytes / 1e6
        once["bits_load_rss_delta_mb"] = rss_mb() - rss0
        rss["after_bits_load"] = rss_now()
        once["no_table_load_s"], _ = stream_bits(path, kb.id, d)
        store_q.vectors.matrices.enabled = True
        once["matrix_file_write_s"], _ = timed(lambda: store_q.vectors.matrices.get(store_q, kb.id, d))
        desk_qs = desk_with(1, matrix_files=False)  # quantised, rescoring from SQLite rows (before matrix files)
        store_qs = desk_qs.store
        store_qs.vector_candidates(kb.id, d, qv[-1], POOL)

        # exact: the numpy backend's matrix (the floor below shares it: same vectors, no second copy)
        rss0 = rss_mb()
        once["matrix_load_s"], _ = timed(lambda: store_x.vector_candidates(kb.id, d, qv[-1], POOL))
        rss["after_matrix_load"] = rss_now()
        malloc_trim()
        once["matrix_load_rss_delta_mb"] = rss_mb() - rss0
        seqs, matrix = store_x.vectors._matrix(store_x, kb.id, d)
        once["matrix_mb"] = matrix.nbytes / 1e6
        row_of = {int(s): i for i, s in enumerate(seqs)}
        r_default = max(POOL * DEFAULT_OVERSAMPLE, MIN_RESCORE)

        def vsearch(desk: Any, i: int) -> list[Any]:
            out = desk.search([kb.id], "", query_vector=qv[i], limit=LIMIT, threshold=-1.0, mode="vector")
            return [(r.document_id, r.chunk_index) for r in out.results]

        def in_memory_rescore(i: int) -> list[int]:
            cand = qidx.candidates(store_q, kb.id, d, qv[i], r_default)
            rows = np.fromiter((row_of[int(s)] for s in cand), dtype=np.int64, count=cand.size)
            sims = matrix[rows] @ qv[i]
            return cand[np.argsort(-sims)[:LIMIT]].tolist()

        qbits = sign_bits(qv[:total]).view(np.uint64)
        floor = "plain numpy (floor)"
        methods: dict[str, Callable[[int], Any]] = {
            floor: lambda i: seqs[exact_top(matrix, qv[i], LIMIT)].tolist(),
            "exact: index": lambda i: store_x.vector_candidates(kb.id, d, qv[i], POOL),
            "exact: desk.search": lambda i: vsearch(desk_x, i),
            "quantised: index": lambda i: store_q.vector_candidates(kb.id, d, qv[i], POOL),
            "quantised: desk.search": lambda i: vsearch(desk_q, i),
            "quantised, rescored from SQLite: index": lambda i: store_qs.vector_candidates(kb.id, d, qv[i], POOL),
            "quantised, rescored from SQLite: desk.search": lambda i: vsearch(desk_qs, i),
            "part: Hamming scan": lambda i: hamming(codes.words, qbits[i]),
            "part: Hamming scan, 1 thread": lambda i: hamming(codes.words, qbits[i], threads=1),
            "part: preselection (Hamming, then bits x query)": lambda i: qidx.candidates(
                store_q, kb.id, d, qv[i], r_default
            ),
            "what-if: quantised, rescored in memory": in_memory_rescore,
        }
        times, outputs = timed_rounds(methods, queries, warmup)
        res["vector"] = {name: summary(ts) for name, ts in times.items()}
        res["vector_paired_ratio"] = paired_ratios(times, floor)
        rss["after_vector_queries"] = rss_now()
        exact10 = outputs[floor]

        def top_seqs(name: str) -> list[list[int]]:
            return [[s for s, _ in got[:LIMIT]] for got in outputs[name]]

        res["recall_at_10"] = {
            "quantised: index": overlap(top_seqs("quantised: index"), exact10, LIMIT),
            "quantised, rescored from SQLite: index": overlap(
                top_seqs("quantised, rescored from SQLite: index"), exact10, LIMIT
            ),
            "exact: index": overlap(top_seqs("exact: index"), exact10, LIMIT),
            "quantised: desk.search vs exact desk.search": overlap(
                outputs["quantised: desk.search"], outputs["exact: desk.search"], LIMIT
            ),
            "what-if: rescored in memory": overlap(outputs["what-if: quantised, rescored in memory"], exact10, LIMIT),
        }

        # recall@10 against the number of candidates rescored (R = 50 x oversample for a
        # limit-10 search), with and without the second step, on every query vector there is
        sweep_r = [100, 200, 300, 500, 1000, 2000]
        hits: dict[str, list[float]] = {f"{kind} {r}": [] for r in sweep_r for kind in ("hamming", "two-step")}
        for q in query_vectors(emb, d, len(emb["queries"])):
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
        res["recall_sweep"] = {
            key: {
                "mean": float(np.mean(h)),
                "p5": float(np.percentile(h, 5)),
                "min": float(np.min(h)),
                "queries": len(h),
            }
            for key, h in hits.items()
        }

        # keyword and hybrid, SciFact claims with their own embeddings
        res["text"] = measure_text(desk_q, desk_x, kb.id, n, qt, qv, queries, warmup)
        rss["after_text_queries"] = rss_now()

        # a write into the big KB: its bits go in with it; the next search reloads the codes
        vectors = make_vectors(emb, np.arange(500), 10**9, d, projection(d), noise_scale(emb))
        once["add_500_s"], doc = timed(
            lambda: desk_q.add_document(
                kb.id, "incremental.txt", emb["texts"][:500], vectors=[v.tobytes() for v in vectors]
            )
        )
        once["search_after_write_s"], _ = timed(lambda: store_q.vector_candidates(kb.id, d, qv[0], POOL))
        once["delete_500_s"], _ = timed(lambda: desk_q.delete_document(doc.id))
        store_q.vector_candidates(kb.id, d, qv[0], POOL)  # stale file: rescored from SQLite, rewritten behind
        once["matrix_file_rewrite_in_background_s"], _ = timed(lambda: store_q.vectors.matrices.wait())
        desk_qs.close()
        desk_q.close()
        desk_x.close()
    if vec0_bits:
        res["vec0_bits"] = measure_vec0_bits(path, d, min(queries, 5))
    res["loadavg_end"] = os.getloadavg()[0]
    rss["end"] = rss_now()
    return res


def measure_text(
    desk_q: Any, desk_x: Any, kb_id: str, n: int, qt: list[str], qv: np.ndarray, queries: int, warmup: int
) -> dict[str, Any]:
    from kbdesk.config import parse_config
    from kbdesk.store.sqlite.lookup import fts_query

    store = desk_x.store
    conn = store.connection()
    threshold = parse_config({}).vector.quantize_above
    default_desk = desk_q if threshold and n > threshold else desk_x

    def search(desk: Any, i: int, mode: str) -> Any:
        return desk.search(
            [kb_id], qt[i], query_vector=None if mode == "keyword" else qv[i], limit=LIMIT, threshold=0.0, mode=mode
        )

    alone = (
        "SELECT rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
        "ORDER BY score DESC, rowid LIMIT ?"
    )
    methods: dict[str, Callable[[int], Any]] = {
        "keyword: desk.search": lambda i: search(desk_x, i, "keyword"),
        "hybrid: desk.search (default path)": lambda i: search(default_desk, i, "hybrid"),
        "hybrid: desk.search, exact vectors": lambda i: search(desk_x, i, "hybrid"),
        "hybrid: desk.search, quantised vectors": lambda i: search(desk_q, i, "hybrid"),
        "part: FTS candidates (k=50)": lambda i: store.keyword_candidates([kb_id], qt[i], POOL),
        "what-if: FTS unbounded (k=50)": lambda i: conn.execute(alone, (fts_query(qt[i]), POOL)).fetchall(),
    }
    times, _ = timed_rounds(methods, queries, warmup)
    timed_q = list(range(warmup, warmup + queries))
    return {
        "latency": {name: summary(ts) for name, ts in times.items()},
        "default_path": "quantised" if default_desk is desk_q else "exact",
        "terms_mean": float(np.mean([len(fts_terms(qt[i])) for i in timed_q])),
        "rows_matched_mean": fts_rows_matched(conn, [fts_query(qt[i]) for i in timed_q[:20]]),
        "slowest_keyword_queries": sorted(
            ((times["keyword: desk.search"][j] * 1e3, qt[i]) for j, i in enumerate(timed_q)), reverse=True
        )[:3],
    }


def measure_vec0_bits(path: Path, d: int, queries: int) -> dict[str, Any]:
    """sqlite-vec's own binary vectors (``bit[d]``, hamming KNN) on the same bits, in memory."""
    kb_id = kb_id_of(path, KB_NAME)
    src = raw_connection(path)
    mem = raw_connection(":memory:")
    mem.execute(f"CREATE VIRTUAL TABLE vb USING vec0(embedding bit[{d}])")
    width = d // 8
    t = time.perf_counter()
    mem.execute("BEGIN")
    cur = src.execute("SELECT seq, bits FROM kb_vector_bits WHERE kb_id = ? ORDER BY seq", (kb_id,))
    while batch := cur.fetchmany(16384):
        mem.executemany("INSERT INTO vb(rowid, embedding) VALUES (?, vec_bit(?))", [(s, b[:width]) for s, b in batch])
    mem.execute("COMMIT")
    out: dict[str, Any] = {"build_s": time.perf_counter() - t}
    src.close()
    rng = np.random.default_rng(9)
    sql = "SELECT rowid, distance FROM vb WHERE embedding MATCH vec_bit(?) AND k = ? ORDER BY distance"
    for k in (100, 500):
        codes = [rng.integers(0, 256, size=width, dtype=np.uint8).tobytes() for _ in range(queries)]
        _, times = repeat(lambda q, k=k: mem.execute(sql, (q, k)).fetchall(), codes)
        out[f"k={k}"] = summary(times)
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
    from kbdesk.store import keywords
    from kbdesk.store.sqlite import lookup

    ds = load_dataset(scifact_dir(), "train")
    emb = embeddings()
    _, base = scifact.chunk_texts(n, emb["texts"])
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
        at = corpus.find(text[len(text) // 3 : len(text) // 3 + 50])
        piece_doc.append(ids[bisect.bisect_right(starts, at) - 1] if at >= 0 else None)
    out: dict[str, Any] = {"n": n, "d": d, "mapped": sum(x is not None for x in piece_doc), "pieces": len(piece_doc)}
    with scratch_dir("home-") as home, open_desk(db=db_path(n, d), home=home, backend="numpy") as desk:
        store = desk.store
        conn = store.connection()
        first = conn.execute("SELECT min(seq) FROM kb_chunks").fetchone()[0]
        sql = (
            "SELECT rowid, -bm25(kb_chunks_fts) AS s FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
            "ORDER BY s DESC, rowid LIMIT 3000"
        )
        qids = [q for q in ds.qrels if q in ds.queries][:count]
        budget, factor = lookup.KEYWORD_POSTINGS_BUDGET, keywords.SCORED_TERM_BUDGETS
        variants = [("unbounded (stopwords out)", None, factor)] + [
            (f"gate {b // 1000}k, scored terms <= {f} x gate", b, f)
            for b, f in [(budget, factor), (budget * 2, factor), (budget, 1)]
        ]
        out["variants"] = {}
        try:
            for name, b, f in variants:
                keywords.SCORED_TERM_BUDGETS = f
                nd, rc, ts = [], [], []
                for q in qids:
                    expr = (
                        lookup.fts_query(ds.queries[q])
                        if b is None
                        else store.lookup.bounded_fts_query(ds.queries[q], b)
                    )
                    took, rows = timed(lambda expr=expr: conn.execute(sql, (expr,)).fetchall())
                    ts.append(took)
                    docs: list[str] = []
                    for seq, _ in rows:
                        doc = piece_doc[int(base[seq - first])]
                        if doc is not None and doc not in docs:
                            docs.append(doc)
                            if len(docs) == LIMIT:
                                break
                    nd.append(ndcg_at(docs, ds.qrels[q]))
                    rc.append(recall_at(docs, ds.qrels[q], LIMIT))
                out["variants"][name] = {
                    "ndcg@10": float(np.mean(nd)),
                    "recall@10": float(np.mean(rc)),
                    "top3000_ms": summary(ts),
                    "queries": len(qids),
                }
        finally:
            keywords.SCORED_TERM_BUDGETS = factor
    return out
