"""Keyword ranking on Postgres is FTS5's BM25: the same order and scores as SQLite, from
per-KB statistics that stay exact through every way chunks come and go.

The corpus uses words that FTS5's Porter and Postgres's Snowball stemmers put in the
same classes, hyphenated and decimal tokens (which Postgres's parser would otherwise
read as compounds and signed numbers), and chunks of different lengths, so IDF, tf and
the length normalisation all move the scores.
"""

from __future__ import annotations

import math
import random
import uuid

import psycopg
import pytest

from kbdesk import open_desk
from kbdesk.store.postgres import keyword, keyword_index
from kbdesk.store.postgres.schema import MIGRATIONS, migrate
from pg_support import sql

WORDS = [
    "river",
    "stone",
    "garden",
    "lamp",
    "bridge",
    "harbor",
    "forest",
    "meadow",
    "candle",
    "window",
    "rivers",
    "stones",
    "gardens",
    "lamps",
    "bridges",
    "copper",
    "silver",
    "marble",
    "orchard",
    "lantern",
    "valley",
    "summit",
    "canyon",
    "glacier",
    "covid-19",
    "1.5",
    "x-ray",
    "e-mail",
]
QUERIES = [
    "river stone",
    "copper lantern valley",
    "rivers",
    "covid-19 x-ray",
    "1.5 marble",
    "glacier summit canyon",
    "e-mail window candle forest",
    "the harbor of the valley",
    "orchard",
]


def corpus(seed: int = 7, docs: int = 12) -> dict[str, list[str]]:
    rng = random.Random(seed)
    out = {}
    for d in range(docs):
        chunks = []
        for _ in range(rng.randint(1, 4)):
            words = [rng.choice(WORDS[: rng.randint(4, len(WORDS))]) for _ in range(rng.randint(3, 30))]
            chunks.append("The " + " and the ".join(" ".join(words[i : i + 3]) for i in range(0, len(words), 3)) + ".")
        out[f"doc{d:02d}.txt"] = chunks
    return out


def fill(desk, name: str = "Notes", docs: dict[str, list[str]] | None = None) -> str:
    kb = desk.create_kb(name, keyword_only=True)
    for filename, chunks in (docs or corpus()).items():
        desk.add_document(name, filename, chunks)
    return kb.id


def ranked(desk, kb_ids: list[str], query: str, k: int = 10) -> list[tuple[str, int, float]]:
    hits = desk.store.keyword_candidates(kb_ids, query, k)
    rows = desk.store.result_rows([seq for seq, _ in hits])
    return [(rows[seq]["source"], rows[seq]["chunk_index"], score) for seq, score in hits]


def assert_same_ranking(a, b, rel=1e-9):
    assert [(s, i) for s, i, _ in a] == [(s, i) for s, i, _ in b]
    for (_, _, x), (_, _, y) in zip(a, b, strict=True):
        assert y == pytest.approx(x, rel=rel)


def exact(pg_desk, kb_id: str) -> dict:
    """The KB's stored statistics, after checking they equal a recount from its chunks."""
    stats = keyword.statistics(pg_desk.store.connection(), kb_id)
    assert stats["stored"] == stats["counted"]
    return stats["stored"]


@pytest.fixture
def sqlite_desk(kbdesk_home):
    desk = open_desk(kbdesk_home / "kb.db", backend="numpy")
    yield desk
    desk.close()


# ── the same ranking as SQLite ────────────────────────────────────────────────
def test_the_same_corpus_ranks_the_same_on_both_engines_with_the_same_scores(sqlite_desk, pg_desk):
    lite, pg = fill(sqlite_desk), fill(pg_desk)
    for query in QUERIES:
        expected = ranked(sqlite_desk, [lite], query)
        assert expected, query  # every query finds something here
        assert_same_ranking(expected, ranked(pg_desk, [pg], query))
    # and the whole search pipeline on top (similarity = score / best) agrees
    for query in QUERIES[:3]:
        a = sqlite_desk.search(["Notes"], query, mode="keyword", limit=20).results
        b = pg_desk.search(["Notes"], query, mode="keyword", limit=20).results
        assert [(r.source, r.chunk_index, round(r.similarity, 6)) for r in a] == [
            (r.source, r.chunk_index, round(r.similarity, 6)) for r in b
        ]


