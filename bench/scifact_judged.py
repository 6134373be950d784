"""SciFact's training split cut to a number of abstracts, judged ones first: the subset
``bench_peers.py`` and ``eval_sections.py`` ingest."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def judged_subset(folder: Path, docs: int) -> tuple[Any, list[str], dict[str, dict[str, int]]]:
    """The dataset, the ids of up to *docs* abstracts (every one a training query judges,
    then the corpus in file order) and the judgements of the queries still answerable."""
    from kbdesk.evaluation.beir import load_dataset

    data = load_dataset(folder, "train")
    order = list(dict.fromkeys([*(d for judged in data.qrels.values() for d in judged), *data.corpus]))[:docs]
    keep = set(order)
    qrels = {q: {d: g for d, g in judged.items() if d in keep} for q, judged in data.qrels.items()}
    return data, order, {q: judged for q, judged in qrels.items() if any(g > 0 for g in judged.values())}
