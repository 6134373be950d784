"""Run a BEIR-layout dataset through kbdesk: ingest the corpus, search every query.

Layout: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
``text``), ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``, with a header).
Each corpus entry is written as one text file and added with ``desk.add`` — the same
extraction, chunking, embedding and storage a user's files get. Chunks are mapped back
to their document, which ranks at its best chunk.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdesk.errors import InvalidInputError

if TYPE_CHECKING:
    from kbdesk.desk import Desk

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class Dataset:
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def load_dataset(folder: str | Path, split: str = "train") -> Dataset:
    folder = Path(folder)
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for path in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_path):
        if not path.is_file():
            raise InvalidInputError(f"not a BEIR dataset: {path} is missing")
    corpus = {
        str(d["_id"]): {"title": d.get("title") or "", "text": d.get("text") or ""}
        for d in _jsonl(folder / "corpus.jsonl")
    }
    queries = {str(q["_id"]): q["text"] for q in _jsonl(folder / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header and header[0].strip().lower() not in ("query-id", "query_id", "qid"):
            rows: Iterable[list[str]] = [header, *reader]
        else:
            rows = reader
        for row in rows:
            if len(row) >= 3:
                qrels.setdefault(row[0], {})[row[1]] = int(float(row[2]))
    qrels = {q: judged for q, judged in qrels.items() if q in queries}
    return Dataset(corpus, queries, qrels)


def file_name(doc_id: str) -> str:
    return f"{_SAFE.sub('_', doc_id)}.txt"


def write_corpus(dataset: Dataset, folder: Path) -> dict[str, str]:
    """One .txt file per corpus entry (title, blank line, text); returns filename → doc id."""
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for doc_id, doc in dataset.corpus.items():
        name = file_name(doc_id)
        text = f"{doc['title']}\n\n{doc['text']}".strip() if doc["title"] else doc["text"].strip()
        (folder / name).write_text(text + "\n", encoding="utf-8")
        names[name] = doc_id
    return names


def run_queries(
    desk: Desk,
    kb_ref: str,
    dataset: Dataset,
    names: dict[str, str],
    *,
    mode: str,
    depth: int = 100,
    threshold: float = -1.0,
    fusion: str = "rrf",
    alpha: float = 0.5,
    query_vectors: dict[str, Any] | None = None,
    on_query: Callable[[int, int], None] | None = None,
    first_chunks: dict[str, list[str]] | None = None,
) -> dict[str, list[str]]:
    """Ranked document ids per judged query (chunks folded into their documents).

    With ``first_chunks`` (a dict, filled in) also the documents of each query's first
    :data:`kbdesk.search.DEFAULT_LIMIT` chunks, in order: what a search with the default
    limit shows (:func:`hit_at`)."""
    from kbdesk.search import DEFAULT_LIMIT, rank

    kb = desk.kb(kb_ref)
    runs: dict[str, list[str]] = {}
    judged = [q for q in dataset.qrels if q in dataset.queries]
    for i, qid in enumerate(judged):
        vector = query_vectors.get(qid) if query_vectors else None
        hits = rank(
            desk.store,
            [kb],
            dataset.queries[qid],
            vector,
            depth=depth * 3,
            threshold=threshold,
            mode=mode,
            fusion=fusion,
            alpha=alpha,
        )
        if first_chunks is not None:
            first_chunks[qid] = [names.get(row["source"], "") for _, row in hits[:DEFAULT_LIMIT]]
        ranking: list[str] = []
        for _, row in hits:
            doc = names.get(row["source"])
            if doc is not None and doc not in ranking:
                ranking.append(doc)
            if len(ranking) == depth:
                break
        runs[qid] = ranking
        if on_query:
            on_query(i + 1, len(judged))
    return runs


def hit_at(first: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    """Share of the judged queries with a relevant document among ``first`` (per query,
    the documents of the chunks a search shows)."""
    judged = [q for q in qrels if any(g > 0 for g in qrels[q].values())]
    hits = sum(any(qrels[q].get(doc, 0) > 0 for doc in first.get(q, [])) for q in judged)
    return hits / len(judged) if judged else 0.0
