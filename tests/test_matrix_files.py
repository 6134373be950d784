"""Exact vector search through memory-mapped matrix files: a file that does not match the
database (stale, foreign, truncated, damaged) is never read, writes show up at once,
read-only databases still search, and deleting a KB deletes its file."""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
import pytest

from helpers import sqlite_store
from kbdesk import open_desk
from kbdesk.config import load_config
from kbdesk.desk import Desk
from kbdesk.paths import get_paths
from kbdesk.store import choose_driver
from kbdesk.store.sqlite import SqliteStore
from kbdesk.store.sqlite.matrix_file import HEADER_SIZE, STALE_TMP_S, TMP_PREFIX, file_for, folder_for

DIMS = 24


def unit_rows(n, seed):
    x = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def make(db, n=300, backend="sqlite-vec", seed=1, name="kb"):
    vectors = unit_rows(n, seed)
    with open_desk(db, backend=backend) as desk:
        desk.create_kb(name, model_id="m", dimensions=DIMS)
        for start in range(0, n, 100):
            desk.add_document(
                name,
                f"part{start}.txt",
                [f"chunk {i}" for i in range(start, start + 100)],
                vectors=vectors[start : start + 100],
            )
    return vectors


def expected(vectors, q, limit):
    sims = vectors @ (q / np.linalg.norm(q))
    return [f"chunk {i}" for i in np.argsort(-sims)[:limit]]


def found(desk, q, limit=10, name="kb"):
    return [
        r.content for r in desk.search([name], "", query_vector=q, mode="vector", limit=limit, threshold=-1.0).results
    ]


def matrix_path(desk, name="kb"):
    return file_for(folder_for(desk.store.path), desk.kb(name).id)


@pytest.mark.parametrize("backend", ["sqlite-vec", "numpy"])
def test_search_writes_and_reads_the_kbs_file_and_ranks_exactly(tmp_path, backend):
    db = tmp_path / "m.db"
    vectors = make(db, backend=backend)
    qs = unit_rows(5, 9)
    with open_desk(db, backend=backend) as desk:
        for q in qs:
            assert found(desk, q) == expected(vectors, q, 10)
        path = matrix_path(desk)
        assert path.is_file() and path.stat().st_size == HEADER_SIZE + 300 * DIMS * 4 + 300 * 8
        matrix = sqlite_store(desk).vectors.matrices.cached(desk.kb("kb").id)
        assert matrix is not None and matrix.path == path
        assert "matrix files" in sqlite_store(desk).vectors.exact_path(desk.store)


def test_a_write_moves_the_version_and_the_next_search_sees_it(tmp_path):
    db = tmp_path / "w.db"
    make(db)
    target = unit_rows(1, 77)[0]
    with open_desk(db) as desk, open_desk(db) as other:  # two stores: like two processes
        found(desk, target)  # desk maps the file at this version
        other.add_document("kb", "late.txt", ["the late one"], vectors=[target])
        assert found(desk, target, 1) == ["the late one"]
        doc = next(d for d in other.store.list_documents(other.kb("kb").id) if d.filename == "late.txt")
        other.delete_document(doc.id)
        assert "the late one" not in found(desk, target, 5)


def test_a_stale_file_put_back_is_not_read(tmp_path):
    db = tmp_path / "s.db"
    vectors = make(db)
    q = unit_rows(1, 5)[0]
    with open_desk(db) as desk:
        found(desk, q)
        old = tmp_path / "old.f32"
        shutil.copy(matrix_path(desk), old)
        desk.add_document("kb", "late.txt", ["the late one"], vectors=[q])
    shutil.copy(old, file_for(folder_for(db), _kb_id(db)))  # e.g. restored from a backup
    with open_desk(db) as desk:
        assert found(desk, q, 1) == ["the late one"]
        assert found(desk, vectors[7], 1) == ["chunk 7"]


def _kb_id(db, name="kb"):
    with open_desk(db) as desk:
        return desk.kb(name).id


