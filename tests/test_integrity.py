"""Ingestion integrity: one current document per file, whatever runs at once, is killed
or fails halfway — every scenario of tests/integrity_scenarios.py on SQLite and on
PostgreSQL (what only one engine has to get right is in its own tests)."""

import pytest

import integrity_scenarios as s
from kbdesk import open_desk


@pytest.fixture
def open_db(tmp_path):
    return lambda: open_desk(tmp_path / "kb.db")


@pytest.fixture(params=["sqlite", "postgres"])
def engine_db(request, tmp_path, kbdesk_home):
    if request.param == "postgres":
        uri = request.getfixturevalue("pg_uri")
        return lambda: open_desk(uri)
    return lambda: open_desk(tmp_path / "kb.db")


@pytest.mark.parametrize("scenario", s.SCENARIOS, ids=lambda f: f.__name__)
def test_integrity(scenario, engine_db, tmp_path, fake_openai):
    scenario(engine_db, tmp_path, fake_openai)


def test_staged_vectors_are_forgotten_after_a_week(open_db, tmp_path):
    folder = s.write_files(tmp_path / "c", {"a.txt": "alpha"})
    desk = s.keyword_kb(open_db)
    desk.store.put_cached_vectors("staged:m", [("old", [1.0, 0.0]), ("new", [0.0, 1.0])])
    desk.store.put_cached_vectors("m", [("kept", [1.0, 1.0])])  # a re-embed's staging: not ours
    with desk.store.write() as conn:
        conn.execute(
            "UPDATE embedding_cache SET created_at = '2020-01-01T00:00:00.000Z' WHERE text_hash IN ('old', 'kept')"
        )
    desk.add("docs", [folder])
    left = sorted(r[0] for r in desk.store.connection().execute("SELECT text_hash FROM embedding_cache"))
    assert left == ["kept", "new"]
    desk.close()
