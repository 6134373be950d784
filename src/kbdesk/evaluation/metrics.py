"""Ranking metrics over judged documents, as BEIR reports them (trec_eval's definitions).

``ranking`` is a list of document ids, best first; ``qrels`` maps a document id to its
graded relevance (> 0 is relevant). Gains are linear in the grade.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    gains = [qrels.get(doc, 0) for doc in ranking[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g > 0)
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranking[:k]):
        if qrels.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def summarise(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Mean nDCG@10, recall@10, recall@100 and MRR@10 over the judged queries."""
    judged = [q for q in qrels if any(g > 0 for g in qrels[q].values())]
    if not judged:
        return {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0, "queries": 0}
    out = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    for q in judged:
        ranking = runs.get(q, [])
        out["ndcg@10"] += ndcg_at(ranking, qrels[q], 10)
        out["recall@10"] += recall_at(ranking, qrels[q], 10)
        out["recall@100"] += recall_at(ranking, qrels[q], 100)
        out["mrr@10"] += mrr_at(ranking, qrels[q], 10)
    result: dict[str, float] = {key: value / len(judged) for key, value in out.items()}
    result["queries"] = len(judged)
    return result
