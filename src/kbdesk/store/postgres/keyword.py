"""BM25 keyword ranking on Postgres: the same scores as SQLite's FTS5 ``bm25()``.

FTS5 scores a row (``fts5_aux.c``, ``fts5Bm25Function``) as, over the query's phrases,

    sum  idf(p) * tf(p) * (k1 + 1) / (tf(p) + k1 * (1 - b + b * dl / avgdl))
    idf(p) = log((N - n(p) + 0.5) / (n(p) + 0.5)), or 1e-6 when that is <= 0

with k1 = 1.2, b = 0.75, N the rows in the index, n(p) the rows holding the phrase,
dl the row's length in tokens and avgdl the mean length. Postgres full text has the
per-row part (a ``tsvector`` keeps each lexeme's positions, so tf) but no N, n or
avgdl, so kbdesk keeps them per KB, exact, in two tables of its own, with each chunk's
dl, and indexes text as FTS5's ``porter unicode61`` tokenises it, as far as Postgres
allows (:mod:`.keyword_index`: the configuration, the columns, the triggers).

A query is :func:`kbdesk.store.keywords.query_terms` (the SQLite store's own words, OR-ed,
stopwords out), each word its lexeme, bounded as SQLite bounds it (:func:`bounded`; the
budget is Postgres's own: :data:`KEYWORD_POSTINGS_BUDGET`), and scored over the KBs
searched (SQLite's FTS5 index spans the whole file: with one KB per file, or all KBs
searched, the statistics are the same).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbdesk.store.dbapi import Connection
from kbdesk.store.keywords import SCORED_TERM_BUDGETS, KeywordParts, bounds, query_terms
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.keyword_index import install  # noqa: F401 - where it always was
from kbdesk.store.postgres.values import uuid_array
from kbdesk.textnorm import fold_diacritics

K1 = 1.2  # FTS5's bm25() constants (fts5_aux.c)
B = 0.75
IDF_FLOOR = 1e-6  # FTS5's floor for a term in more than half the rows
# SQLite's postings budget (store/sqlite/lookup.py) with Postgres's own value: a row costs FTS5
# ~1 µs to score and Postgres ~3-5 µs (the GIN match, then the row's tsvector cut to the
# query's lexemes). On 100k chunks of SciFact prose a budget of 50,000 (SQLite's) gave
# p50 134 ms and 0.999 of SQLite's top-10 chunks, 20,000 75 ms and 0.936, 10,000 41 ms
# and 0.885; on SciFact itself (11.7k chunks) 20,000 bounds 2 of 809 queries
# (docs/BENCHMARKS-postgres.md).
KEYWORD_POSTINGS_BUDGET = 20_000


# ── the query ─────────────────────────────────────────────────────────────────
# Which rows to read: the KBs' own rows, each tested against the gate, or the GIN
# index's rows for the gate, each tested for its KB. The GIN index spans every KB of the
# table, so a small KB in a large shared table pays for everyone's postings (SciFact's
# 11.7k chunks beside 100k others: p50 60 ms through GIN, 17 ms through its own rows).
# The KBs' rows are read when they are fewer than this share of the gate's postings in
# the whole table (estimated from the KBs' own frequencies; a posting costs ~0.3 µs in
# the GIN scan, a row ~0.6 µs to fetch and test).
KB_ROWS_PER_POSTING = 0.5


@dataclass(frozen=True)
class Plan:
    """A query's lexemes with their weight (idf × how many of its phrases name it), the
    lexemes a row must hold (``gate``), ``avgdl`` of the KBs searched, and whether to
    read the KBs' rows rather than the GIN index's (``by_kb``)."""

    weights: dict[str, float]
    gate: list[str]
    avgdl: float
    by_kb: bool = False


def idf(rows: int, df: int) -> float:
    """FTS5's IDF: log((N - n + 0.5) / (n + 0.5)), floored at 1e-6."""
    value = math.log((rows - df + 0.5) / (df + 0.5))
    return value if value > 0.0 else IDF_FLOOR