def test_scores_are_fts5_bm25_computed_by_hand(pg_desk):
    kb = fill(pg_desk, docs={"a.txt": ["lamp lamp garden", "garden bridge stone stone stone"], "b.txt": ["window"]})
    n, lengths = 3, [3, 5, 1]
    avgdl = sum(lengths) / n

    def term(tf, dl, df):  # fts5_aux.c: k1 = 1.2, b = 0.75, IDF floored at 1e-6
        idf = max(math.log((n - df + 0.5) / (df + 0.5)), 0) or 1e-6
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    hits = {(s, i): score for s, i, score in ranked(pg_desk, [kb], "lamp garden")}
    assert hits[("a.txt", 0)] == pytest.approx(term(2, 3, 1) + term(1, 3, 2), rel=1e-12)
    assert hits[("a.txt", 1)] == pytest.approx(term(1, 5, 2), rel=1e-12)
    assert keyword.idf(3, 2) == pytest.approx(1e-6)  # in more than half the rows: FTS5's floor


def test_two_words_with_one_stem_count_twice_as_fts5_phrases_do(sqlite_desk, pg_desk):
    docs = {"a.txt": ["river bank", "rivers flow", "stone"], "b.txt": ["meadow river stone"]}
    lite, pg = fill(sqlite_desk, docs=docs), fill(pg_desk, docs=docs)
    assert_same_ranking(ranked(sqlite_desk, [lite], "river rivers stone"), ranked(pg_desk, [pg], "river rivers stone"))


def test_a_kb_of_one_chunk_finds_it_with_the_floor_idf_on_both_engines(sqlite_desk, pg_desk):
    docs = {"only.txt": ["A lone lantern in the valley."]}
    lite, pg = fill(sqlite_desk, docs=docs), fill(pg_desk, docs=docs)
    a, b = ranked(sqlite_desk, [lite], "lantern"), ranked(pg_desk, [pg], "lantern")
    assert [(s, i) for s, i, _ in b] == [("only.txt", 0)]
    assert_same_ranking(a, b)
    assert 0 < b[0][2] < 1e-5  # N = 1, n = 1: IDF is FTS5's 1e-6 floor
    assert [r.source for r in pg_desk.search(["Notes"], "lantern", mode="keyword").results] == ["only.txt"]


def test_a_query_of_only_stopwords_searches_them_as_sqlite_does(sqlite_desk, pg_desk):
    lite, pg = fill(sqlite_desk), fill(pg_desk)
    # stopwords leave a query that has other words; alone, they are searched: both
    # engines index every token (Postgres through kbdesk's configuration, no stopword list)
    assert_same_ranking(ranked(sqlite_desk, [lite], "the and"), ranked(pg_desk, [pg], "the and"))
    assert ranked(pg_desk, [pg], "the and")
    assert_same_ranking(ranked(sqlite_desk, [lite], "the river"), ranked(pg_desk, [pg], "river"))
    assert ranked(pg_desk, [pg], "!!! ... ???") == []  # no word at all
    assert ranked(pg_desk, [pg], "zebra") == []  # a word no chunk has
    assert pg_desk.search(["Notes"], "of", mode="keyword").results == []  # in no chunk here


def test_user_text_is_never_tsquery_syntax(pg_desk):
    kb = fill(pg_desk, docs={"a.txt": ["copper lantern"], "b.txt": ["silver marble"]})
    for query in ["copper & !silver", "copper:* | 'silver'", "(copper <-> lantern)", "copper\\ o'brien", "copper:b:c"]:
        assert ranked(pg_desk, [kb], query)


