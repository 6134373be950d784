"""BM25 keyword ranking on Postgres: the same scores as SQLite's FTS5 ``bm25()``.

FTS5 scores a row (``fts5_aux.c``, ``fts5Bm25Function``) as, over the query's phrases,

    sum  idf(p) * tf(p) * (k1 + 1) / (tf(p) + k1 * (1 - b + b * dl / avgdl))
    idf(p) = log((N - n(p) + 0.5) / (n(p) + 0.5)), or 1e-6 when that is <= 0

with k1 = 1.2, b = 0.75, N the rows in the index, n(p) the rows holding the phrase,
dl the row's length in tokens and avgdl the mean length. Postgres full text has the
per-row part (a ``tsvector`` keeps each lexeme's positions, so tf) but no N, n or
avgdl, so kbdesk keeps them per KB, exact, in two tables of its own:

- ``kbdesk_keyword_kbs(kb_id, chunks, tokens)``: N and the sum of dl;
- ``kbdesk_keyword_terms(kb_id, lexeme, chunks)``: n per lexeme (rows at 0 are removed);

and each chunk's dl in ``kb_chunks.keyword_length`` (generated). Triggers on
``kb_chunks`` move them in the transaction that inserts, deletes or rewrites chunks —
COPY, cascades from a document or KB deletion and ``TRUNCATE`` included — so they are
exact whatever path wrote the rows (a seed writer's too). The statement-level
triggers aggregate a whole batch into one upsert per table, the per-KB row first and
lexemes in order, so writers of one KB queue on that row and never deadlock on lexemes.

Tokenisation is FTS5's ``porter unicode61`` as far as Postgres allows: the text is
indexed with ASCII punctuation turned into spaces (``kbdesk_keyword_text``), so the
default parser sees runs of letters and digits as unicode61 does ("covid-19" is
``covid`` and ``19``, never the signed number ``-19``; "1.5" is ``1`` and ``5``), and
the configuration ``kbdesk_porter`` stems every token with Postgres's Snowball copy of
the original Porter stemmer, stopwords kept, as FTS5 does; dl counts those runs.
Diacritics are folded as FTS5's ``remove_diacritics 2`` folds them: the same
``translate`` maps every precomposed Latin, Greek and Cyrillic letter to its base letter
(:func:`kbdesk.textnorm.diacritic_pairs`; in a UTF-8 database), and query words get
:func:`kbdesk.textnorm.fold_diacritics`, so "cafe" finds "café" on both engines. What
differs: FTS5 leaves tokens under three letters unstemmed ("ms" stays, Postgres makes
it "m"), and a few characters split or join tokens differently (the default parser's
rules for non-ASCII text).

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

from kbdesk.store.cjk import CJK_CLASS
from kbdesk.store.dbapi import Connection
from kbdesk.store.keywords import SCORED_TERM_BUDGETS, KeywordParts, bounds, query_terms
from kbdesk.store.postgres.engine import PgConnection
from kbdesk.store.postgres.values import uuid_array
from kbdesk.textnorm import diacritic_pairs, fold_diacritics

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

# ASCII punctuation, each turned into a space before the parser sees the text
_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_MAX_TEXT = 262144  # a tsvector stops at 1 MB: the first 256k characters are indexed


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def keyword_text_sql(utf8: bool = True, cjk: str = "") -> str:
    """The body of ``kbdesk_keyword_text(content)`` (pg_catalog functions, and ``cjk``:
    the qualified name of :func:`cjk_sql`'s function): ASCII punctuation to spaces and,
    in a UTF-8 database, accented letters to their base and CJK runs as their characters
    and pairs (:mod:`kbdesk.store.cjk`)."""
    accented, plain = diacritic_pairs() if utf8 else ("", "")
    text = f"pg_catalog.left(content, {_MAX_TEXT})"
    if utf8 and cjk:
        text = f"pg_catalog.left({cjk}({text}), {_MAX_TEXT})"
    return (
        f"SELECT pg_catalog.translate({text}, "
        f"E{_literal(_escape(_PUNCTUATION + accented))}, {_literal(' ' * len(_PUNCTUATION) + plain)})"
    )


def cjk_sql() -> str:
    """The body of ``kbdesk_keyword_cjk(content)``: each run of CJK characters as its
    characters then its overlapping pairs, space-separated — :func:`kbdesk.store.cjk.keyword_text`
    in SQL, so both engines index the same tokens (text without CJK is returned as is)."""
    run = f"[{CJK_CLASS}]"
    return f"""SELECT CASE WHEN content !~ '{run}' THEN content ELSE (
        SELECT pg_catalog.string_agg(CASE WHEN r.m[1] IS NULL THEN r.m[2] ELSE
            ' ' || (SELECT pg_catalog.string_agg(pg_catalog.substr(r.m[1], i, 1), ' ' ORDER BY i)
                    FROM pg_catalog.generate_series(1, pg_catalog.length(r.m[1])) AS i)
            || coalesce(' ' || (SELECT pg_catalog.string_agg(pg_catalog.substr(r.m[1], i, 2), ' ' ORDER BY i)
                    FROM pg_catalog.generate_series(1, pg_catalog.length(r.m[1]) - 1) AS i), '')
            || ' ' END, '' ORDER BY r.n)
        FROM pg_catalog.regexp_matches(content, '({run}+)|([^{CJK_CLASS}]+)', 'g')
             WITH ORDINALITY AS r(m, n)) END"""


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\")


def keyword_length_sql(server_version: int, cjk: str = "") -> str:
    """The body of ``kbdesk_keyword_length(content)``: runs of letters and digits, as
    unicode61 counts tokens (``regexp_count`` from PostgreSQL 15 on), in the text as
    indexed (CJK runs as characters and pairs when ``cjk`` names that function)."""
    text = f"pg_catalog.left(content, {_MAX_TEXT})"
    token = "'[[:alnum:]]+'"
    if cjk:
        text = f"pg_catalog.left({cjk}({text}), {_MAX_TEXT})"
        token = f"'[[:alnum:]{CJK_CLASS}]+'"
    if server_version >= 150000:
        return f"SELECT pg_catalog.regexp_count({text}, {token})"
    return f"SELECT pg_catalog.count(*)::int FROM pg_catalog.regexp_matches({text}, {token}, 'g')"


# FTS5's tokenizer is "porter unicode61": every token indexed (no stopwords), stemmed by
# Martin Porter's original algorithm. Postgres ships that stemmer among its Snowball
# ones ("porter"); kbdesk's configuration uses it, without a stopword list, for every
# token type the default parser gives (the english configuration would stem with Porter2
# and leave out its stopwords, "t" of "T cells" among them).
CONFIG = "kbdesk_porter"
TSV_EXPRESSION = f"to_tsvector('{CONFIG}'::regconfig, kbdesk_keyword_text(content))"


def _ensure_config(conn: PgConnection) -> None:
    """The text search configuration ``kbdesk_porter`` (and its dictionary), once."""
    exists = "SELECT 1 FROM {} WHERE {} = %s AND {} = current_schema()::regnamespace"
    if not conn.execute(exists.format("pg_ts_dict", "dictname", "dictnamespace"), (CONFIG + "_stem",)).fetchone():
        conn.execute(f"CREATE TEXT SEARCH DICTIONARY {CONFIG}_stem (TEMPLATE = snowball, Language = porter)")
    if not conn.execute(exists.format("pg_ts_config", "cfgname", "cfgnamespace"), (CONFIG,)).fetchone():
        conn.execute(f"CREATE TEXT SEARCH CONFIGURATION {CONFIG} (COPY = pg_catalog.english)")
        for old in ("english_stem", "simple"):
            conn.execute(
                f"ALTER TEXT SEARCH CONFIGURATION {CONFIG} ALTER MAPPING REPLACE pg_catalog.{old} WITH {CONFIG}_stem"
            )


def install(conn: PgConnection) -> None:
    """The ``keyword_stats`` migration: functions, columns, tables, triggers, and the
    statistics of the chunks already stored. Idempotent; the table rewrite (a new
    ``content_tsv`` and ``keyword_length``) happens only when they are not there yet."""
    version = int(conn.execute("SHOW server_version_num").fetchone()[0])
    utf8 = conn.execute("SHOW server_encoding").fetchone()[0].upper() in ("UTF8", "UTF-8")
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    path = f"pg_catalog, {_ident(schema)}, pg_temp"
    cjk = f"{_ident(schema)}.kbdesk_keyword_cjk" if utf8 else ""
    if cjk:
        conn.execute(
            f"CREATE OR REPLACE FUNCTION kbdesk_keyword_cjk(content text) RETURNS text "
            f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$ {cjk_sql()} $f$"
        )
    body = keyword_text_sql(utf8, cjk)
    old_body = conn.execute(
        "SELECT prosrc FROM pg_proc WHERE proname = 'kbdesk_keyword_text' "
        "AND pronamespace = current_schema()::regnamespace"
    ).fetchone()
    conn.execute(
        f"CREATE OR REPLACE FUNCTION kbdesk_keyword_text(content text) RETURNS text "
        f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$ {body} $f$"
    )
    conn.execute(
        f"CREATE OR REPLACE FUNCTION kbdesk_keyword_length(content text) RETURNS int "
        f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$ {keyword_length_sql(version, cjk)} $f$"
    )
    _ensure_config(conn)
    current = conn.execute(
        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid "
        "AND a.attnum = d.adnum WHERE d.adrelid = 'kb_chunks'::regclass AND a.attname = 'content_tsv'"
    ).fetchone()
    has_length = conn.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = 'kb_chunks'::regclass "
        "AND attname = 'keyword_length' AND NOT attisdropped"
    ).fetchone()
    # a stored generated column keeps what the old function computed: a new body means a rewrite
    changed = old_body is not None and old_body[0].strip() != body.strip()
    if changed or not current or "kbdesk_keyword_text" not in current[0] or CONFIG not in current[0] or not has_length:
        # one rewrite of kb_chunks for both columns (the GIN index goes with the old column)
        conn.execute(
            f"ALTER TABLE kb_chunks DROP COLUMN IF EXISTS content_tsv, DROP COLUMN IF EXISTS keyword_length, "
            f"ADD COLUMN content_tsv tsvector GENERATED ALWAYS AS ({TSV_EXPRESSION}) STORED, "
            f"ADD COLUMN keyword_length int GENERATED ALWAYS AS (kbdesk_keyword_length(content)) STORED, "
            f"ALTER COLUMN content_tsv SET STORAGE MAIN"
        )
    # every candidate row's tsvector is read, its text only for the results: a row too
    # wide for its page moves the text out of line first (measured: keyword queries
    # 15-25 % faster than with the tsvector in the TOAST table)
    conn.execute("ALTER TABLE kb_chunks ALTER COLUMN content_tsv SET STORAGE MAIN")
    conn.execute("CREATE INDEX IF NOT EXISTS idx_kbchunk_tsv ON kb_chunks USING gin (content_tsv)")
    for statement in _STATS_DDL:
        conn.execute(statement.replace("@PATH@", path))
    conn.execute("SELECT kbdesk_keyword_rebuild()")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# Trigger functions run as their owner (the role that migrated), with a fixed
# search_path: whoever may write chunks keeps the statistics right without any
# privilege on the statistics tables.
_STATS_DDL = [
    """CREATE TABLE IF NOT EXISTS kbdesk_keyword_kbs (
        kb_id  UUID PRIMARY KEY REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        chunks BIGINT NOT NULL,
        tokens BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS kbdesk_keyword_terms (
        kb_id  UUID NOT NULL,
        lexeme TEXT NOT NULL,
        chunks INT NOT NULL,
        PRIMARY KEY (kb_id, lexeme)
    )""",
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_added() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    BEGIN
        INSERT INTO kbdesk_keyword_kbs AS s (kb_id, chunks, tokens)
            SELECT kb_id, count(*), coalesce(sum(keyword_length), 0) FROM kbdesk_added GROUP BY kb_id ORDER BY kb_id
        ON CONFLICT (kb_id) DO UPDATE SET chunks = s.chunks + excluded.chunks, tokens = s.tokens + excluded.tokens;
        INSERT INTO kbdesk_keyword_terms AS s (kb_id, lexeme, chunks)
            SELECT a.kb_id, l.lexeme, count(*)
            FROM kbdesk_added a, unnest(tsvector_to_array(a.content_tsv)) AS l(lexeme)
            GROUP BY a.kb_id, l.lexeme ORDER BY a.kb_id, l.lexeme
        ON CONFLICT (kb_id, lexeme) DO UPDATE SET chunks = s.chunks + excluded.chunks;
        RETURN NULL;
    END $f$""",
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_removed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    DECLARE
        kbs uuid[];
        lexemes text[];
    BEGIN
        UPDATE kbdesk_keyword_kbs s SET chunks = s.chunks - r.n, tokens = s.tokens - r.t
        FROM (SELECT kb_id, count(*) AS n, coalesce(sum(keyword_length), 0) AS t FROM kbdesk_removed
              GROUP BY kb_id) r WHERE s.kb_id = r.kb_id;
        WITH gone AS (SELECT r.kb_id, l.lexeme, count(*) AS n FROM kbdesk_removed r,
                             unnest(tsvector_to_array(r.content_tsv)) AS l(lexeme) GROUP BY r.kb_id, l.lexeme),
             moved AS (UPDATE kbdesk_keyword_terms s SET chunks = s.chunks - g.n FROM gone g
                       WHERE s.kb_id = g.kb_id AND s.lexeme = g.lexeme RETURNING s.kb_id, s.lexeme, s.chunks)
        SELECT array_agg(kb_id), array_agg(lexeme) INTO kbs, lexemes FROM moved WHERE chunks <= 0;
        IF kbs IS NOT NULL THEN
            DELETE FROM kbdesk_keyword_terms s USING unnest(kbs, lexemes) AS z(kb_id, lexeme)
            WHERE s.kb_id = z.kb_id AND s.lexeme = z.lexeme AND s.chunks <= 0;
        END IF;
        RETURN NULL;
    END $f$""",
    # a chunk rewritten in place (an import's INSERT … ON CONFLICT DO UPDATE): out with
    # the old row's counts, in with the new one's
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    BEGIN
        UPDATE kbdesk_keyword_kbs SET chunks = chunks - 1, tokens = tokens - OLD.keyword_length
        WHERE kb_id = OLD.kb_id;
        UPDATE kbdesk_keyword_terms SET chunks = chunks - 1
        WHERE kb_id = OLD.kb_id AND lexeme = ANY(tsvector_to_array(OLD.content_tsv));
        DELETE FROM kbdesk_keyword_terms WHERE kb_id = OLD.kb_id AND lexeme = ANY(tsvector_to_array(OLD.content_tsv))
            AND chunks <= 0;
        INSERT INTO kbdesk_keyword_kbs AS s (kb_id, chunks, tokens) VALUES (NEW.kb_id, 1, NEW.keyword_length)
        ON CONFLICT (kb_id) DO UPDATE SET chunks = s.chunks + 1, tokens = s.tokens + excluded.tokens;
        INSERT INTO kbdesk_keyword_terms AS s (kb_id, lexeme, chunks)
            SELECT NEW.kb_id, l.lexeme, 1 FROM unnest(tsvector_to_array(NEW.content_tsv)) AS l(lexeme) ORDER BY l.lexeme
        ON CONFLICT (kb_id, lexeme) DO UPDATE SET chunks = s.chunks + 1;
        RETURN NULL;
    END $f$""",
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_truncated() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    BEGIN
        DELETE FROM kbdesk_keyword_terms;
        DELETE FROM kbdesk_keyword_kbs;
        RETURN NULL;
    END $f$""",
    # Recount everything from kb_chunks (the migration; a repair after writes made with
    # triggers disabled, e.g. session_replication_role = replica).
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_rebuild() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    BEGIN
        LOCK TABLE kb_chunks IN SHARE MODE;
        DELETE FROM kbdesk_keyword_terms;
        DELETE FROM kbdesk_keyword_kbs;
        INSERT INTO kbdesk_keyword_kbs (kb_id, chunks, tokens)
            SELECT kb_id, count(*), coalesce(sum(keyword_length), 0) FROM kb_chunks GROUP BY kb_id;
        INSERT INTO kbdesk_keyword_terms (kb_id, lexeme, chunks)
            SELECT c.kb_id, l.lexeme, count(*) FROM kb_chunks c, unnest(tsvector_to_array(c.content_tsv)) AS l(lexeme)
            GROUP BY c.kb_id, l.lexeme;
    END $f$""",
    # a repair for the tables' owner (it locks kb_chunks): nobody else may call it
    "REVOKE ALL ON FUNCTION kbdesk_keyword_rebuild() FROM PUBLIC",
    "DROP TRIGGER IF EXISTS kbdesk_keyword_ai ON kb_chunks",
    "DROP TRIGGER IF EXISTS kbdesk_keyword_ad ON kb_chunks",
    "DROP TRIGGER IF EXISTS kbdesk_keyword_au ON kb_chunks",
    "DROP TRIGGER IF EXISTS kbdesk_keyword_at ON kb_chunks",
    "CREATE TRIGGER kbdesk_keyword_ai AFTER INSERT ON kb_chunks REFERENCING NEW TABLE AS kbdesk_added "
    "FOR EACH STATEMENT EXECUTE FUNCTION kbdesk_keyword_added()",
    "CREATE TRIGGER kbdesk_keyword_ad AFTER DELETE ON kb_chunks REFERENCING OLD TABLE AS kbdesk_removed "
    "FOR EACH STATEMENT EXECUTE FUNCTION kbdesk_keyword_removed()",
    # (transition tables cannot go with a column list: a row trigger, for the rare rewrite;
    # the re-embedding UPDATE of vectors never fires it)
    "CREATE TRIGGER kbdesk_keyword_au AFTER UPDATE OF content, kb_id ON kb_chunks FOR EACH ROW "
    "WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.kb_id IS DISTINCT FROM NEW.kb_id) "
    "EXECUTE FUNCTION kbdesk_keyword_changed()",
    "CREATE TRIGGER kbdesk_keyword_at AFTER TRUNCATE ON kb_chunks FOR EACH STATEMENT "
    "EXECUTE FUNCTION kbdesk_keyword_truncated()",
]


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
