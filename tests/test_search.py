"""Search semantics on a small corpus whose right answers are known, on every engine."""

from typing import Any

import pytest

from helpers import axis
from kbdesk.errors import InvalidInputError

CAT, DOG, SSO, MONEY, YOUNG = 0, 1, 2, 3, 4

CORPUS: dict[str, tuple[str, list[float], dict[str, Any]]] = {
    # filename: (text, vector, metadata)
    "cats.txt": ("Cats purr when content and sleep most of the day.", axis(CAT), {}),
    "kittens.md": (
        "Young felines need frequent small meals.",
        axis(CAT, extra={YOUNG: 0.6}),
        {"headings": ["Care", "Kittens"]},
    ),
    "dogs.txt": ("Dogs bark at strangers and love long walks.", axis(DOG), {}),
    "sso.md": (
        "To configure SSO, open Settings, then Security, then Single sign-on.",
        axis(SSO),
        {"headings": ["Admin", "SSO"]},
    ),
    "q4.pdf": ("Q4 revenue grew 12 percent on strong subscription sales.", axis(MONEY), {"page": 12}),
}


@pytest.fixture
def desk(engine_desk):
    """Every search scenario here runs on SQLite (sqlite-vec, numpy) and on Postgres."""
    return engine_desk


@pytest.fixture
def pets(desk):
    from kbdesk.models import ChunkInput

    desk.create_kb("Pets", model_id="toy", dimensions=8)
    desk.create_kb("Work", model_id="toy", dimensions=8)
    for name, (text, vector, meta) in CORPUS.items():
        kb = "Work" if name in ("sso.md", "q4.pdf") else "Pets"
        desk.add_document(kb, name, [ChunkInput(text, metadata=meta)], vectors=[vector])
    return desk


def sources(response):
    return [r.source for r in response.results]


def test_result_shape_is_exactly_the_seeds(pets):
    response = pets.search(["Pets", "Work"], "revenue", query_vector=axis(MONEY))
    body = response.to_dict()
    assert set(body) == {"results", "query", "searched_kbs", "mode"}
    assert body["query"] == "revenue" and body["searched_kbs"] == ["Pets", "Work"]
    first = body["results"][0]
    assert set(first) == {"content", "source", "kb", "similarity", "metadata"}
    assert first == {
        "content": CORPUS["q4.pdf"][0],
        "source": "q4.pdf",
        "kb": "Work",
        "similarity": pytest.approx(1.0, abs=1e-5),
        "metadata": {"page": 12, "score_kind": "cosine"},
    }


def test_vector_search_ranks_by_cosine_and_drops_below_threshold(pets):
    response = pets.search(["Pets", "Work"], "feline companions", query_vector=axis(CAT), mode="vector")
    assert sources(response) == ["cats.txt", "kittens.md"]  # dogs, sso, money are orthogonal: below 0.3
    sims = [r.similarity for r in response.results]
    assert sims[0] == pytest.approx(1.0, abs=1e-5) and sims[1] == pytest.approx(1 / (1 + 0.36) ** 0.5, abs=1e-4)


def test_threshold_and_limit(pets):
    q = axis(CAT)
    assert sources(pets.search(["Pets"], "x", query_vector=q, mode="vector", threshold=0.9)) == ["cats.txt"]
    everything = pets.search(["Pets", "Work"], "x", query_vector=q, mode="vector", threshold=-1.0, limit=20)
    assert len(everything.results) == 5
    assert len(pets.search(["Pets", "Work"], "x", query_vector=q, mode="vector", threshold=-1.0, limit=2).results) == 2
    default = pets.search(["Pets", "Work"], "x", query_vector=q, mode="vector", threshold=-1.0)
    assert len(default.results) == 5  # default limit 5
    for bad in (0, 21, 100, -1):
        with pytest.raises(InvalidInputError, match="limit must be between 1 and 20"):
            pets.search(["Pets"], "x", query_vector=q, limit=bad)
    with pytest.raises(InvalidInputError, match="threshold"):
        pets.search(["Pets"], "x", query_vector=q, threshold=3)


def test_keyword_search_finds_exact_terms_and_stems(pets):
    assert sources(pets.search(["Pets", "Work"], "SSO settings", mode="keyword")) == ["sso.md"]
    # porter stemming: "feline" matches "felines"
    assert sources(pets.search(["Pets", "Work"], "feline", mode="keyword")) == ["kittens.md"]
    # user text is never FTS syntax
    assert pets.search(["Pets"], 'cats" OR NEAR(', mode="keyword").results[0].source == "cats.txt"
    assert pets.search(["Pets"], "zebra", mode="keyword").results == []


def test_hybrid_prefers_what_both_rankings_agree_on(pets):
    q = axis(CAT)  # "cat" meaning; the words name the kittens chunk only
    response = pets.search(["Pets", "Work"], "young felines", query_vector=q, mode="hybrid")
    assert sources(response) == ["kittens.md", "cats.txt"]
    assert response.mode == "hybrid"
    # similarity stays the cosine in hybrid mode
    assert response.results[1].similarity == pytest.approx(1.0, abs=1e-5)


