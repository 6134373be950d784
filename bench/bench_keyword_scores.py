"""What keyword credit costs on SQLite: the BM25 of the vector side's candidates that the
keyword ranking's pool left out, read the way ``keyword_scores`` reads them now (one pass of
the match, ``bm25()`` for those rows) and the way it did before (the rowid list handed to
FTS5, which reopens the match — and recounts every query word's rows — once per row),
beside the keyword ranking's own query (its best 50).

    HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python bench/bench_keyword_scores.py [--queries 200]

Uses bench/eval_beir.py's SciFact KB (all-MiniLM-L6-v2); the scores must be identical.
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

BEFORE = (
    "SELECT rowid, -bm25(kb_chunks_fts) FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
    "AND rowid IN (SELECT value FROM json_each(?))"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200, help="the first N judged SciFact train queries")
    args = parser.parse_args()

    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import load_dataset

    results = ROOT / "bench" / "results" / "eval-scifact-all-MiniLM-L6-v2"
    dataset = load_dataset(DEFAULT_DATA, "train")
    judged = [q for q in dataset.qrels if q in dataset.queries][: args.queries]
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    with open_desk(results / "kb.db", home=results / "home", config=config) as desk:
        kb = desk.kb("eval")
        store, conn = desk.store, desk.store.connection()
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
            expr = store.bounded_fts_query(text)
            started = time.perf_counter()
            before = dict(conn.execute(BEFORE, (expr, json.dumps(seqs))).fetchall())
            spent["before"] += time.perf_counter() - started
            started = time.perf_counter()
            now = store.keyword_scores([kb.id], text, seqs)
            spent["now"] += time.perf_counter() - started
            identical &= before == now
        n = len(judged)
        print(
            f"SciFact train, {n} queries, KB {kb.chunk_count} chunks; {missing / n:.1f} vector candidates "
            f"per query outside the keyword pool of 50\n"
        )
        for label, seconds in spent.items():
            print(f"{label}: {seconds * 1000 / n:.2f} ms per query")
        print(f"identical scores before and now: {identical}")
        command = "HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python bench/bench_keyword_scores.py"
        print(f"\ncommand: {command} {' '.join(sys.argv[1:])}".rstrip())


if __name__ == "__main__":
    main()
