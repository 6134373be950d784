"""Keyword search finds a Chinese, Japanese or Korean word inside running text, on every engine,
with the same ranking and scores on SQLite and Postgres; English is indexed as before."""

from __future__ import annotations

import pytest

from kbdesk import open_desk
from kbdesk.store.cjk import keyword_text, query_pieces
from kbdesk.store.keywords import query_terms

DOCS = {
    "tokyo.txt": "東京の会議で新しい検索機能について話しました。検索は速くなりました。",
    "cats.txt": "私は猫が好きです。猫と犬。",
    "seoul.txt": "서울에서 새로운 검색 엔진을 발표했습니다.",
    "beijing.txt": "北京大学的图书馆有很多中文书籍。我们在图书馆学习。",
    "mixed.txt": "The Tokyo office (東京オフィス) ships the search feature next week.",
    "english.txt": "Rivers and stones: the garden lamp by the bridge.",
}
CASES = [
    ("検索", "tokyo.txt"),  # two characters inside a run
    ("検索機能", "tokyo.txt"),  # four: its pairs
    ("会議", "tokyo.txt"),
    ("猫", "cats.txt"),  # one character
    ("검색", "seoul.txt"),  # Korean, a word with no particle
    ("图书馆", "beijing.txt"),
    ("オフィス", "mixed.txt"),  # katakana next to Latin text and brackets
    ("search feature", "mixed.txt"),
    ("stones", "english.txt"),
]


def _fill(desk, tmp_path):
    folder = tmp_path / "cjk"
    folder.mkdir(parents=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    desk.create_kb("CJK", keyword_only=True)
    report = desk.add("CJK", [str(folder)])
    assert not report.failed


@pytest.mark.parametrize("query,expected", CASES)
def test_a_cjk_word_is_found_inside_running_text(engine_desk, tmp_path, query, expected):
    _fill(engine_desk, tmp_path)
    results = engine_desk.search(["CJK"], query, mode="keyword", threshold=-1).results
    assert results, f"{query!r} found nothing"
    assert results[0].source == expected
    assert results[0].similarity == 1.0  # keyword coverage: every pair of the word is in the chunk


def test_sqlite_and_postgres_rank_cjk_words_alike(pg_uri, kbdesk_home, tmp_path):
    sqlite, pg = open_desk(), open_desk(pg_uri)
    try:
        for desk in (sqlite, pg):
            _fill(desk, tmp_path / desk.store.kind)
        for query in ["検索 会議", "猫", "图书馆 学习", "검색", "東京 search"]:
            a = sqlite.search(["CJK"], query, mode="keyword", threshold=-1).results
            b = pg.search(["CJK"], query, mode="keyword", threshold=-1).results
            assert [r.source for r in a] == [r.source for r in b], query
            assert [round(r.similarity, 6) for r in a] == [round(r.similarity, 6) for r in b], query
            raw_a = sqlite.store.keyword_candidates([sqlite.kb("CJK").id], query, 10)
            raw_b = pg.store.keyword_candidates([pg.kb("CJK").id], query, 10)
            assert [round(s, 5) for _, s in raw_a] == [round(s, 5) for _, s in raw_b], query
    finally:
        sqlite.close()
        pg.close()


def test_text_without_cjk_is_indexed_as_it_is():
    assert keyword_text("Rivers and stones, café 1.5") is None
    assert query_terms("the rivers and stones") == ["rivers", "stones"]


def test_cjk_runs_become_characters_and_pairs():
    assert keyword_text("新しい検索") == " 新 し い 検 索 新し しい い検 検索 "
    assert query_pieces("検索機能") == ["検索", "索機", "機能"]
    assert query_pieces("猫") == ["猫"]
    assert query_pieces("東京tower") == ["東京", "tower"]
