"""One document per uploaded file name on PostgreSQL: what only this engine has to get
right (writers in transactions of their own at once; an older database mended). The
rule itself runs on every engine in tests/test_one_name.py."""

from __future__ import annotations

import threading

import psycopg
import pytest

from kbdesk import open_desk
from kbdesk.store.doc_types import NAME_RULE
from pg_support import sql

INSERT = (
    "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, uploaded_by, "
    "source_path) VALUES (gen_random_uuid(), %s, 'x.md', 'text/markdown', 1, 'k', %s, %s)"
)


def test_two_writers_of_one_name_at_once_leave_one_row(pg_uri, kbdesk_home):
    desk = open_desk(pg_uri)
    kb = desk.create_kb("docs", keyword_only=True)
    user = desk.store.local_user_id
    desk.close()
    outcome: dict[str, BaseException | None] = {}

    def upload() -> None:  # a second writer, while the first has not committed
        try:
            sql(pg_uri, INSERT, kb.id, user, "upload:x.md")
            outcome["upload"] = None
        except psycopg.Error as exc:
            outcome["upload"] = exc

    with psycopg.connect(pg_uri) as first:  # `kbdesk add` of a folder: its row, not committed yet
        first.execute(INSERT, (kb.id, user, "/notes/x.md"))
        second = threading.Thread(target=upload)
        second.start()
        second.join(0.5)  # (it waits for the first writer's transaction to end)
        first.commit()
    second.join(30)
    assert isinstance(outcome["upload"], psycopg.errors.UniqueViolation)
    assert NAME_RULE in str(outcome["upload"])
    rows = sql(pg_uri, "SELECT source_path FROM kb_documents WHERE kb_id = %s", kb.id)
    assert rows == [("/notes/x.md",)]


def test_an_older_database_with_an_upload_and_a_file_of_one_name_is_mended(pg_uri, kbdesk_home):
    from kbdesk.store.postgres.schema import _m017_one_document_per_name

    desk = open_desk(pg_uri)
    desk.create_kb("docs", keyword_only=True)
    sql(pg_uri, "DROP TRIGGER kbdesk_document_name ON kb_documents")  # as an older kbdesk left it
    desk.add_document("docs", "a.md", ["older upload words"], source_path="upload:a.md")
    desk.add_document("docs", "a.md", ["newer disk words"], source_path="/n/a.md")
    sql(pg_uri, "UPDATE kb_documents SET updated_at = '2000-01-01' WHERE source_path = 'upload:a.md'")
    desk.close()
    with psycopg.connect(pg_uri, autocommit=True) as conn, conn.transaction():
        _m017_one_document_per_name(conn)
    desk = open_desk(pg_uri)
    kb = desk.kb("docs")
    assert [(d.filename, d.source_path) for d in desk.store.list_documents(kb.id)] == [("a.md", "/n/a.md")]
    assert (kb.document_count, kb.chunk_count) == (1, 1)
    assert [h.content for h in desk.search(["docs"], "words", mode="keyword").results] == ["newer disk words"]
    desk.close()
    with pytest.raises(psycopg.errors.UniqueViolation):  # and the rule is back
        sql(pg_uri, INSERT.replace("'x.md'", "'a.md'"), kb.id, desk.store.local_user_id, "upload:a.md")