def test_a_foreign_file_is_not_read(tmp_path):
    """Another KB's file under this KB's name: same shape, other vectors."""
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    vectors = make(one, seed=1)
    other = make(two, seed=2)
    q = unit_rows(1, 3)[0]
    with open_desk(two) as desk:
        found(desk, q)
        foreign = matrix_path(desk)
    target = file_for(folder_for(one), _kb_id(one))
    target.parent.mkdir(exist_ok=True)
    shutil.copy(foreign, target)
    with open_desk(one) as desk:
        assert found(desk, q) == expected(vectors, q, 10) != expected(other, q, 10)


@pytest.mark.parametrize("damage", ["truncated", "longer", "zeroed header", "empty", "seqs out of order"])
def test_a_damaged_file_is_not_read_and_is_written_again(tmp_path, damage):
    db = tmp_path / "d.db"
    vectors = make(db)
    qs = [vectors[0], vectors[1], unit_rows(1, 4)[0]]
    with open_desk(db) as desk:
        found(desk, qs[0])
        path = matrix_path(desk)
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[:-100]
    elif damage == "longer":
        data += b"\x00" * 96
    elif damage == "zeroed header":
        data[:HEADER_SIZE] = bytes(HEADER_SIZE)
    elif damage == "empty":
        data = bytearray()
    else:  # swap the first two seqs: a file kbdesk never writes
        at = HEADER_SIZE + 300 * DIMS * 4
        data[at : at + 16] = data[at + 8 : at + 16] + data[at : at + 8]
    path.write_bytes(bytes(data))
    with open_desk(db) as desk:
        for q in qs:
            assert found(desk, q) == expected(vectors, q, 10)
    assert path.stat().st_size == HEADER_SIZE + 300 * DIMS * 4 + 300 * 8  # written whole again


def test_an_unwritable_folder_falls_back_and_doctor_says_why(tmp_path):
    db = tmp_path / "u.db"
    vectors = make(db)
    folder_for(db).write_text("not a folder")  # mkdir fails even for root
    q = unit_rows(1, 8)[0]
    for backend in ("sqlite-vec", "numpy"):
        with open_desk(db, backend=backend) as desk:
            assert found(desk, q) == expected(vectors, q, 10)
            why = sqlite_store(desk).vectors.exact_path(desk.store)
            assert str(folder_for(db)) in why and sqlite_store(desk).vectors.fallback in why
            assert "matrix files in" not in why


def test_a_read_only_database_searches_with_and_without_a_current_file(tmp_path):
    db = tmp_path / "r.db"
    vectors = make(db)
    q = unit_rows(1, 6)[0]

    def read_only_desk():
        paths = get_paths(tmp_path / "home")
        store = SqliteStore(db, choose_driver("auto"), read_only=True)
        return Desk(paths=paths, config=load_config(paths.config_file), db_path=db, store=store)

    desk = read_only_desk()
    try:
        assert found(desk, q) == expected(vectors, q, 10)
        assert not folder_for(db).exists()  # nothing written for a read-only database
        assert "read-only" in sqlite_store(desk).vectors.exact_path(desk.store)
    finally:
        desk.close()
    with open_desk(db) as writer:
        found(writer, q)  # a writable session leaves a current file
    desk = read_only_desk()
    try:
        assert found(desk, q) == expected(vectors, q, 10)
        assert sqlite_store(desk).vectors.matrices.cached(desk.kb("kb").id) is not None
    finally:
        desk.close()
    with open_desk(db) as writer:  # the file goes stale behind the reader's back
        writer.add_document("kb", "late.txt", ["the late one"], vectors=[q])
        kb_id = writer.kb("kb").id
    stale = file_for(folder_for(db), kb_id).stat().st_mtime_ns
    desk = read_only_desk()
    try:
        assert found(desk, q, 1) == ["the late one"]  # not from the stale file
        assert sqlite_store(desk).vectors.matrices.cached(kb_id) is None
    finally:
        desk.close()
    assert file_for(folder_for(db), kb_id).stat().st_mtime_ns == stale