def test_several_kbs_are_scored_over_their_union(pg_desk):
    one = fill(pg_desk, "One", docs={"a.txt": ["copper lantern", "copper valley"]})
    two = fill(pg_desk, "Two", docs={"b.txt": ["silver lantern", "marble summit", "canyon glacier"]})
    both = {(s, i): score for s, i, score in ranked(pg_desk, [one, two], "lantern")}
    expected = math.log((5 - 2 + 0.5) / (2 + 0.5))  # N 5, n 2; tf 1 and dl = avgdl: the tf part is 1
    assert both == {("a.txt", 0): pytest.approx(expected), ("b.txt", 0): pytest.approx(expected)}
    assert [s for s, _, _ in ranked(pg_desk, [two], "lantern")] == ["b.txt"]  # never another KB's chunk


# ── the statistics stay exact ────────────────────────────────────────────────
def test_statistics_follow_inserts_deletes_and_a_kb_deletion(pg_desk):
    kb = fill(pg_desk)
    other = fill(pg_desk, "Other", docs={"x.txt": ["copper lantern covid-19", "stone"]})
    stats = exact(pg_desk, kb)
    assert stats["chunks"] == pg_desk.kb("Notes").chunk_count
    assert stats["terms"]["covid"] >= 1 and "-19" not in stats["terms"]  # hyphens are separators
    doc = pg_desk.store.list_documents(kb)[0]
    pg_desk.store.delete_document(doc.id)
    after = exact(pg_desk, kb)
    assert after["chunks"] == stats["chunks"] - doc.chunk_count
    pg_desk.delete_kb("Notes")  # cascades: documents, chunks, statistics
    assert sql(pg_desk.store.uri, "SELECT count(*) FROM kbdesk_keyword_terms WHERE kb_id = %s", kb) == [(0,)]
    assert sql(pg_desk.store.uri, "SELECT count(*) FROM kbdesk_keyword_kbs WHERE kb_id = %s", kb) == [(0,)]
    assert exact(pg_desk, other) == {
        "chunks": 2,
        "tokens": 5,
        "terms": {"copper": 1, "lantern": 1, "covid": 1, "19": 1, "stone": 1},
    }


def test_statistics_follow_new_versions_of_files_and_a_rebuild(pg_desk, tmp_path):
    folder = tmp_path / "files"
    folder.mkdir()
    for name, chunks in corpus(docs=6).items():
        (folder / name).write_text("\n\n".join(chunks))
    pg_desk.create_kb("Files", keyword_only=True)
    pg_desk.add("Files", [folder])
    kb = pg_desk.kb("Files").id
    first = exact(pg_desk, kb)
    (folder / "doc00.txt").write_text("A glacier, a canyon and a summit: nothing else is here.")  # a new version
    (folder / "doc01.txt").unlink()
    report = pg_desk.add("Files", [folder], sync=True)
    assert report.updated or report.added
    second = exact(pg_desk, kb)
    assert second != first and second["chunks"] == pg_desk.kb("Files").chunk_count
    assert second["terms"]["glacier"] >= 1
    counts, _ = pg_desk.ingestor().rebuild("Files")  # every document re-chunked: chunks swapped
    assert counts["rebuilding"] == 5
    assert exact(pg_desk, kb) == second
    assert ranked(pg_desk, [kb], "glacier canyon")[0][0] == "doc00.txt"


def test_statistics_follow_an_import_that_rewrites_chunks_in_place(pg_desk):
    kb = fill(pg_desk, docs={"a.txt": ["copper lantern", "silver"]})
    docs = pg_desk.store.export_documents(kb, [d.id for d in pg_desk.store.list_documents(kb)], None)
    docs[0]["chunks"][0]["content"] = "marble summit canyon glacier"
    with pg_desk.store.write() as conn:  # the chunk ids exist: the staging table's INSERT … ON CONFLICT DO UPDATE
        pg_desk.store.bulk.stage_chunks(conn, kb, None, docs)
    stats = exact(pg_desk, kb)
    assert "marbl" in stats["terms"] and "copper" not in stats["terms"] and stats["chunks"] == 2
    pg_desk.store.import_documents(kb, docs)  # the whole document replaced by its copy
    assert exact(pg_desk, kb) == stats


