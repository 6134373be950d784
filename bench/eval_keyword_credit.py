"""Hybrid search with and without keyword credit for the vector side's candidates, at the
defaults a user gets (auto mode, threshold 0.3, convex fusion), limit 5 and limit 10.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/eval_keyword_credit.py      # SciFact train, all 809 judged queries

Uses bench/eval_beir.py's cached KB (run that first). Each judged query is embedded once
and searched through ``desk.search`` — the path every face takes, with its candidate
pool (50 per ranker at these limits) — twice: with ``kbdesk.search.KEYWORD_CREDIT`` off
(a chunk found only by the vector side fuses with a BM25 of 0) and on (its own BM25).
Chunks fold into their documents; nDCG@10 and recall@10 from the limit-10 list, nDCG@5,
hit@5 (a relevant abstract among them) and MRR@5 from the limit-5 list.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_federated import DEFAULT_DATA, fold  # noqa: E402


def main() -> None:
    import kbdesk.search as search_module
    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import file_name, load_dataset
    from kbdesk.evaluation.metrics import mrr_at, ndcg_at, recall_at

    results = ROOT / "bench" / "results" / "eval-scifact-all-MiniLM-L6-v2"
    dataset = load_dataset(DEFAULT_DATA, "train")
    names = {file_name(doc_id): doc_id for doc_id in dataset.corpus}
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    desk = open_desk(results / "kb.db", home=results / "home", config=config)
    try:
        kb = desk.kb("eval")
        judged = [q for q in dataset.qrels if q in dataset.queries]
        vectors = desk.embedders.for_kb(kb).embed([dataset.queries[q] for q in judged]).vectors
        rows = {}
        for credit in (False, True):
            search_module.KEYWORD_CREDIT = credit
            scores: dict[str, list[float]] = {k: [] for k in ("ndcg@10", "recall@10", "ndcg@5", "hit@5", "mrr@5")}
            started = time.perf_counter()
            for qid, vector in zip(judged, vectors, strict=True):
                query, qrels = dataset.queries[qid], dataset.qrels[qid]
                ten = fold(desk.search(["eval"], query, query_vector=vector, limit=10).results, names)
                five = fold(desk.search(["eval"], query, query_vector=vector, limit=5).results, names, 5)
                scores["ndcg@10"].append(ndcg_at(ten, qrels, 10))
                scores["recall@10"].append(recall_at(ten, qrels, 10))
                scores["ndcg@5"].append(ndcg_at(five, qrels, 5))
                scores["hit@5"].append(float(any(qrels.get(d, 0) > 0 for d in five)))
                scores["mrr@5"].append(mrr_at(five, qrels, 5))
            ms = (time.perf_counter() - started) * 1000 / (2 * len(judged))
            rows["on" if credit else "off"] = {k: statistics.mean(v) for k, v in scores.items()} | {"ms": ms}
        print(f"SciFact train, {len(judged)} judged queries, KB {kb.chunk_count} chunks, the defaults\n")
        print("| keyword credit | nDCG@10 | recall@10 | nDCG@5 | hit@5 | MRR@5 | ms/search |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, s in rows.items():
            print(
                f"| {label} | {s['ndcg@10']:.4f} | {s['recall@10']:.4f} | {s['ndcg@5']:.4f} | {s['hit@5']:.4f} | "
                f"{s['mrr@5']:.4f} | {s['ms']:.1f} |"
            )
        print(f"\ncommand: HF_HUB_OFFLINE=1 .venv/bin/python bench/eval_keyword_credit.py {' '.join(sys.argv[1:])}")
    finally:
        desk.close()


if __name__ == "__main__":
    main()
