"""Deleting a KB or a document leaves no orphan anywhere: rows, FTS, vectors, files."""

from helpers import axis, table_counts


def fill(desk, name, dims=8):
    desk.create_kb(name, model_id="m", dimensions=dims)
    docs = []
    for d in range(3):
        chunks = [f"{name} document {d} chunk {i} about lighthouses" for i in range(4)]
        docs.append(desk.add_document(name, f"{name}-{d}.txt", chunks,
                                      vectors=[axis((d + i) % dims) for i in range(4)]))
    return docs


def fts_rows(conn) -> int:
    return conn.execute("SELECT count(*) FROM kb_chunks_fts_docsize").fetchone()[0]


def test_deleting_a_kb_leaves_no_orphan_row(desk):
    fill(desk, "keep")
    before = table_counts(desk.store.connection())
    fill(desk, "doomed")
    kb = desk.kb("doomed")
    with desk.store.write() as conn:
        conn.execute("INSERT INTO channels(id, title) VALUES ('ch1', 'chat')")
        conn.execute("INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES ('ch1', ?)", (kb.id,))
    stored = desk.files_dir / "kb" / kb.id
    stored.mkdir(parents=True)
    (stored / "x_file.txt").write_text("original bytes")
    # search once so sqlite-vec builds the KB's vec0 table
    assert desk.search(["doomed"], "lighthouses", query_vector=axis(0)).results

    desk.delete_kb("doomed")

    conn = desk.store.connection()
    after = table_counts(conn)
    audit_growth = after.pop("audit_log") - before.pop("audit_log")
    assert audit_growth == 1 + 3 + 1  # create, 3 uploads, delete
    for name in ("channels",):
        after.pop(name), before.pop(name)
    # every other table is back to exactly what it held before "doomed" existed
    vec_tables = {k for k in after if k.startswith("vec_kb_")} - {k for k in before if k.startswith("vec_kb_")}
    assert not vec_tables, f"vector tables left behind: {vec_tables}"
    assert after == {k: v for k, v in before.items() if k in after}
    assert fts_rows(conn) == 12
    conn.execute("INSERT INTO kb_chunks_fts(kb_chunks_fts) VALUES ('integrity-check')")
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert not stored.exists()
    # and the survivor still answers both ways
    assert desk.search(["keep"], "lighthouses", mode="keyword").results
    assert desk.search(["keep"], "x", query_vector=axis(0), mode="vector").results


def test_deleting_a_document_removes_its_chunks_keywords_and_vectors(desk):
    docs = fill(desk, "kb")
    desk.search(["kb"], "x", query_vector=axis(0), mode="vector")  # build the index first
    gone = docs[0]
    desk.delete_document(gone.id)
    conn = desk.store.connection()
    assert conn.execute("SELECT count(*) FROM kb_chunks WHERE document_id = ?", (gone.id,)).fetchone()[0] == 0
    assert fts_rows(conn) == 8
    hits = desk.search(["kb"], "document 0", mode="keyword", limit=20).results
    assert hits and all(h.source != gone.filename for h in hits)
    vec_hits = desk.search(["kb"], "x", query_vector=axis(0), mode="vector", limit=20, threshold=-1).results
    assert len(vec_hits) == 8 and all(h.source != gone.filename for h in vec_hits)
    conn.execute("INSERT INTO kb_chunks_fts(kb_chunks_fts) VALUES ('integrity-check')")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
