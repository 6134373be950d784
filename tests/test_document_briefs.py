"""A KB's documents as a list shows them (``Desk.document_briefs``, what the TUI's KB screen
reads): each document's name, source, size, chunks, status and the error of a failed one,
the same as the whole documents say, on every engine — and on SQLite read without walking
past the documents' stored text."""

from __future__ import annotations

from pathlib import Path


def corpus(folder: Path) -> Path:
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha words about ferries")
    (folder / "sub" / "b.md").write_text("# Beta\n\nwords about piers")
    (folder / "broken.pdf").write_bytes(b"this is not a PDF at all")
    return folder


def test_briefs_say_what_the_documents_say(engine_desk, tmp_path):
    desk = engine_desk
    desk.create_kb("docs", keyword_only=True)
    desk.add("docs", [corpus(tmp_path / "corpus")])
    docs = {doc.id: doc for doc in desk.documents("docs")}
    briefs = {brief.id: brief for brief in desk.document_briefs("docs")}
    assert len(docs) == 3 and briefs.keys() == docs.keys()
    for doc_id, doc in docs.items():
        brief = briefs[doc_id]
        assert (brief.filename, brief.source_path, brief.size_bytes, brief.chunk_count, brief.status) == (
            doc.filename,
            doc.source_path,
            doc.size_bytes,
            doc.chunk_count,
            doc.status,
        )
        assert brief.error == doc.error
    failed = [brief for brief in briefs.values() if brief.status == "error"]
    assert [brief.filename for brief in failed] == ["broken.pdf"] and failed[0].error
    assert all(brief.error is None for brief in briefs.values() if brief.status == "ready")
    assert desk.document_briefs(desk.create_kb("empty", keyword_only=True).name) == []


def test_sqlite_lists_documents_from_an_index_not_their_rows(desk, tmp_path):
    """The columns a list shows sit after a document's extracted text in its row; a large
    text spills over many pages, which a read of the row walks. The list's read is answered
    by an index holding those columns (each statement it runs, as SQLite plans it)."""
    desk.create_kb("docs", keyword_only=True)
    desk.add("docs", [corpus(tmp_path / "corpus")])
    conn = desk.store.connection()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        desk.document_briefs("docs")
    finally:
        conn.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT") and "kb_documents" in s]
    listing = [s for s in reads if "size_bytes" in s]
    assert len(listing) == 1
    plan = " ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + listing[0]))
    assert "COVERING INDEX idx_kbdoc_rows" in plan, plan
