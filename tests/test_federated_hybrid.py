"""Hybrid search split across two stores fuses as one store would: each side's keyword
scores are put on one collection's scale (each query word's IDF over both sides) before
``alpha · cosine + (1 − alpha) · BM25 / best BM25`` is computed again. A word common on one
side and rare on the other no longer lifts the rare side's chunks over better ones."""

from __future__ import annotations

import pytest

import kbdesk.remote.ranking as ranking
from helpers import axis
from kbdesk import open_desk
from kbdesk.models import ChunkInput
from kbdesk.remote.federation import keyword_parts
from kbdesk.remote.ranking import BY_SCORE, merge_scored, ranking_of

FILLER = ["table", "server", "setting", "value", "row", "page", "plan", "cost", "index", "lock", "wal", "slot"]


def doc(*words: str) -> str:
    """Twelve words: the query words given, then filler (one mean length on every side)."""
    return " ".join([*words, *FILLER][:12])


def left_docs() -> list[tuple[str, str]]:
    """ "replica" in 15 of 40 (twice in ``left-best.md``), "vacuum" in the other 25."""
    docs = [("left-best.md", doc("replica", "replica"))]
    docs += [(f"left-replica-{i:02d}.md", doc("replica")) for i in range(14)]
    docs += [(f"left-vacuum-{i:02d}.md", doc("vacuum")) for i in range(25)]
    return docs


def right_docs() -> list[tuple[str, str]]:
    """ "vacuum" in one chunk of 40 (rare here, so its own BM25 is high); no "replica"."""
    return [("right-vacuum.md", doc("vacuum"))] + [(f"right-{i:02d}.md", doc()) for i in range(39)]


def hybrid_side(desk, query: str):
    kb = desk.kb("Docs")
    response = desk.search(["Docs"], query, query_vector=axis(0), mode="hybrid", limit=20, explain=True)
    parts = keyword_parts(desk.store, [kb.id], query, response)
    return ranking_of(response, fusion="convex", alpha=0.7, threshold=0.3, models=[("toy", 8)], parts=parts)


@pytest.fixture
def desks(tmp_path):
    out = {}
    for home, docs in (("one", left_docs() + right_docs()), ("left", left_docs()), ("right", right_docs())):
        desk = out[home] = open_desk(home=tmp_path / home)
        desk.create_kb("Docs", model_id="toy", dimensions=8)
        for name, text in docs:
            desk.add_document("Docs", name, [ChunkInput(text)], vectors=[axis(0)])
    yield out
    for desk in out.values():
        desk.close()


def test_a_hybrid_search_split_across_two_stores_fuses_as_one_store(desks):
    query = "replica vacuum"
    one = desks["one"].search(["Docs"], query, query_vector=axis(0), mode="hybrid", limit=10, explain=True)
    expected = [(e["source"], e["fused"]) for e in one.explain if e["cut"] is None][:10]
    sides = [hybrid_side(desks["left"], query), hybrid_side(desks["right"], query)]
    merged, rule = merge_scored(sides, 10)
    assert rule == BY_SCORE
    assert all(score is not None for score, _ in merged)
    assert [round(score or 0.0, 6) for score, _ in merged] == pytest.approx([f for _, f in expected], abs=1e-6)
    assert merged[0][1].result.source == expected[0][0] == "left-best.md"
    assert "right-vacuum.md" not in [x.result.source for _, x in merged]  # 16th or lower in one store


def test_each_sides_own_bm25_would_put_the_rare_words_chunk_first(desks, monkeypatch):
    """What the merge did before (each side's BM25 over its own collection): "vacuum", rare
    on the right, scored the right side's chunk above every "replica" chunk."""
    sides = [hybrid_side(desks["left"], "replica vacuum"), hybrid_side(desks["right"], "replica vacuum")]
    monkeypatch.setattr(ranking, "one_scale", lambda _sides: None)
    merged, _ = merge_scored(sides, 10)
    assert merged[0][1].result.source == "right-vacuum.md"