def test_deleting_a_kb_deletes_its_file_and_leftovers_go_at_open(tmp_path):
    db = tmp_path / "x.db"
    make(db, name="kb")
    make(db, name="keep", seed=5)
    q = unit_rows(1, 2)[0]
    with open_desk(db) as desk:
        found(desk, q, name="kb")
        found(desk, q, name="keep")
        doomed, kept = matrix_path(desk, "kb"), matrix_path(desk, "keep")
        assert doomed.is_file() and kept.is_file()
        desk.delete_kb("kb")
        assert not doomed.exists() and kept.is_file()
    folder = folder_for(db)
    orphan = folder / ("0" * 8 + "-0000-0000-0000-" + "0" * 12 + ".f32")  # a KB deleted elsewhere
    orphan.write_bytes(b"x")
    killed = folder / f"{TMP_PREFIX}{'1' * 8}-99-1"  # a build that was killed long ago
    killed.write_bytes(b"half")
    old = time.time() - STALE_TMP_S - 60
    os.utime(killed, (old, old))
    running = folder / f"{TMP_PREFIX}{'2' * 8}-98-1"  # a build running now in another process
    running.write_bytes(b"half")
    with open_desk(db) as desk:
        assert found(desk, q, name="keep")
    assert sorted(p.name for p in folder.iterdir()) == sorted([kept.name, running.name])


def test_quantised_rescoring_reads_the_file_once_current(tmp_path):
    from kbdesk.config import parse_config

    db = tmp_path / "q.db"
    vectors = make(db, n=1200)
    cfg = parse_config({"vector": {"quantize_above": 500}})
    qs = unit_rows(4, 11)
    with open_desk(db, config=cfg) as desk:
        kb_id = desk.kb("kb").id
        first = [found(desk, q, 5) for q in qs]  # rescored from SQLite while the file is written
        sqlite_store(desk).vectors.matrices.wait()
        assert sqlite_store(desk).vectors.matrices.cached(kb_id) is not None
        assert [found(desk, q, 5) for q in qs] == first
        results = desk.search(["kb"], "", query_vector=qs[0], mode="vector", limit=5, threshold=-1.0).results
        for r in results:  # exact cosines
            assert r.similarity == pytest.approx(float(vectors[int(r.content.split()[1])] @ qs[0]), abs=1e-5)


def test_doctor_says_which_exact_path_is_used_and_why(tmp_path):
    import json

    from click.testing import CliRunner

    from kbdesk.cli.main import cli

    db = tmp_path / "doc.db"
    make(db)

    def doctor():
        result = CliRunner().invoke(cli, ["--db", str(db), "doctor", "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["vector_backend"]

    vb = doctor()
    assert vb["active"] == "sqlite-vec"
    assert vb["exact_search"].startswith("memory-mapped float32 matrix files in " + str(folder_for(db)))
    assert "fallback: sqlite-vec's vec0 table" in vb["exact_search"]
    assert not folder_for(db).exists()  # doctor writes nothing
    folder_for(db).write_text("in the way")
    vb = doctor()
    assert vb["exact_search"].startswith("sqlite-vec's vec0 table (cannot create " + str(folder_for(db)))


def test_warming_a_kb_after_a_write_spares_the_next_search_the_build(tmp_path, monkeypatch):
    db = tmp_path / "warm.db"
    make(db)
    target = unit_rows(1, 78)[0]
    with open_desk(db) as desk:
        found(desk, target)  # the file at this version
        desk.add_document("kb", "late.txt", ["the late one"], vectors=[target])
        matrices = sqlite_store(desk).vectors.matrices
        desk.warm_search("kb")  # what the app does when an indexing run ends
        matrices.wait(30)
        builds = []
        real = matrices._build

        def counted(*a, **k):
            builds.append(a)
            return real(*a, **k)

        monkeypatch.setattr(matrices, "_build", counted)
        assert found(desk, target, 1) == ["the late one"]
        assert builds == []  # written already: the search read it
        path = matrix_path(desk)
        assert path.stat().st_size == HEADER_SIZE + 301 * DIMS * 4 + 301 * 8
    with open_desk(db) as writer:
        writer.add_document("kb", "later.txt", ["later still"], vectors=[target])
    paths = get_paths(tmp_path / "home")
    reader = Desk(
        paths=paths,
        config=load_config(paths.config_file),
        db_path=db,
        store=SqliteStore(db, choose_driver("auto"), read_only=True),
    )
    try:
        before = path.stat().st_mtime_ns
        reader.warm_search("kb")  # a read-only desk writes nothing: no error, no build
        sqlite_store(reader).vectors.matrices.wait(5)
        assert path.stat().st_mtime_ns == before
    finally:
        reader.close()
