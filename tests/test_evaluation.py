"""Ranking metrics on hand-computed cases, and the BEIR harness end to end on a tiny dataset."""

import json
import math

import pytest

from kbdesk import open_desk
from kbdesk.evaluation.beir import hit_at, load_dataset, run_queries, write_corpus
from kbdesk.evaluation.metrics import mrr_at, ndcg_at, recall_at, summarise


def test_ndcg_by_hand():
    qrels = {"a": 1, "b": 1}
    # relevant at ranks 1 and 3: DCG = 1 + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3)
    assert ndcg_at(["a", "x", "b"], qrels) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert ndcg_at(["a", "b"], qrels) == pytest.approx(1.0)
    assert ndcg_at(["x", "y"], qrels) == 0.0
    graded = {"a": 2, "b": 1}
    # b first then a: (1 + 2/log2(3)) / (2 + 1/log2(3))
    assert ndcg_at(["b", "a"], graded) == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert ndcg_at(["x"] * 10 + ["a"], qrels, 10) == 0.0  # past the cut-off counts nothing


def test_recall_and_mrr_by_hand():
    qrels = {"a": 1, "b": 1, "c": 0}
    assert recall_at(["a", "c", "x"], qrels, 10) == 0.5
    assert recall_at(["x", "b", "a"], qrels, 2) == 0.5
    assert mrr_at(["x", "c", "b"], qrels) == pytest.approx(1 / 3)
    assert mrr_at(["x"] * 10 + ["a"], qrels) == 0.0
    assert summarise({"q1": ["a"], "q2": []}, {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"z": 0}}) == {
        "ndcg@10": 0.5,
        "recall@10": 0.5,
        "recall@100": 0.5,
        "mrr@10": 0.5,
        "queries": 2,
    }


def make_dataset(folder):
    corpus = [
        {"_id": "d1", "title": "Lighthouses", "text": "A lighthouse keeper trims the lamp every evening."},
        {"_id": "d2", "title": "Bread", "text": "Sourdough bread rises slowly with a wild yeast starter."},
        {"_id": "d3", "title": "Tides", "text": "Spring tides follow the full and the new moon."},
        {"_id": "d/4", "title": "", "text": "Keepers of lighthouses once lived on remote rocks."},
    ]
    queries = [
        {"_id": "q1", "text": "lighthouse keeper"},
        {"_id": "q2", "text": "sourdough starter"},
        {"_id": "q3", "text": "unjudged query"},
    ]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus))
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td/4\t1\nq2\td2\t1\n")


def test_harness_end_to_end_through_the_pipeline(tmp_path):
    make_dataset(tmp_path / "data")
    dataset = load_dataset(tmp_path / "data")
    assert set(dataset.qrels) == {"q1", "q2"}
    with open_desk() as desk:
        desk.create_kb("eval", keyword_only=True)
        names = write_corpus(dataset, tmp_path / "files")
        report = desk.add("eval", [tmp_path / "files"])
        assert len(report.added) == 4 and not report.failed
        first: dict[str, list[str]] = {}
        runs = run_queries(desk, "eval", dataset, names, mode="keyword", first_chunks=first)
    assert runs["q2"][0] == "d2"
    assert set(runs["q1"][:2]) == {"d1", "d/4"}  # ids with odd characters map back
    scores = summarise(runs, dataset.qrels)
    assert scores["recall@10"] == 1.0 and scores["queries"] == 2
    # what a default search shows: the documents of the first chunks, in order
    assert first["q2"][0] == "d2" and len(first["q1"]) <= 5
    assert hit_at(first, dataset.qrels) == 1.0
    assert hit_at({"q1": ["d2"], "q2": []}, dataset.qrels) == 0.0


def test_missing_files_are_a_clear_error(tmp_path):
    from kbdesk.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="not a BEIR dataset"):
        load_dataset(tmp_path)
