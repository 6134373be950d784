"""Many rows in one statement step (kbdesk.store.sqlite_rows): the rows read back exactly
as ``executemany`` would have written them, and what cannot go as JSON is refused."""

from __future__ import annotations

import pytest

from kbdesk.store import sqlite_rows
from kbdesk.store.driver import choose_driver

TEXTS = ["plain", "quotes ' and \" and \\ backslash", "line\nbreaks\tand tabs", "ünïcödé — 中文 🙂",
         "\u2028 separators \u2029", "", "{\"looks\": [\"like json\"]}", "?", "a" * 5000]


@pytest.fixture
def conn():
    driver = choose_driver()
    c = driver.module.connect(":memory:", isolation_level=None)
    if sqlite_rows.supported(driver.sqlite_version) < 2:
        pytest.fail(f"kbdesk's SQLite {driver.sqlite_version} is older than 3.41")  # the project pins one that is not
    for name in ("a", "b"):
        c.execute(f"CREATE TABLE {name}(id TEXT PRIMARY KEY, n INTEGER, t TEXT, flag INTEGER, blob BLOB, "
                  "version INTEGER NOT NULL DEFAULT 1)")
    yield c
    c.close()


def rows():
    out = []
    for i in range(60):
        out.append((f"id{i}", [0, -1, 2**63 - 1, -2**63, i][i % 5], TEXTS[i % len(TEXTS)], i % 2 == 0,
                    None if i % 3 == 0 else bytes(range(i % 256)) * 3))
    return out


def statements(conn, work):
    seen = []
    conn.set_trace_callback(seen.append)
    try:
        work()
    finally:
        conn.set_trace_callback(None)
    return seen


def test_rows_read_back_as_executemany_wrote_them_in_one_statement(conn):
    sql = "INSERT INTO {}(id, n, t, flag, blob) VALUES (?, ?, ?, ?, ?)"
    conn.executemany(sql.format("a"), rows())
    ran = statements(conn, lambda: sqlite_rows.run_many(conn, sql.format("b"), rows()))
    assert len(ran) == 1 and "json_each" in ran[0]
    a = conn.execute("SELECT id, n, typeof(n), t, flag, blob, typeof(blob) FROM a ORDER BY id").fetchall()
    b = conn.execute("SELECT id, n, typeof(n), t, flag, blob, typeof(blob) FROM b ORDER BY id").fetchall()
    assert a == b and len(a) == 60


def test_an_upsert_keeps_the_same_first_row(conn):
    sql = "INSERT INTO {}(id, t) VALUES (?, ?) ON CONFLICT (id) DO NOTHING"
    data = [(f"k{i % 5}", f"value {i}") for i in range(20)]
    conn.executemany(sql.format("a"), data)
    assert sqlite_rows.run_many(conn, sql.format("b"), data)
    assert conn.execute("SELECT id, t FROM a ORDER BY id").fetchall() == \
        conn.execute("SELECT id, t FROM b ORDER BY id").fetchall() == [(f"k{i}", f"value {i}") for i in range(5)]


def test_updates_by_id_match_executemany_and_respect_the_version(conn):
    for name in ("a", "b"):
        conn.executemany(f"INSERT INTO {name}(id, n, version) VALUES (?, ?, ?)", [(f"d{i}", i, 1 + i % 2)
                                                                              for i in range(30)])
    sql = "UPDATE {} SET t = ?, n = n + ?, version = version + 1 WHERE id = ? AND version = ?"
    data = [(f"text {i}", 100, f"d{i}", 1) for i in range(30)]  # odd rows are at version 2: untouched
    conn.executemany(sql.format("a"), data)
    ran = statements(conn, lambda: sqlite_rows.run_many(conn, sql.format("b"), data))
    assert len(ran) == 1
    a = conn.execute("SELECT id, n, t, version FROM a ORDER BY id").fetchall()
    assert a == conn.execute("SELECT id, n, t, version FROM b ORDER BY id").fetchall()
    assert sum(1 for r in a if r[2] is not None) == 15


def test_what_json_cannot_carry_exactly_is_left_to_executemany(conn):
    sql = "INSERT INTO b(id, t) VALUES (?, ?)"
    base = [(f"x{i}", "text") for i in range(10)]
    assert not sqlite_rows.run_many(conn, sql, base + [("f", 0.1)])  # floats: not sent as JSON text
    assert not sqlite_rows.run_many(conn, sql, base + [("nul", "a\x00b")])
    assert not sqlite_rows.run_many(conn, sql, base + [("big", 2**64)])
    assert not sqlite_rows.run_many(conn, sql, base[:3])  # few rows
    assert not sqlite_rows.run_many(conn, "INSERT INTO b(id, t) VALUES (?, '?')", [(f"y{i}",) for i in range(10)])
    upd = "UPDATE b SET t = ? WHERE id = ?"
    assert not sqlite_rows.run_many(conn, upd, [("v", "same")] * 10)  # one id twice: order would matter
    assert not sqlite_rows.run_many(conn, "UPDATE b SET t = ? WHERE t = ?", [(str(i), "z") for i in range(10)])
    assert not sqlite_rows.run_many(conn, sql, base, level=0)
    assert not sqlite_rows.run_many(conn, "INSERT INTO b(id, blob) VALUES (?, ?)",
                                    [(f"b{i}", b"\x01") for i in range(10)], level=1)
    assert conn.execute("SELECT count(*) FROM b").fetchone()[0] == 0


def test_a_large_call_is_cut_into_several_statements(conn, monkeypatch):
    monkeypatch.setattr(sqlite_rows, "MAX_PAYLOAD", 2000)
    data = [(f"r{i}", "x" * 300) for i in range(40)]
    ran = statements(conn, lambda: sqlite_rows.run_many(conn, "INSERT INTO b(id, t) VALUES (?, ?)", data))
    assert 5 < len(ran) < 40
    assert conn.execute("SELECT count(*), sum(length(t)) FROM b").fetchone() == (40, 12000)


def test_the_store_writes_a_round_of_chunks_in_a_few_statements(tmp_path):
    from kbdesk import open_desk

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(40):
        (folder / f"n{i:02d}.md").write_text(f"# Note {i}\n\n" + "tides and harbours. " * 150)
    with open_desk(home=tmp_path / "home") as desk:
        desk.create_kb("notes")
        seen: list[str] = []
        plain = desk.store.connection

        def traced():
            c = plain()
            c.set_trace_callback(seen.append)
            return c

        desk.store.connection = traced  # type: ignore[method-assign]
        report = desk.add("notes", [folder], workers=1)
        desk.store.connection = plain  # type: ignore[method-assign]
        assert len(report.added) == 40 and not report.failed
        chunk_inserts = [s for s in seen if s.startswith("INSERT INTO kb_chunks(")]
        kb = desk.kb("notes")
        assert kb.chunk_count > 100 and 1 <= len(chunk_inserts) <= 5
        hits = desk.search(["notes"], "harbours", mode="keyword")
        assert hits.results and hits.results[0].metadata["score_kind"] == "keyword coverage"