def test_hybrid_threshold_cuts_weak_meaning_matches_but_never_the_best_keyword_match(pets):
    # dogs.txt is the only keyword match and its vector is orthogonal to the query: a
    # cosine floor would drop it; the threshold rule keeps the keyword #1
    response = pets.search(["Pets"], "dogs bark", query_vector=axis(CAT), mode="hybrid")
    assert sources(response)[0] == "cats.txt" and "dogs.txt" in sources(response)
    assert response.results[sources(response).index("dogs.txt")].similarity == pytest.approx(0.0, abs=1e-6)
    # no keyword support: a chunk needs its cosine to pass the threshold
    meaning_only = pets.search(["Pets", "Work"], "zebra", query_vector=axis(CAT), mode="hybrid")
    assert sources(meaning_only) == ["cats.txt", "kittens.md"]
    strict = pets.search(["Pets", "Work"], "zebra", query_vector=axis(CAT), mode="hybrid", threshold=0.9)
    assert sources(strict) == ["cats.txt"]  # kittens' cosine is 0.86


def test_auto_mode_is_hybrid_with_vectors_and_keyword_without(pets):
    assert pets.search(["Pets"], "cats", query_vector=axis(CAT)).mode == "hybrid"
    assert pets.search(["Pets"], "cats").mode == "keyword"


def test_a_kb_without_embedding_model_works_in_keyword_mode(desk):
    desk.create_kb("Plain")
    desk.add_document("Plain", "guide.md", ["Backups run nightly at 02:00.", "Restores need admin rights."])
    response = desk.search(["Plain"], "when do backups run")
    assert response.mode == "keyword" and sources(response) == ["guide.md"]
    assert response.results[0].content.startswith("Backups")
    # no vector: the score is the share of the query's words the chunk holds ("backups", "run")
    assert response.results[0].similarity == 1.0
    assert response.results[0].metadata["score_kind"] == "keyword coverage"
    with pytest.raises(InvalidInputError, match="vector search needs vectors"):
        desk.search(["Plain"], "backups", mode="vector")


def test_searching_a_vector_kb_and_a_keyword_kb_together(pets):
    pets.create_kb("Manual")
    pets.add_document("Manual", "cat-flap.txt", ["Install the cat flap at knee height."])
    response = pets.search(["Pets", "Manual"], "cat", query_vector=axis(CAT), mode="hybrid", limit=5)
    assert set(sources(response)) >= {"cats.txt", "cat-flap.txt"}


def test_query_vector_per_kb_for_different_models(desk):
    desk.create_kb("A", model_id="small", dimensions=4)
    desk.create_kb("B", model_id="large", dimensions=8)
    desk.add_document("A", "a.txt", ["alpha"], vectors=[[1, 0, 0, 0]])
    desk.add_document("B", "b.txt", ["beta"], vectors=[axis(2)])
    a, b = desk.kb("A"), desk.kb("B")
    response = desk.search(["A", "B"], "x", query_vector={a.id: [1, 0, 0, 0], b.id: axis(2)}, mode="vector")
    assert sorted(sources(response)) == ["a.txt", "b.txt"]
    with pytest.raises(InvalidInputError, match="8 dimensions, expected 4"):
        desk.search(["A", "B"], "x", query_vector=axis(2), mode="vector")


def test_bad_queries_are_clear_errors(pets):
    with pytest.raises(InvalidInputError, match="empty"):
        pets.search(["Pets"], "   ")
    with pytest.raises(InvalidInputError, match="all zeros"):
        pets.search(["Pets"], "x", query_vector=[0.0] * 8)
    with pytest.raises(InvalidInputError, match="mode must be one of"):
        pets.search(["Pets"], "x", mode="fuzzy")


def test_explain_shows_ranks_fusion_and_what_the_threshold_cut(pets):
    response = pets.search(["Pets", "Work"], "dogs bark felines", query_vector=axis(CAT), mode="hybrid", explain=True)
    by_source = {e["source"]: e for e in response.explain}
    dogs = by_source["dogs.txt"]  # the keyword #1, cosine 0: kept by its keyword side
    assert dogs["cut"] is None and dogs["keyword_rank"] == 1 and dogs["cosine"] == 0.0
    assert by_source["sso.md"]["cut"] == "threshold"  # cosine 0 and no keyword match
    for e in response.explain:  # the rule: convex score at least alpha * threshold
        assert (e["cut"] == "threshold") == (e["fused"] < 0.7 * 0.3), e
    kittens = by_source["kittens.md"]
    assert kittens["cut"] is None and kittens["vector_rank"] == 2 and kittens["keyword_rank"] is not None
    assert kittens["fused"] > by_source["cats.txt"]["fused"]  # both rankers agree on it
    assert [r.source for r in response.results] == [e["source"] for e in response.explain if e["cut"] is None]
    limited = pets.search(
        ["Pets", "Work"], "x", query_vector=axis(CAT), mode="vector", limit=1, threshold=-1, explain=True
    )
    assert [e["cut"] for e in limited.explain][:2] == [None, "limit"]


def test_keyword_search_never_leaks_another_kbs_chunks(desk):
    desk.create_kb("Loud")
    desk.create_kb("Quiet")
    for i in range(30):
        desk.add_document("Loud", f"loud{i}.txt", [f"alpha alpha alpha beacon number {i}"])
    desk.add_document("Quiet", "quiet.txt", ["a single alpha among many other words in a long sentence"])
    hits = desk.search(["Quiet"], "alpha", mode="keyword", limit=5).results
    assert [h.source for h in hits] == ["quiet.txt"]
    both = desk.search(["Loud", "Quiet"], "alpha", mode="keyword", limit=20).results
    assert len(both) == 20 and all(h.kb == "Loud" for h in both[:20])


def test_stopwords_do_not_decide_keyword_results():
    from kbdesk.store.sqlite.lookup import fts_query

    assert fts_query("What is the backup schedule?") == '"backup" OR "schedule"'
    assert fts_query("the and of") == '"the" OR "and" OR "of"'  # nothing else: keep them
