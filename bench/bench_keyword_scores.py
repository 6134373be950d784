"""What keyword credit costs on SQLite: the BM25 of the vector side's candidates that the
keyword ranking's pool left out, read the way ``keyword_scores`` reads them now (one pass of
the match, ``bm25()`` for those rows) and the way it did before (the rowid list handed to
FTS5, which reopens the match — and recounts every query word's rows — once per row),
beside the keyword ranking's own query (its best 50).

    HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python bench/bench_keyword_scores.py [--queries 200]
    HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python bench/bench_keyword_scores.py --db embedded

Uses bench/eval_beir.py's SciFact KB (all-MiniLM-L6-v2); the scores must be identical. With
``--db`` the same KB on Postgres (as bench/eval_keyword_credit.py --db copies it): its
``keyword_scores`` (BM25 of the given rows only, from the KB's term statistics) beside its
keyword ranking; there is no "before" there.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_federated import DEFAULT_DATA  # noqa: E402
from eval_beir import postgres  # noqa: E402

BEFORE = (
    "SELECT rowid, -bm25(kb_chunks_fts) FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
    "AND rowid IN (SELECT value FROM json_each(?))"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200, help="the first N judged SciFact train queries")
    parser.add_argument("--db", help="a postgresql:// URI, or 'embedded' (bench/results/pg-data)")
    args = parser.parse_args()
    with postgres(args.db) as uri:
        measure(args.queries, uri)


def measure(queries: int, uri: str | None) -> None:
    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import load_dataset

    results = ROOT / "bench" / "results" / "eval-scifact-all-MiniLM-L6-v2"
    dataset = load_dataset(DEFAULT_DATA, "train")
    judged = [q for q in dataset.qrels if q in dataset.queries][:queries]
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    with open_desk(uri or results / "kb.db", home=results / "home", config=config) as desk:
        kb = desk.kb("eval")
        store = desk.store
        vectors = desk.embedders.for_kb(kb).embed([dataset.queries[q] for q in judged]).vectors
        spent = {"keyword ranking": 0.0, "before": 0.0, "now": 0.0}
        identical = True
        missing = 0
        for qid, vector in zip(judged, vectors, strict=True):
            text = dataset.queries[qid]
            query = np.asarray(vector, dtype=np.float32)
            query /= np.linalg.norm(query)
            started = time.perf_counter()
            pool = dict(store.keyword_candidates([kb.id], text, 50))
            spent["keyword ranking"] += time.perf_counter() - started
            seqs = [s for s, _ in store.vector_candidates(kb.id, query.size, query, 50) if s not in pool]
            missing += len(seqs)
            started = time.perf_counter()
            now = store.keyword_scores([kb.id], text, seqs)
            spent["now"] += time.perf_counter() - started
            if not uri:  # SQLite: the query as it was
                expr = store.lookup.bounded_fts_query(text)
                started = time.perf_counter()
                before = dict(store.connection().execute(BEFORE, (expr, json.dumps(seqs))).fetchall())
                spent["before"] += time.perf_counter() - started
                identical &= before == now
        n = len(judged)
        print(
            f"SciFact train, {n} queries, KB {kb.chunk_count} chunks ({'Postgres' if uri else 'SQLite'}); "
            f"{missing / n:.1f} vector candidates "
            f"per query outside the keyword pool of 50\n"
        )
        for label, seconds in spent.items():
            if seconds:
                print(f"{label}: {seconds * 1000 / n:.2f} ms per query")
        if not uri:
            print(f"identical scores before and now: {identical}")
        command = "HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python bench/bench_keyword_scores.py"
        print(f"\ncommand: {command} {' '.join(sys.argv[1:])}".rstrip())


if __name__ == "__main__":
    main()
