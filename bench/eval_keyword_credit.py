"""Hybrid search with and without keyword credit for the vector side's candidates, at the
defaults a user gets (auto mode, threshold 0.3, convex fusion), limit 5 and limit 10.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/eval_keyword_credit.py      # SciFact train, all 809 judged queries
    HF_HUB_OFFLINE=1 .venv/bin/python bench/eval_keyword_credit.py --db embedded   # the same KB on Postgres

Uses bench/eval_beir.py's cached KB (run that first); with ``--db`` (a postgresql:// URI, or
``embedded`` for bench/results/pg-data) that KB copied to Postgres (``kbdesk export``), where
the per-query result lists are also compared with SQLite's. Each judged query is embedded once
and searched through ``desk.search`` — the path every face takes, with its candidate
pool (50 per ranker at these limits) — twice: with ``kbdesk.fusion.KEYWORD_CREDIT`` off
(a chunk found only by the vector side fuses with a BM25 of 0) and on (its own BM25).
Chunks fold into their documents; nDCG@10 and recall@10 from the limit-10 list, nDCG@5,
hit@5 (a relevant abstract among them) and MRR@5 from the limit-5 list. The two settings
take turns query by query after an untimed warm-up, so the time per search compares them
under the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_federated import DEFAULT_DATA, fold  # noqa: E402
from eval_beir import postgres  # noqa: E402

METRICS = ("ndcg@10", "recall@10", "ndcg@5", "hit@5", "mrr@5")
WARM_UP = 50  # queries searched both ways before the timed pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", help="a postgresql:// URI, or 'embedded' (bench/results/pg-data)")
    args = parser.parse_args()
    with postgres(args.db) as uri:
        measure(uri)


def measure(uri: str | None) -> None:
    import kbdesk.fusion as fusion_module
    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import file_name, load_dataset
    from kbdesk.evaluation.metrics import mrr_at, ndcg_at, recall_at

    results = ROOT / "bench" / "results" / "eval-scifact-all-MiniLM-L6-v2"
    dataset = load_dataset(DEFAULT_DATA, "train")
    names = {file_name(doc_id): doc_id for doc_id in dataset.corpus}
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    desk = open_desk(uri or results / "kb.db", home=results / "home", config=config)
    try:
        kb = desk.kb("eval")
        judged = [q for q in dataset.qrels if q in dataset.queries]
        vectors = desk.embedders.for_kb(kb).embed([dataset.queries[q] for q in judged]).vectors
        scores = {label: {k: [] for k in METRICS} for label in ("off", "on")}
        seconds = dict.fromkeys(("off", "on"), 0.0)

        def run(qid: str, vector: object, credit: bool) -> dict[str, float]:
            fusion_module.KEYWORD_CREDIT = credit
            query, qrels = dataset.queries[qid], dataset.qrels[qid]
            ten = fold(desk.search(["eval"], query, query_vector=vector, limit=10).results, names)
            five = fold(desk.search(["eval"], query, query_vector=vector, limit=5).results, names, 5)
            return {
                "ndcg@10": ndcg_at(ten, qrels, 10),
                "recall@10": recall_at(ten, qrels, 10),
                "ndcg@5": ndcg_at(five, qrels, 5),
                "hit@5": float(any(qrels.get(d, 0) > 0 for d in five)),
                "mrr@5": mrr_at(five, qrels, 5),
            }

        for qid, vector in list(zip(judged, vectors, strict=True))[:WARM_UP]:  # caches and pages in, untimed
            run(qid, vector, False)
            run(qid, vector, True)
        # off and on in turn, query by query: a change in the machine's load falls on both
        for n, (qid, vector) in enumerate(zip(judged, vectors, strict=True)):
            for credit in (False, True) if n % 2 == 0 else (True, False):
                label = "on" if credit else "off"
                started = time.perf_counter()
                got = run(qid, vector, credit)
                seconds[label] += time.perf_counter() - started
                for k, v in got.items():
                    scores[label][k].append(v)
        rows = {
            label: {k: statistics.mean(v) for k, v in scores[label].items()}
            | {"ms": seconds[label] * 1000 / (2 * len(judged))}
            for label in ("off", "on")
        }
        engine = "Postgres" if uri else "SQLite"
        print(f"SciFact train, {len(judged)} judged queries, KB {kb.chunk_count} chunks ({engine}), the defaults\n")
        print("| keyword credit | nDCG@10 | recall@10 | nDCG@5 | hit@5 | MRR@5 | ms/search |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, s in rows.items():
            print(
                f"| {label} | {s['ndcg@10']:.4f} | {s['recall@10']:.4f} | {s['ndcg@5']:.4f} | {s['hit@5']:.4f} | "
                f"{s['mrr@5']:.4f} | {s['ms']:.1f} |"
            )
        if uri:
            compare_engines(desk, results, config, [dataset.queries[q] for q in judged], vectors)
        print(f"\ncommand: HF_HUB_OFFLINE=1 .venv/bin/python bench/eval_keyword_credit.py {' '.join(sys.argv[1:])}")
    finally:
        desk.close()


def compare_engines(desk, results: Path, config, queries: list[str], vectors) -> None:
    """The same searches (the defaults, limit 10, keyword credit on, then off) on Postgres and
    on the SQLite KB it was copied from: how many result lists are the same chunks in the same
    order. (Run it on a fresh copy: bench_federated_rank.py adds KBs to that file.)"""
    import kbdesk.fusion as fusion_module
    from kbdesk import open_desk

    with open_desk(results / "kb.db", home=results / "home", config=config) as sqlite:
        for credit in (True, False):
            fusion_module.KEYWORD_CREDIT = credit
            same = overlap = 0
            for query, vector in zip(queries, vectors, strict=True):
                lists = [
                    [
                        (r.source, r.chunk_index)
                        for r in d.search(["eval"], query, query_vector=vector, limit=10).results
                    ]
                    for d in (sqlite, desk)
                ]
                same += lists[0] == lists[1]
                overlap += len(set(lists[0]) & set(lists[1])) / max(1, len(lists[0]))
            n = len(queries)
            print(
                f"\nPostgres against SQLite, limit 10, keyword credit {'on' if credit else 'off'}: "
                f"{same}/{n} result lists identical, mean overlap {overlap / n:.4f}"
            )


if __name__ == "__main__":
    main()
