"""Ingestion integrity on PostgreSQL + pgvector: the same scenarios as on SQLite
(tests/integrity_scenarios.py), plus what only a server has to get right."""

import pytest

import integrity_scenarios as s
from kbdesk import open_desk
from pg_support import sql


@pytest.fixture
def open_db(pg_uri, kbdesk_home):
    return lambda: open_desk(pg_uri)


def test_two_threads_add_the_same_folder(open_db, tmp_path):
    s.two_threads_add_the_same_folder(open_db, tmp_path)


def test_a_failing_new_version_keeps_the_old_text_marked_stale(open_db, tmp_path):
    s.a_failing_new_version_keeps_the_old_text_marked_stale(open_db, tmp_path)


def test_a_killed_update_chain_ends_with_the_newest_version(open_db, tmp_path):
    s.a_killed_update_chain_ends_with_the_newest_version(open_db, tmp_path)


def test_a_superseded_runner_cannot_write(open_db, tmp_path):
    s.a_superseded_runner_cannot_write(open_db, tmp_path)


def test_copies_are_their_own_documents(open_db, tmp_path, fake_openai):
    s.copies_are_their_own_documents(open_db, tmp_path, fake_openai)


def test_failures_are_remembered_until_the_file_changes(open_db, tmp_path):
    s.failures_are_remembered_until_the_file_changes(open_db, tmp_path)


def test_provider_failures_are_retried(open_db, tmp_path, fake_openai):
    s.provider_failures_are_retried(open_db, tmp_path, fake_openai)


def test_odd_file_names_fail_or_pass_alone(open_db, tmp_path):
    s.odd_file_names_fail_or_pass_alone(open_db, tmp_path)


def test_the_database_refuses_a_second_row_for_a_path(open_db, pg_uri, tmp_path):
    folder = s.write_files(tmp_path / "c", {"a.txt": "alpha"})
    desk = s.keyword_kb(open_db)
    desk.add("docs", [folder])
    import psycopg

    with pytest.raises(psycopg.errors.UniqueViolation):
        sql(pg_uri, "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
                    "uploaded_by, source_path) SELECT gen_random_uuid(), kb_id, filename, content_type, size_bytes, "
                    "storage_key, uploaded_by, source_path FROM kb_documents")
    desk.close()


def test_staged_vectors_are_forgotten_after_a_week(open_db, pg_uri, tmp_path):
    folder = s.write_files(tmp_path / "c", {"a.txt": "alpha"})
    desk = s.keyword_kb(open_db)
    desk.store.put_cached_vectors("staged:m", [("old", [1.0, 0.0]), ("new", [0.0, 1.0])])
    desk.store.put_cached_vectors("m", [("kept", [1.0, 1.0])])
    sql(pg_uri, "UPDATE kbdesk_embedding_cache SET created_at = '2020-01-01' WHERE text_hash IN ('old', 'kept')")
    desk.add("docs", [folder])
    assert sorted(r[0] for r in sql(pg_uri, "SELECT text_hash FROM kbdesk_embedding_cache")) == ["kept", "new"]
    desk.close()
