"""sqlite-vec and numpy give the same answers, and a file moves safely between them."""

import numpy as np
import pytest

from helpers import sqlite_store
from kbdesk import open_desk
from kbdesk.store.sqlite.vectors import vec_table


def build(db, backend, n=600, dims=48, seed=7):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dims)).astype(np.float32)
    with open_desk(db, backend=backend) as desk:
        desk.create_kb("rand", model_id="m", dimensions=dims)
        for start in range(0, n, 100):
            desk.add_document(
                "rand",
                f"part{start}.txt",
                [f"chunk {i}" for i in range(start, start + 100)],
                vectors=vectors[start : start + 100],
            )
    return vectors


def ranked(db, backend, queries, limit=20, threshold=-1.0, matrix_files=True):
    with open_desk(db, backend=backend) as desk:
        assert desk.store.driver.backend == backend
        sqlite_store(desk).vectors.matrices.enabled = matrix_files
        return [
            [
                (r.content, r.similarity)
                for r in desk.search(
                    ["rand"], "", query_vector=q, mode="vector", limit=limit, threshold=threshold
                ).results
            ]
            for q in queries
        ]


def test_both_backends_return_the_same_ids_in_the_same_order(tmp_path):
    db = tmp_path / "parity.db"
    vectors = build(db, "sqlite-vec")
    rng = np.random.default_rng(1)
    queries = list(rng.standard_normal((25, vectors.shape[1])))
    vec = ranked(db, "sqlite-vec", queries, matrix_files=False)  # vec0
    npy = ranked(db, "numpy", queries, matrix_files=False)  # in memory
    mapped = ranked(db, "sqlite-vec", queries)  # the matrix file
    assert [[c for c, _ in r] for r in vec] == [[c for c, _ in r] for r in npy] == [[c for c, _ in r] for r in mapped]
    for a, b, c in zip(vec, npy, mapped, strict=True):
        assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
        assert np.allclose([s for _, s in c], [s for _, s in b], atol=1e-6)
    # and both agree with exact cosine computed independently
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for q, got in zip(queries, npy, strict=True):
        sims = unit @ (q / np.linalg.norm(q))
        expected = [f"chunk {i}" for i in np.argsort(-sims)[:20]]
        assert [c for c, _ in got] == expected


def test_threshold_keeps_only_close_vectors_in_both_backends(tmp_path):
    db = tmp_path / "thr.db"
    vectors = build(db, "numpy", n=200, dims=16)
    q = vectors[3]
    for backend in ("sqlite-vec", "numpy"):
        got = ranked(db, backend, [q], limit=20, threshold=0.3)[0]
        assert got[0][0] == "chunk 3" and got[0][1] == pytest.approx(1.0, abs=1e-5)
        assert all(s >= 0.3 for _, s in got)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    above = int(((unit @ (q / np.linalg.norm(q))) >= 0.3).sum())
    assert len(got) == min(above, 20)


def test_writes_under_numpy_reach_a_sqlite_vec_index_built_earlier(tmp_path):
    db = tmp_path / "mixed.db"
    dims = 16
    build(db, "sqlite-vec", n=100, dims=dims)
    target = np.zeros(dims)
    target[5] = 1.0
    # without matrix files sqlite-vec answers from its vec0 table, which it builds now
    ranked(db, "sqlite-vec", [target], matrix_files=False)
    with open_desk(db, backend="numpy") as desk:  # a session that cannot touch the index
        desk.add_document("rand", "late.txt", ["the late arrival"], vectors=[target])
        doomed = next(d for d in desk.store.list_documents(desk.kb("rand").id) if d.filename == "part0.txt")
        desk.delete_document(doomed.id)
    # part0.txt held all 100 earlier chunks: only the late arrival is left
    for matrix_files in (False, True):
        top = ranked(db, "sqlite-vec", [target], limit=20, matrix_files=matrix_files)[0]
        assert top == [("the late arrival", pytest.approx(1.0, abs=1e-5))]
    with open_desk(db, backend="sqlite-vec") as desk:
        kb = desk.kb("rand")
        conn = desk.store.connection()
        rows = conn.execute(f"SELECT count(*) FROM {vec_table(kb.id)}").fetchone()[0]
        assert rows == conn.execute("SELECT count(*) FROM kb_chunks WHERE kb_id = ?", (kb.id,)).fetchone()[0] == 1


def test_numpy_sees_new_vectors_without_reopening(desk):
    desk.create_kb("live", model_id="m", dimensions=4)
    desk.add_document("live", "a.txt", ["first"], vectors=[[1, 0, 0, 0]])
    assert desk.search(["live"], "", query_vector=[0, 1, 0, 0], mode="vector").results == []
    desk.add_document("live", "b.txt", ["second"], vectors=[[0, 1, 0, 0]])
    assert [r.content for r in desk.search(["live"], "", query_vector=[0, 1, 0, 0], mode="vector").results] == [
        "second"
    ]