def test_truncate_and_the_repair_function_keep_them_exact(pg_desk):
    kb = fill(pg_desk)
    uri = pg_desk.store.uri
    sql(uri, "UPDATE kbdesk_keyword_terms SET chunks = chunks + 5")  # damaged (e.g. writes without triggers)
    with pytest.raises(AssertionError):
        exact(pg_desk, kb)
    sql(uri, "SELECT kbdesk_keyword_rebuild()")
    exact(pg_desk, kb)
    sql(uri, "TRUNCATE kb_chunks")
    assert sql(uri, "SELECT count(*) FROM kbdesk_keyword_terms") == [(0,)]
    assert exact(pg_desk, kb)["chunks"] == 0


def test_concurrent_writers_of_one_kb_keep_the_statistics_exact(pg_desk, pg_uri):
    import threading

    fill(pg_desk, docs={"seed.txt": ["stone"]})
    kb = pg_desk.kb("Notes").id
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        desk = open_desk(pg_uri)
        try:
            for d, chunks in corpus(seed=n, docs=8).items():
                desk.add_document("Notes", f"w{n}-{d}", chunks)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            desk.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert exact(pg_desk, kb)["chunks"] == pg_desk.kb("Notes").chunk_count


# ── bounded at scale, as SQLite is ─────────────────────────────────────────────
def test_queries_with_very_common_words_rank_only_rows_with_the_rarer_ones(pg_desk, monkeypatch):
    pg_desk.create_kb("Log", keyword_only=True)
    for d in range(20):
        pg_desk.add_document("Log", f"day{d}.txt", [f"status report line {d}-{i} all nominal" for i in range(100)])
    pg_desk.add_document("Log", "incident.txt", ["status report: the turbine overheated"])
    kb = pg_desk.kb("Log").id
    conn = pg_desk.store.connection()
    assert planned(conn, [kb], "status turbine").gate == ["statu", "turbin"]  # 2001 rows x 2 terms fit the budget
    monkeypatch.setattr(keyword, "KEYWORD_POSTINGS_BUDGET", 500)
    plan = planned(conn, [kb], "status turbine")
    assert plan.gate == ["turbin"] and list(plan.weights) == ["turbin"]  # "status" is in 2001 rows > 4 x 500
    hits = pg_desk.search(["Log"], "status turbine", mode="keyword").results
    assert [h.source for h in hits] == ["incident.txt"]
    assert len(pg_desk.search(["Log"], "status", mode="keyword", limit=20).results) == 20  # alone, it still counts


def test_bounding_picks_the_same_terms_as_the_sqlite_store():
    from kbdesk.store.sqlite.lookup import SqliteLookup

    class Counts(SqliteLookup):  # the SQLite store's bounding over given document frequencies
        def __init__(self, df, rows):
            self.df, self.rows = df, rows

        def _document_frequencies(self, terms, budget):
            return (
                None
                if len(terms) <= 1 or self.rows * len(terms) <= budget
                else {t: min(self.df[t], budget * 4 + 1) for t in terms}
            )

    df = {"rare": 10, "shared": 120, "common": 3000, "filler": 900}
    for terms in (["rare", "shared", "common"], ["common", "filler"], ["shared", "rare", "filler", "common"]):
        for budget in (50, 100, 110, 1000, 10_000):
            lite_gate, lite_scored = Counts(df, 2000).bounded_terms(terms, budget)
            gate, scored = keyword.bounded(terms, df, 2000, budget)
            assert ([terms[i] for i in gate], [terms[i] for i in scored]) == (lite_gate, lite_scored)