def bounded(
    terms: Sequence[str], df: dict[str, int], rows: int, budget: int = KEYWORD_POSTINGS_BUDGET
) -> tuple[list[int], list[int]]:
    """(gate, scored) as positions in ``terms``, as the SQLite store bounds a query
    (:meth:`kbdesk.store.sqlite.lookup.SqliteLookup.bounded_terms`): when ``rows`` × terms and
    the terms' document frequencies add up past ``budget``, rows must hold one of the
    rarest terms (the rarest always) and terms matching more rows than
    ``SCORED_TERM_BUDGETS`` budgets leave the score. Both are every position otherwise."""
    every = list(range(len(terms)))
    if len(terms) <= 1 or rows * len(terms) <= budget:
        return every, every
    cap = budget * SCORED_TERM_BUDGETS + 1  # SQLite counts no further
    return bounds(terms, [min(df.get(t, 0), cap) for t in terms], budget)


def query_words(text: str) -> list[str]:
    """The SQLite store's query words (stopwords out unless nothing else), diacritics
    folded as the indexed text's, for Postgres's parser."""
    return [fold_diacritics(w.replace("_", " ")) for w in query_terms(text)]


_LEXEMES = """
SELECT w.i, l.lexeme,
       coalesce((SELECT sum(s.chunks) FROM kbdesk_keyword_terms s
                 WHERE s.kb_id = ANY(%(kbs)s::uuid[]) AND s.lexeme = l.lexeme), 0)::bigint,
       t.chunks, t.tokens, (SELECT reltuples FROM pg_class WHERE oid = 'kb_chunks'::regclass)
FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w(word, i)
CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector('kbdesk_porter'::regconfig, w.word))) AS l(lexeme)
CROSS JOIN (SELECT coalesce(sum(chunks), 0)::bigint AS chunks, coalesce(sum(tokens), 0)::bigint AS tokens
            FROM kbdesk_keyword_kbs WHERE kb_id = ANY(%(kbs)s::uuid[])) t
ORDER BY w.i, l.lexeme
"""


def plan(conn: Connection, kb_ids: Sequence[str], text: str, budget: int | None = None) -> Plan | None:
    """Lexemes, weights and gate of a query over ``kb_ids`` (bounded by ``budget``, by
    default :data:`KEYWORD_POSTINGS_BUDGET`); None when nothing can match (no word left
    after Postgres's stopwords, or no chunk in the KBs)."""
    words = query_words(text)
    if not words or not kb_ids:
        return None
    rows = conn.execute(_LEXEMES, {"words": words, "kbs": list(kb_ids)}).fetchall()
    if not rows or not rows[0][3]:
        return None
    n_rows, tokens, table_rows = int(rows[0][3]), int(rows[0][4]), float(rows[0][5] or -1)
    terms = [lexeme for _, lexeme, _, _, _, _ in rows]  # one phrase per lexeme of each word, as FTS5 has
    df = {lexeme: int(n) for _, lexeme, n, _, _, _ in rows}
    gate, scored = bounded(terms, df, n_rows, KEYWORD_POSTINGS_BUDGET if budget is None else budget)
    weights: dict[str, float] = {}
    # a bounded query is "(gate) AND (scored)" on SQLite: the gate's phrases count twice
    for i in gate + scored if gate != scored else scored:
        weights[terms[i]] = weights.get(terms[i], 0.0) + idf(n_rows, df[terms[i]])
    lexemes = sorted({terms[i] for i in gate})
    postings = sum(df[lex] for lex in lexemes) * max(table_rows, n_rows) / n_rows  # in the whole table
    return Plan(weights, lexemes, tokens / n_rows, by_kb=n_rows < KB_ROWS_PER_POSTING * postings)


