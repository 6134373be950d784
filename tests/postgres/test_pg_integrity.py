"""Ingestion integrity on PostgreSQL + pgvector: what only this engine has to get right
(the shared scenarios run on both engines from tests/test_integrity.py)."""

import pytest

import integrity_scenarios as s
from kbdesk import open_desk
from pg_support import sql


@pytest.fixture
def open_db(pg_uri, kbdesk_home):
    return lambda: open_desk(pg_uri)


def test_the_database_refuses_a_second_row_for_a_path(open_db, pg_uri, tmp_path):
    folder = s.write_files(tmp_path / "c", {"a.txt": "alpha"})
    desk = s.keyword_kb(open_db)
    desk.add("docs", [folder])
    import psycopg

    with pytest.raises(psycopg.errors.UniqueViolation):
        sql(
            pg_uri,
            "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
            "uploaded_by, source_path) SELECT gen_random_uuid(), kb_id, filename, content_type, size_bytes, "
            "storage_key, uploaded_by, source_path FROM kb_documents",
        )
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


def test_a_database_with_two_rows_for_a_path_is_mended(open_db, pg_uri, tmp_path):
    """As an older kbdesk could leave a team server: two rows for one path (the newest
    ready one stays, with its chunks; the stats follow)."""
    import psycopg

    from kbdesk.store.postgres.schema import _m004_one_document_per_path

    desk = s.keyword_kb(open_db)
    first = desk.add_document("docs", "a.txt", ["old words"], source_path="/x/a.txt")
    desk.close()
    sql(pg_uri, "DROP INDEX idx_kbdoc_source_path")
    sql(
        pg_uri,
        "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, status, "
        "uploaded_by, source_path, created_at) SELECT '00000000-0000-4000-8000-000000000002', kb_id, filename, "
        "content_type, size_bytes, storage_key, 'ready', uploaded_by, source_path, now() + interval '1 day' "
        "FROM kb_documents WHERE id = %s",
        first.id,
    )
    sql(
        pg_uri,
        "INSERT INTO kb_chunks(id, kb_id, document_id, chunk_index, content, token_count) SELECT "
        "gen_random_uuid(), kb_id, '00000000-0000-4000-8000-000000000002', 0, 'newer words', 2 "
        "FROM kb_documents WHERE id = %s",
        first.id,
    )
    with psycopg.connect(pg_uri, autocommit=True) as conn, conn.transaction():
        _m004_one_document_per_path(conn)
    desk = open_db()
    docs = desk.store.list_documents(desk.kb("docs").id)
    assert [d.id for d in docs] == ["00000000-0000-4000-8000-000000000002"]
    assert desk.kb("docs").document_count == 1 and desk.kb("docs").chunk_count == 1
    assert [h.content for h in desk.search(["docs"], "words", mode="keyword").results] == ["newer words"]
    with pytest.raises(psycopg.errors.UniqueViolation):  # and the index is back
        sql(
            pg_uri,
            "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
            "uploaded_by, source_path) SELECT gen_random_uuid(), kb_id, filename, content_type, size_bytes, "
            "storage_key, uploaded_by, source_path FROM kb_documents",
        )
    desk.close()
