"""Keyword credit in hybrid search: a chunk the vector side finds further down the keyword
ranking than the keyword pool reaches still fuses with its own BM25 — the score the keyword
ranking gives it — not as if it held none of the query's words. On every engine, with the
same ranking on SQLite and Postgres."""

from __future__ import annotations

import numpy as np
import pytest

import kbdesk.fusion as fusion
from helpers import axis
from kbdesk import open_desk
from kbdesk.models import ChunkInput

CAT, DOG = 0, 1
QUERY = "vacuum bloat"
RICH = 60  # chunks ranked above "found.md" by BM25: more than the keyword pool at limit 5 and 10
FILLER = 120  # chunks without the query's words (the query words stay rare: a real IDF)


def build(desk) -> None:
    """``found.md`` holds "vacuum" once in a long chunk (BM25 rank 61, past the pool of 50) and
    its vector is close to the query's; ``plain.md`` holds no query word and its vector is a
    hair closer. Sixty short chunks say "vacuum bloat" and mean something else."""
    desk.create_kb("Ops", model_id="toy", dimensions=8)
    rich = [ChunkInput(f"vacuum bloat vacuum note {i}") for i in range(RICH)]
    desk.add_document("Ops", "rich.md", rich, vectors=[axis(DOG)] * RICH)
    filler = [ChunkInput(f"the table server setting value row page {i}") for i in range(FILLER)]
    desk.add_document("Ops", "filler.md", filler, vectors=[axis(DOG)] * FILLER)
    words = "the planner reads each table page once and keeps the row counts for later plans " * 3
    desk.add_document(
        "Ops", "found.md", [ChunkInput(words + "then a vacuum runs")], vectors=[axis(CAT, extra={DOG: 1.0})]
    )
    desk.add_document("Ops", "plain.md", [ChunkInput(words.upper())], vectors=[axis(CAT, extra={DOG: 0.98})])


def search(desk, **options):
    return desk.search(["Ops"], QUERY, query_vector=axis(CAT), **options)


def test_a_chunk_past_the_keyword_pool_that_holds_the_query_words_ranks_above_one_that_does_not(engine_desk):
    build(engine_desk)
    assert fusion.KEYWORD_CREDIT  # the default
    for limit in (5, 10):
        response = search(engine_desk, limit=limit)
        assert response.mode == "hybrid"
        assert [r.source for r in response.results[:2]] == ["found.md", "plain.md"], limit
    explain = {e["source"]: e for e in search(engine_desk, explain=True).explain if e["source"] != "rich.md"}
    found = explain["found.md"]
    assert found["keyword_rank"] is None and found["vector_rank"] == 2  # outside the keyword pool
    kb = engine_desk.kb("Ops")
    ranking = engine_desk.store.keyword_candidates([kb.id], QUERY, 1000)
    assert len(ranking) == RICH + 1  # found.md is the last keyword match
    assert found["keyword_score"] == pytest.approx(ranking[-1][1], abs=1e-6) and ranking[-1][1] > 0  # explain rounds
    assert explain["plain.md"]["keyword_score"] is None  # no query word: no credit
    assert found["fused"] > explain["plain.md"]["fused"]


def test_without_keyword_credit_the_chunk_fuses_as_if_it_held_no_query_word(engine_desk, monkeypatch):
    """What the rule changes (and so what the test above would catch were it lost)."""
    build(engine_desk)
    monkeypatch.setattr(fusion, "KEYWORD_CREDIT", False)
    assert [r.source for r in search(engine_desk).results[:2]] == ["plain.md", "found.md"]


def test_the_scores_of_any_chunks_are_the_keyword_rankings_own(engine_desk):
    """``keyword_scores`` for every chunk of the KB (the ones the keyword ranking returns, the
    one past any pool, the ones it never matches) against the whole keyword ranking."""
    build(engine_desk)
    kb = engine_desk.kb("Ops")
    every = [seq for seq, _ in engine_desk.store.vector_candidates(kb.id, 8, np.asarray(axis(CAT), np.float32), 1000)]
    assert len(every) == RICH + FILLER + 2
    ranking = dict(engine_desk.store.keyword_candidates([kb.id], QUERY, 1000))
    scores = engine_desk.store.keyword_scores([kb.id], QUERY, every)
    assert scores.keys() == ranking.keys()
    assert scores == pytest.approx(ranking, rel=1e-12)
    assert engine_desk.store.keyword_scores([kb.id], QUERY, []) == {}
    assert engine_desk.store.keyword_scores([kb.id], "", every) == {}


def test_sqlite_and_postgres_rank_the_same_with_keyword_credit(pg_uri, kbdesk_home):
    """The same KB on both engines: the same candidates in the same order, kept or cut alike,
    with the same keyword scores (credit included) and fused scores."""
    lists = []
    for target in (None, pg_uri):
        desk = open_desk(target) if target else open_desk(backend="numpy")
        try:
            build(desk)
            lists.append(
                [
                    (e["source"], e["content"], e["cut"], e["keyword_rank"], e["keyword_score"], e["fused"])
                    for e in search(desk, limit=10, explain=True).explain
                ]
            )
        finally:
            desk.close()
    sqlite, postgres = lists
    assert [e[:4] for e in sqlite] == [e[:4] for e in postgres]
    for a, b in zip(sqlite, postgres, strict=True):
        assert (a[4] is None) == (b[4] is None)
        if a[4] is not None:
            assert a[4] == pytest.approx(b[4], rel=1e-5)
        assert a[5] == pytest.approx(b[5], rel=1e-5, abs=1e-6)
    assert [e[0] for e in sqlite if e[2] is None][:2] == ["found.md", "plain.md"]