def test_a_small_kb_beside_a_large_one_reads_its_own_rows_with_the_same_answer(pg_desk, monkeypatch):
    small = fill(pg_desk, "Small")
    pg_desk.create_kb("Large", keyword_only=True)
    for d in range(10):
        pg_desk.add_document("Large", f"l{d}.txt", [f"river stone copper {i}" for i in range(300)])
    sql(pg_desk.store.uri, "ANALYZE kb_chunks")  # the table's size, for the estimate
    conn = pg_desk.store.connection()
    assert planned(conn, [small], "river copper").by_kb  # 3,000 postings of others vs a few dozen rows
    large = pg_desk.kb("Large").id
    assert planned(conn, [large], "river copper").by_kb  # matches every row anyway: read them
    pg_desk.add_document("Large", "rare.txt", ["a glacier"])
    assert not planned(conn, [large], "glacier").by_kb  # one posting: the GIN index finds it
    for query in QUERIES:
        monkeypatch.setattr(keyword, "KB_ROWS_PER_POSTING", 0.0)  # through the GIN index
        gin = ranked(pg_desk, [small], query)
        monkeypatch.setattr(keyword, "KB_ROWS_PER_POSTING", 1e9)  # through the KB's rows
        assert ranked(pg_desk, [small], query) == gin


# ── the migration ─────────────────────────────────────────────────────────────
def test_the_migration_indexes_chunks_already_stored_and_runs_again_unchanged(empty_pg_uri):
    with psycopg.connect(empty_pg_uri, autocommit=True) as conn:
        before = [m for m in MIGRATIONS if m[0] != "keyword_stats"][:4]
        migrate(conn, before)
        kb, doc = uuid.uuid4(), uuid.uuid4()
        conn.execute("INSERT INTO knowledge_bases(id, name) VALUES (%s, 'old')", (kb,))
        conn.execute(
            "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
            "uploaded_by) VALUES (%s, %s, 'a.txt', 'text/plain', 1, 'k', %s)",
            (doc, kb, uuid.uuid4()),
        )
        conn.execute(
            "INSERT INTO kb_chunks(kb_id, document_id, chunk_index, content) VALUES "
            "(%s, %s, 0, 'An x-ray of the covid-19 lung'), (%s, %s, 1, 'lung 1.5 cm')",
            (kb, doc, kb, doc),
        )
        migrate(conn)
        stats = keyword.statistics(conn, str(kb))
        assert (
            stats["stored"]
            == stats["counted"]
            == {
                "chunks": 2,
                "tokens": 12,
                "terms": {
                    "an": 1,
                    "x": 1,
                    "rai": 1,
                    "of": 1,
                    "the": 1,
                    "covid": 1,
                    "19": 1,
                    "lung": 2,
                    "1": 1,
                    "5": 1,
                    "cm": 1,
                },
            }
        )
        with conn.transaction():
            keyword.install(conn)  # again: same columns, same triggers, same numbers
        again = keyword.statistics(conn, str(kb))
        assert again["stored"] == stats["stored"]
        triggers = conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'kb_chunks'::regclass AND tgname LIKE 'kbdesk_keyword_%'"
        ).fetchone()
        assert triggers is not None and triggers[0] == 4


def test_diacritics_fold_and_an_index_built_before_the_folding_is_rebuilt(pg_desk, monkeypatch):
    pg_desk.create_kb("Menu")
    pg_desk.add_document("Menu", "fr.txt", ["Le garçon sert un café crème."])
    found = lambda: [r.source for r in pg_desk.search(["Menu"], "garcon cafe", mode="keyword").results]  # noqa: E731
    assert found() == ["fr.txt"]
    conn = pg_desk.store.connection()
    with monkeypatch.context() as m:  # the index as it was before diacritics were folded
        m.setattr(keyword_index, "diacritic_pairs", lambda: ("", ""))
        with conn.transaction():
            keyword.install(conn)
    assert found() == []
    with conn.transaction():
        dict(MIGRATIONS)["keyword_folding"](conn)
    assert found() == ["fr.txt"]
    kb_id = pg_desk.kb("Menu").id
    assert exact(pg_desk, kb_id)["terms"]["cafe"] == 1


def planned(conn, kb_ids: list[str], text: str) -> keyword.Plan:
    """The keyword plan for ``text``, which these queries always have (terms to look up)."""
    plan = keyword.plan(conn, kb_ids, text)
    assert plan is not None, text
    return plan