def tsquery_text(lexemes: Sequence[str]) -> str:
    """Lexemes OR-ed as tsquery input, each quoted (no operator in them is syntax)."""
    return " | ".join("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes)


# The score of every row holding a gate lexeme, in the KBs searched: each query lexeme's
# positions in the row (tf) from the row's tsvector cut down to the query's lexemes, dl
# from keyword_length. @ROWS@ is the table (rows found through the GIN index) or the KBs'
# own rows behind an optimisation fence (Plan.by_kb). A search filter's documents are a
# hashed set (a sub-select under OR stays a filter: the gate's GIN lookup remains the plan,
# and a row costs one hash probe, not a walk through a thousand ids).
_BM25 = """
SELECT c.seq,
       (SELECT sum(q.w * array_length(u.positions, 1) * %(k1p1)s
                   / (array_length(u.positions, 1) + %(k1)s * (1 - %(b)s + %(b)s * c.keyword_length / %(avgdl)s)))
        FROM unnest(ts_filter(setweight(c.content_tsv, 'A', %(lexemes)s::text[]), '{a}')) AS u
        JOIN unnest(%(lexemes)s::text[], %(weights)s::float8[]) AS q(lexeme, w) ON q.lexeme = u.lexeme) AS score
FROM @ROWS@ c
WHERE c.kb_id = ANY(%(kbs)s::uuid[]) AND c.content_tsv @@ %(gate)s::tsquery
  AND (%(docs)s::uuid[] IS NULL OR c.document_id IN (SELECT unnest(%(docs)s::uuid[])))
ORDER BY score DESC, c.seq
LIMIT %(k)s
"""
BM25_SQL = _BM25.replace("@ROWS@", "kb_chunks")
BM25_OF_SQL = _BM25.replace("@ROWS@", "(SELECT * FROM kb_chunks WHERE seq = ANY(%(seqs)s::bigint[]))")
BM25_BY_KB_SQL = _BM25.replace(
    "@ROWS@",
    "(SELECT seq, kb_id, document_id, content_tsv, keyword_length FROM kb_chunks "
    "WHERE kb_id = ANY(%(kbs)s::uuid[]) OFFSET 0)",
)


def candidates(
    conn: Connection,
    kb_ids: Sequence[str],
    text: str,
    k: int,
    budget: int | None = None,
    docs: Sequence[str] | None = None,
) -> list[tuple[int, float]]:
    """Top ``k`` (seq, BM25 score — higher is better) across ``kb_ids``; only chunks of
    the documents ``docs`` when given (a search filter: scored as without it)."""
    p = plan(conn, kb_ids, text, budget)
    if p is None or k <= 0:
        return []
    args = _bm25_args(p, kb_ids, int(k), None if docs is None else uuid_array(list(docs)))
    rows = conn.execute(BM25_BY_KB_SQL if p.by_kb else BM25_SQL, args).fetchall()
    return [(int(seq), float(score)) for seq, score in rows]


_PARTS = """
SELECT c.document_id::text, c.chunk_index, u.lexeme,
       array_length(u.positions, 1) * %(k1p1)s
       / (array_length(u.positions, 1) + %(k1)s * (1 - %(b)s + %(b)s * c.keyword_length / %(avgdl)s))
FROM kb_chunks c
CROSS JOIN LATERAL unnest(ts_filter(setweight(c.content_tsv, 'A', %(lexemes)s::text[]), '{a}')) AS u
WHERE c.document_id = ANY(%(docs)s::uuid[]) AND c.kb_id = ANY(%(kbs)s::uuid[])
"""


def parts(conn: Connection, kb_ids: Sequence[str], text: str, chunks: Sequence[tuple[str, int]]) -> KeywordParts:
    """What the BM25 of ``chunks`` (document id, chunk index) is made of, by query word
    (:class:`~kbdesk.store.keywords.KeywordParts`): N and each word's document frequency
    over the KBs searched, and each chunk's score split by word (a word's lexemes'
    ``idf × tf-part``, as :func:`candidates` sums them)."""
    words = query_terms(text)
    docs = sorted({doc for doc, _ in chunks})
    if not words or not kb_ids or not docs:
        return KeywordParts()
    rows = conn.execute(_LEXEMES, {"words": query_words(text), "kbs": list(kb_ids)}).fetchall()
    if not rows or not rows[0][3]:
        return KeywordParts()
    n_rows, tokens = int(rows[0][3]), int(rows[0][4])
    word_of: dict[str, list[str]] = {}
    df_of: dict[str, int] = {}
    out = KeywordParts(n_rows)
    for i, lexeme, n, *_ in rows:
        word = words[int(i) - 1]
        word_of.setdefault(lexeme, []).append(word)
        df_of[lexeme] = int(n)
        out.df[word] = max(out.df.get(word, 0), int(n))
    wanted = set(chunks)
    out.parts = {key: {} for key in wanted}
    args = {
        "k1": K1,
        "k1p1": K1 + 1.0,
        "b": B,
        "avgdl": (tokens / n_rows) or 1.0,
        "lexemes": sorted(word_of),
        "docs": uuid_array(docs),
        "kbs": list(kb_ids),
    }
    for doc, index, lexeme, tf_part in conn.execute(_PARTS, args).fetchall():
        key = (str(doc), int(index))
        if key not in wanted:
            continue
        for word in word_of.get(lexeme, []):
            own = out.parts[key]
            own[word] = own.get(word, 0.0) + idf(n_rows, df_of[lexeme]) * float(tf_part)
    return out


def scores(conn: Connection, kb_ids: Sequence[str], text: str, seqs: Sequence[int]) -> dict[int, float]:
    """The BM25 score (as :func:`candidates` gives it) of each of ``seqs`` that matches."""
    p = plan(conn, kb_ids, text)
    if p is None or not seqs:
        return {}
    args = {**_bm25_args(p, kb_ids, len(seqs), None), "seqs": [int(s) for s in seqs]}
    return {int(seq): float(score) for seq, score in conn.execute(BM25_OF_SQL, args).fetchall()}


def _bm25_args(p: Plan, kb_ids: Sequence[str], k: int, docs: Any) -> dict[str, Any]:
    """The parameters of the BM25 queries for a query's plan ``p``."""
    lexemes = list(p.weights)
    return {
        "k1": K1,
        "k1p1": K1 + 1.0,
        "b": B,
        "avgdl": p.avgdl or 1.0,
        "lexemes": lexemes,
        "weights": [p.weights[x] for x in lexemes],
        "kbs": list(kb_ids),
        "gate": tsquery_text(p.gate),
        "k": k,
        "docs": docs,
    }


def statistics(conn: PgConnection, kb_id: str) -> dict[str, Any]:
    """A KB's stored statistics next to the same figures counted from its chunks now
    (for tests and ``doctor``-style checks): ``stored`` and ``counted``, each
    ``{"chunks", "tokens", "terms": {lexeme: chunks}}``."""

    def read(kbs_sql: str, terms_sql: str) -> dict[str, Any]:
        chunks, tokens = conn.execute(kbs_sql, (kb_id,)).fetchone() or (0, 0)
        terms = {lex: int(n) for lex, n in conn.execute(terms_sql, (kb_id,)).fetchall()}
        return {"chunks": int(chunks or 0), "tokens": int(tokens or 0), "terms": terms}

    return {
        "stored": read(
            "SELECT chunks, tokens FROM kbdesk_keyword_kbs WHERE kb_id = %s",
            "SELECT lexeme, chunks FROM kbdesk_keyword_terms WHERE kb_id = %s",
        ),
        "counted": read(
            "SELECT count(*), sum(keyword_length) FROM kb_chunks WHERE kb_id = %s",
            "SELECT l.lexeme, count(*) FROM kb_chunks c, unnest(tsvector_to_array(c.content_tsv)) AS "
            "l(lexeme) WHERE c.kb_id = %s GROUP BY l.lexeme",
        ),
    }
