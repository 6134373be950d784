"""A document's own date — Markdown front matter ``date:`` (else ``created:``), an e-mail's
``Date:``, an Office file's created property — narrows a search with ``date: document``
on every engine; a date that does not parse leaves the document out of such a filter and
never fails its indexing."""

from __future__ import annotations

import pytest

import format_builders as fb
from ingest_support import write_files
from kbdesk.filters import Filters, document_date
from kbdesk.filters_text import format_line, parse_line

FILES = {
    "dated.md": "---\ndate: 2024-03-02\n---\nThe roadmap, dated in its front matter.\n",
    "created.md": "---\ncreated: 2024-02\n---\nThe roadmap, created in February.\n",
    "someday.md": "---\ndate: someday soon\n---\nThe roadmap with a date nobody can read.\n",
    "plain.md": "The roadmap without any date of its own.\n",
}


def test_the_documents_own_date_narrows_a_search(engine_desk, tmp_path):
    desk = engine_desk
    folder = write_files(
        tmp_path / "docs",
        {
            **FILES,
            "report.docx": fb.docx("the roadmap of the report"),  # created 2024-03-01T10:00Z
            "meeting.eml": fb.eml("the roadmap of the meeting"),  # Date: 2024-03-04 09:00Z
        },
    )
    desk.create_kb("docs")
    report = desk.add("docs", [folder])
    assert report.failed == []  # an unreadable date is no ingestion failure

    def found(**filters):
        response = desk.search(["docs"], "roadmap", mode="keyword", limit=20, filters={"date": "document", **filters})
        return sorted(r.source for r in response.results)

    assert found(since="2024-03-01", until="2024-03-02") == ["dated.md", "report.docx"]
    assert found(since="2024-03-03") == ["meeting.eml"]
    assert found(until="2024-02-29") == ["created.md"]
    assert found(since="2024-03-01T11:00") == ["dated.md", "meeting.eml"]
    assert found(since="1900-01-01") == ["created.md", "dated.md", "meeting.eml", "report.docx"]  # not someday, plain
    # the file's modified time is still the default
    assert len(desk.search(["docs"], "roadmap", mode="keyword", limit=20, filters={"since": "2024-01-01"}).results) == 6
    assert desk.document("docs", "someday.md").properties == {"date": "someday soon"}


def test_the_line_the_flags_and_the_json_form_name_the_documents_date():
    f = parse_line("since:2024-03-01 date:document")
    assert f == Filters.from_dict({"since": "2024-03-01", "date": "document"})
    assert format_line(f) == "since:2024-03-01 date:document"
    assert Filters.from_dict(f.to_dict()) == f
    assert f.describe() == "dated since 2024-03-01"


@pytest.mark.parametrize(
    ("properties", "day"),
    [
        ({"date": "2026-11-01"}, "2026-11-01T00:00:00"),
        ({"date": "2026-11-01 09:30"}, "2026-11-01T09:30:00"),
        ({"date": "2026-11-01T09:30:00+02:00"}, "2026-11-01T07:30:00"),
        ({"date": "2026-11"}, "2026-11-01T00:00:00"),
        ({"date": "2026"}, "2026-01-01T00:00:00"),
        ({"date": "Tue, 01 Dec 2026 10:00:00 +0000"}, "2026-12-01T10:00:00"),
        ({"date": "next tuesday", "created": "2025-05-05"}, "2025-05-05T00:00:00"),
        ({"date": "2026-13-01"}, None),
        ({"date": "2026-13"}, None),
        ({"created": ""}, None),
        ({"author": "Ann"}, None),
    ],
)
def test_what_counts_as_a_documents_date(properties, day):
    from datetime import UTC, datetime

    found = document_date(properties)
    assert (None if found is None else datetime.fromtimestamp(found, UTC).replace(tzinfo=None).isoformat()) == day


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_documents_indexed_before_get_their_date_from_the_properties_they_keep(engine, request, tmp_path):
    import sqlite3

    from kbdesk import open_desk

    target = str(tmp_path / "kb.db") if engine == "sqlite" else request.getfixturevalue("pg_uri")
    with open_desk(target) as desk:
        desk.create_kb("notes")
        for name, props in (("dated.md", {"date": "2024-03-02"}), ("odd.md", {"date": "soon"}), ("none.md", {})):
            desk.add_document("notes", name, ["The roadmap."], properties=props)
    if engine == "sqlite":  # as a kbdesk before this schema step left the file
        conn = sqlite3.connect(target)
        conn.execute(  # (and the steps after it: a database is at the last step it recorded)
            "DELETE FROM schema_migrations WHERE version >= "
            "(SELECT version FROM schema_migrations WHERE name = 'document_dates')"
        )
        conn.execute("DROP INDEX idx_kbdoc_facts")
        conn.execute("ALTER TABLE kb_documents DROP COLUMN doc_date")
        conn.commit()
        conn.close()
    else:
        from pg_support import sql

        sql(target, "UPDATE kb_documents SET doc_date = NULL")
        sql(  # (and the steps after it: a database is at the last step it recorded)
            target,
            "DELETE FROM kbdesk_migrations WHERE version >= "
            "(SELECT version FROM kbdesk_migrations WHERE name = 'document_dates')",
        )
    with open_desk(target) as desk:
        response = desk.search(["notes"], "roadmap", filters="date:document since:2024-03-01")
        assert [r.source for r in response.results] == ["dated.md"]
