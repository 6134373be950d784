"""Keyword scores from several collections put on one scale: each side says what its
BM25 scores are made of (N, each query word's document frequency, each result's score
split by word), and the merge recomputes every score with IDFs over the union — so a
search split across two stores ranks as one store holding both would."""

from __future__ import annotations

import random

import pytest

from kbdesk import open_desk
from kbdesk.remote.federation import keyword_parts
from kbdesk.remote.ranking import BY_SCORE, merge_scored, ranking_of

WORDS = ["vacuum", "analyze", "index", "bloat", "replica", "lag", "checkpoint", "autovacuum", "toast", "wal"]
FILLER = ["the", "table", "server", "setting", "value", "row", "page", "query", "plan", "cost"]


def corpus(n: int = 60) -> list[tuple[str, str]]:
    """Documents of exactly 12 words (one mean length everywhere: the IDF is all that differs)."""
    rng = random.Random(7)
    docs = []
    for i in range(n):
        picked = [rng.choice(WORDS[: 3 + i % 7]) for _ in range(rng.randint(1, 4))] + rng.sample(FILLER * 2, 12)
        docs.append((f"doc-{i:02d}.md", " ".join(picked[:12])))
    return docs


def keyword_side(desk, name: str, query: str):
    kb = desk.kb(name)
    response = desk.search([name], query, mode="keyword", limit=20, explain=True)
    parts = keyword_parts(desk.store, [kb.id], query, response)
    return ranking_of(response, fusion="convex", alpha=0.7, threshold=0.3, models=[], parts=parts)


def test_the_parts_of_a_keyword_score_add_up_to_it_on_every_engine(engine_desk):
    kb = engine_desk.create_kb("Docs", keyword_only=True)
    for name, text in corpus(30):
        engine_desk.add_document(kb.id, name, [text])
    response = engine_desk.search(["Docs"], "vacuum bloat replica", mode="keyword", limit=10, explain=True)
    parts = keyword_parts(engine_desk.store, [kb.id], "vacuum bloat replica", response)
    assert parts is not None and parts.rows == 30
    assert set(parts.df) == {"vacuum", "bloat", "replica"} and all(n > 0 for n in parts.df.values())
    scored = [e for e in response.explain if e["cut"] is None and e["keyword_score"] is not None]
    assert len(scored) >= 5
    for e in scored:
        split = parts.parts[(e["document_id"], e["chunk_index"])]
        assert sum(split.values()) == pytest.approx(e["keyword_score"], rel=1e-5, abs=1e-6)
    # any chunk's own BM25, however far down the keyword ranking: the same score
    seqs = [seq for seq, _ in engine_desk.store.keyword_candidates([kb.id], "vacuum bloat replica", 30)]
    ranked = dict(engine_desk.store.keyword_candidates([kb.id], "vacuum bloat replica", 30))
    again = engine_desk.store.keyword_scores([kb.id], "vacuum bloat replica", seqs[-3:])
    assert again == pytest.approx({seq: ranked[seq] for seq in seqs[-3:]}, rel=1e-6)


@pytest.mark.parametrize("query", ["vacuum bloat", "replica lag checkpoint", "toast wal index analyze"])
def test_a_search_split_across_two_stores_ranks_as_one_store(tmp_path, query):
    docs = corpus()
    desks = {}
    for home, part in (("one", docs), ("left", docs[::2]), ("right", docs[1::2])):
        desk = desks[home] = open_desk(home=tmp_path / home)
        kb = desk.create_kb("Docs", keyword_only=True)
        for name, text in part:
            desk.add_document(kb.id, name, [text])
    try:
        one = keyword_side(desks["one"], "Docs", query)
        sides = [keyword_side(desks["left"], "Docs", query), keyword_side(desks["right"], "Docs", query)]
        merged, rule = merge_scored(sides, 10)
        assert rule == BY_SCORE
        expected = [(round(x.keyword, 6), x.result.source) for x in one.ranked[:10]]
        got = [(round(_scored(score), 6), x.result.source) for score, x in merged]
        assert [v for v, _ in got] == pytest.approx([v for v, _ in expected], rel=1e-6)
        tied = {v for v, _ in expected[-1:]}  # the last score's ties may be cut differently
        assert sorted(g for g in got if g[0] not in tied) == sorted(e for e in expected if e[0] not in tied)
        # without the parts (a server that does not send them) the sides merge by rank
        for side in sides:
            side.keyword_rows = None
        assert merge_scored(sides, 10)[1] == "rank"
    finally:
        for desk in desks.values():
            desk.close()


def _scored(score: float | None) -> float:
    assert score is not None, "a merge by score gives every result its score"
    return score
