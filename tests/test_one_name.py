"""One document per file name in a KB where one came by upload, kept by the database on
every engine (not by a snapshot the ingestion read before it wrote)."""

from __future__ import annotations

import pytest

from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.errors import NameTakenError
from kbdesk.store.claims import new_claim
from kbdesk.store.doc_types import NewDocument
from kbdesk.store.sqlite.migrations import MIGRATIONS


def _spec(kb_id: str, name: str, source: str) -> NewDocument:
    return NewDocument(kb_id, name, content_type="text/markdown", size_bytes=5, source_path=source)


def _sources(desk, kb_id: str) -> list[tuple[str, str]]:
    return sorted((d.filename, d.source_path) for d in desk.store.list_documents(kb_id))


def test_the_database_refuses_a_second_document_of_an_uploaded_name(engine_desk):
    desk = engine_desk
    kb = desk.create_kb("docs", keyword_only=True)
    store = desk.store
    [uploaded] = store.take_versions([_spec(kb.id, "guide.md", "upload:guide.md")], new_claim())
    assert uploaded is not None
    with pytest.raises(NameTakenError, match=r"'guide\.md'"):  # a file from disk of that name, written blind
        store.take_versions([_spec(kb.id, "guide.md", "/home/me/notes/guide.md")], new_claim())
    # two files of one name from different folders stay two documents (no upload among them)
    store.take_versions(
        [_spec(kb.id, "readme.md", "/a/readme.md"), _spec(kb.id, "readme.md", "/b/readme.md")], new_claim()
    )
    with pytest.raises(NameTakenError):  # and an upload of that name is refused beside them
        store.take_versions([_spec(kb.id, "readme.md", "upload:readme.md")], new_claim())
    with pytest.raises(NameTakenError):  # renaming a row onto an uploaded name is refused too
        store.take_versions(
            [NewDocument(kb.id, "guide.md", source_path="/a/readme.md", expected_version=1, size_bytes=5)],
            new_claim(),
        )
    assert _sources(desk, kb.id) == [
        ("guide.md", "upload:guide.md"),
        ("readme.md", "/a/readme.md"),
        ("readme.md", "/b/readme.md"),
    ]
    assert desk.kb("docs").document_count == 3
    # a second KB has names of its own
    other = desk.create_kb("other", keyword_only=True)
    assert store.take_versions([_spec(other.id, "guide.md", "/x/guide.md")], new_claim())[0] is not None


def test_a_file_from_disk_written_after_an_upload_of_its_name_becomes_its_new_version(engine_desk, tmp_path):
    """``kbdesk add`` read its snapshot before the upload's row existed: its insert is
    refused, it reads the rows again and takes the upload's document over."""
    desk = engine_desk
    kb = desk.create_kb("docs", keyword_only=True)
    folder = write_files(tmp_path / "notes", {"guide.md": "# Guide\n\nFrom disk: the heron wades.\n"})
    real = desk.store.documents_by_source
    calls = []

    def stale(kb_id):  # the first read misses the upload made just after it
        calls.append(kb_id)
        rows = real(kb_id)
        if len(calls) == 1:  # an upload's run records its row (and lets it go: nobody waits on it)
            claim = new_claim()
            desk.store.take_versions([_spec(kb.id, "guide.md", "upload:guide.md")], claim)
            desk.store.release_claims(claim)
        return rows

    desk.store.documents_by_source = stale
    report = desk.add("docs", [folder])
    assert len(calls) >= 2  # read again after the refusal
    docs = desk.store.list_documents(kb.id)
    assert [(d.filename, d.source_path) for d in docs] == [("guide.md", "upload:guide.md")]
    assert report.failed == []


def test_an_older_file_with_an_upload_and_a_file_of_one_name_is_mended(tmp_path, kbdesk_home):
    db = tmp_path / "old.db"
    step = next(i for i, (name, _) in enumerate(MIGRATIONS, start=1) if name == "one_document_per_name")
    with open_desk(db) as desk:
        # as a kbdesk before this step left it: no rule, an upload and files of one name
        conn = desk.store.connection()
        conn.execute("DROP TRIGGER kb_documents_name_bi")
        conn.execute("DROP TRIGGER kb_documents_name_bu")
        conn.execute("DELETE FROM schema_migrations WHERE version >= ?", (step,))
        docs = desk.create_kb("docs", keyword_only=True).id
        folders = desk.create_kb("folders", keyword_only=True).id
        desk.add_document("docs", "a.md", ["older upload words"], source_path="upload:a.md")
        desk.add_document("docs", "a.md", ["newer disk words"], source_path="/n/a.md")
        desk.add_document("folders", "b.md", ["first folder words"], source_path="/one/b.md")
        desk.add_document("folders", "b.md", ["second folder words"], source_path="/two/b.md")
        desk.add_document("folders", "b.md", ["newest upload of b"], source_path="upload:b.md")
        old = "UPDATE kb_documents SET updated_at = '2000-01-01T00:00:00.000Z' WHERE "
        conn.execute(old + "source_path = 'upload:a.md'")
        conn.execute(old + "filename = 'b.md' AND source_path != 'upload:b.md'")
    with open_desk(db) as desk:
        assert desk.store.schema_version() == len(MIGRATIONS)
        assert _sources(desk, docs) == [("a.md", "/n/a.md")]  # the newest ready row stays
        assert _sources(desk, folders) == [("b.md", "upload:b.md")]  # here the upload is the newest
        assert desk.kb("docs").document_count == 1 and desk.kb("docs").chunk_count == 1
        assert desk.kb("folders").document_count == 1 and desk.kb("folders").chunk_count == 1
        hits = desk.search(["docs"], "words", mode="keyword").results
        assert [h.content for h in hits] == ["newer disk words"]
        with pytest.raises(NameTakenError):  # and the rule holds again
            desk.store.take_versions([_spec(docs, "a.md", "upload:a.md")], new_claim())
