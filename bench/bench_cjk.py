"""Which keyword index finds CJK words: FTS5 unicode61 (before), trigram, and kbdesk's characters-and-pairs.

    .venv/bin/python bench/bench_cjk.py [--data /path/to/scifact]

Two measurements, each on a plain FTS5 table (one row per document), with the same
query rule as kbdesk (the query's words quoted and OR-ed, BM25):

1. CJK words inside running text: sentences of Chinese, Japanese and Korean made from a
   word list, each word queried alone; the share of queries whose sentence is among the
   matches (recall: the words repeat across sentences, so rank is not the point).
2. English: SciFact's 809 training queries, nDCG@10 over its 5,183 abstracts, so the
   cost of an index for English is seen (kbdesk's pairs leave English text untouched).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from kbdesk.store.cjk import keyword_text, query_pieces  # noqa: E402
from kbdesk.store.sqlite.driver import choose_driver  # noqa: E402

WORDS = {
    "ja": ["検索", "会議", "東京", "新しい", "機能", "猫", "図書館", "電車", "天気", "料理", "勉強", "旅行"],
    "zh": ["搜索", "会议", "北京", "新的", "功能", "猫", "图书馆", "火车", "天气", "做饭", "学习", "旅行"],
    "ko": ["검색", "회의", "서울", "새로운", "기능", "고양이", "도서관", "기차", "날씨", "요리", "공부", "여행"],
}
GLUE = {"ja": "の", "zh": "的", "ko": " "}


def _cjk_corpus(rng: random.Random) -> tuple[list[str], list[tuple[str, int]]]:
    docs, queries = [], []
    for lang, words in WORDS.items():
        for _ in range(40):
            picked = rng.sample(words, 4)
            docs.append(GLUE[lang].join(picked) + ("。" if lang != "ko" else "."))
            queries.append((rng.choice(picked), len(docs) - 1))
    return docs, queries


def _index(sqlite, tokenizer: str, texts: list[str], transform=None):
    conn = sqlite.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, tokenize='{tokenizer}')")
    conn.executemany(
        "INSERT INTO t(rowid, content) VALUES (?, ?)",
        [(i, (transform(x) or x) if transform else x) for i, x in enumerate(texts)],
    )
    return conn


def _query(words: list[str]) -> str:
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _search(conn, expr: str, k: int) -> list[int]:
    if not expr:
        return []
    try:
        return [r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (expr, k))]
    except Exception:  # noqa: BLE001 - trigram refuses some queries (counted as nothing found)
        return []


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _ndcg(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:k]))
    return dcg / ideal if ideal else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "eval" / "scifact"))
    args = parser.parse_args()
    sqlite = choose_driver("auto").module
    rng = random.Random(23)
    docs, queries = _cjk_corpus(rng)
    schemes = {
        "unicode61 (before)": ("porter unicode61 remove_diacritics 2", None, lambda w: _words(w)),
        "trigram": ("trigram", None, lambda w: [x for x in _words(w) if len(x) >= 3] or _words(w)),
        "kbdesk: characters and pairs": (
            "porter unicode61 remove_diacritics 2",
            keyword_text,
            lambda w: [p for x in _words(w) for p in query_pieces(x)],
        ),
    }
    print("| index | CJK words found inside sentences | SciFact nDCG@10 (English) |")
    print("|---|---:|---:|")
    data = Path(args.data)
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open()] if (data / "corpus.jsonl").exists() else []
    qs = {q["_id"]: q["text"] for q in (json.loads(line) for line in (data / "queries.jsonl").open())} if corpus else {}
    qrels: dict[str, dict[str, int]] = {}
    if corpus:
        for line in (data / "qrels" / "train.tsv").open():
            parts = line.split("\t")
            if len(parts) == 3 and parts[2].strip().isdigit():
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    for label, (tokenizer, transform, terms) in schemes.items():
        conn = _index(sqlite, tokenizer, docs, transform)
        found = sum(1 for q, doc in queries if doc in _search(conn, _query(terms(q)), len(docs)))
        ndcg = "n/a"
        if corpus:
            ids = [d["_id"] for d in corpus]
            eng = _index(sqlite, tokenizer, [f"{d.get('title', '')}\n{d['text']}" for d in corpus], transform)
            scores = [
                _ndcg([ids[i] for i in _search(eng, _query(terms(qs[qid])), 10)], rel)
                for qid, rel in qrels.items()
                if qid in qs
            ]
            ndcg = f"{sum(scores) / len(scores):.4f}"
        print(f"| {label} | {found}/{len(queries)} ({found / len(queries):.0%}) | {ndcg} |")


if __name__ == "__main__":
    main()
