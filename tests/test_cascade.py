"""Deleting a KB or a document leaves no orphan anywhere, on every engine: rows, keyword
rows, vectors and their index, stored files."""

from engine_checks import (
    add_channel,
    assert_sound,
    build_vector_index,
    count,
    has_index_objects,
    row_counts,
    vector_index_objects,
)
from helpers import axis


def fill(desk, name, dims=8):
    desk.create_kb(name, model_id="m", dimensions=dims)
    return [
        desk.add_document(
            name,
            f"{name}-{d}.txt",
            [f"{name} document {d} chunk {i} about lighthouses" for i in range(4)],
            vectors=[axis((d + i) % dims) for i in range(4)],
        )
        for d in range(3)
    ]


def test_deleting_a_kb_leaves_no_orphan_row(engine_desk):
    desk = engine_desk
    fill(desk, "keep")
    build_vector_index(desk, "keep", 8)
    before, indexes_before = row_counts(desk), vector_index_objects(desk)
    fill(desk, "doomed")
    kb = desk.kb("doomed")
    add_channel(desk, kb.id)
    build_vector_index(desk, "doomed", 8)  # an index exists and must go with the KB
    assert len(vector_index_objects(desk) - indexes_before) == int(has_index_objects(desk))
    stored = desk.files_dir / "kb" / kb.id
    stored.mkdir(parents=True)
    (stored / "x_file.txt").write_text("original bytes")

    desk.delete_kb("doomed")

    after = row_counts(desk)
    audit = next(t for t in after if t.endswith("audit_log"))
    assert after.pop(audit) - before.pop(audit) == 1 + 3 + 1  # create, 3 uploads, delete
    after.pop("channels"), before.pop("channels")
    # every other table is back to exactly what it held before "doomed" existed
    assert after == {k: v for k, v in before.items() if k in after}
    assert vector_index_objects(desk) == indexes_before
    assert_sound(desk)
    assert not stored.exists()
    # and the survivor still answers both ways
    assert desk.search(["keep"], "lighthouses", mode="keyword").results
    assert desk.search(["keep"], "x", query_vector=axis(0), mode="vector").results


def test_deleting_a_document_removes_its_chunks_keywords_and_vectors(engine_desk):
    desk = engine_desk
    docs = fill(desk, "kb")
    build_vector_index(desk, "kb", 8)
    gone = docs[0]
    desk.delete_document(gone.id)
    assert count(desk, "kb_chunks") == 8
    hits = desk.search(["kb"], "document 0", mode="keyword", limit=20).results
    assert hits and all(h.source != gone.filename for h in hits)
    vec_hits = desk.search(["kb"], "x", query_vector=axis(0), mode="vector", limit=20, threshold=-1).results
    assert len(vec_hits) == 8 and all(h.source != gone.filename for h in vec_hits)
    assert desk.kb("kb").chunk_count == 8 and desk.kb("kb").document_count == 2
    assert_sound(desk)
