"""Two writer threads and a reader at once: no 'database is locked' or deadlock, integrity intact (every
engine); two stores on one SQLite file; connections of finished threads released."""

import threading
import time

import numpy as np

from engine_checks import assert_sound, count, reopen
from helpers import sqlite_store
from kbdesk import open_desk


def test_two_writers_and_a_reader(engine_desk):
    desk = engine_desk
    desk.create_kb("shared", model_id="m", dimensions=16)
    errors: list[BaseException] = []
    written = {"a": 0, "b": 0}
    reads = [0]
    stop = time.monotonic() + 2.5

    def writer(tag: str) -> None:
        rng = np.random.default_rng(hash(tag) % 2**32)
        try:
            while time.monotonic() < stop:
                n = int(rng.integers(1, 20))
                doc = desk.add_document(
                    "shared",
                    f"{tag}-{written[tag]}.txt",
                    [f"{tag} chunk {i} of the shared corpus" for i in range(n)],
                    vectors=rng.standard_normal((n, 16)),
                )
                written[tag] += 1
                if written[tag] % 5 == 0:
                    desk.delete_document(doc.id)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    def reader() -> None:
        rng = np.random.default_rng(3)
        try:
            while time.monotonic() < stop:
                desk.search(["shared"], "shared corpus", query_vector=rng.standard_normal(16))
                desk.kb("shared")
                reads[0] += 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=("a",)),
        threading.Thread(target=writer, args=("b",)),
        threading.Thread(target=reader),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert written["a"] > 5 and written["b"] > 5 and reads[0] > 5

    # a second process-level connection (a second "process") sees a consistent database
    with reopen(desk) as other:
        assert_sound(other)
        kb = other.kb("shared")
        assert (kb.document_count, kb.chunk_count) == (count(other, "kb_documents"), count(other, "kb_chunks"))
        assert count(other, "kb_documents") == sum(w - w // 5 for w in written.values())


def test_two_stores_on_one_file_write_without_locking_errors(tmp_path):
    """Two independent stores (as two processes would) interleave write transactions."""
    db = tmp_path / "two.db"
    first, second = open_desk(db), open_desk(db)
    first.create_kb("one")
    errors: list[BaseException] = []

    def work(desk, tag):
        try:
            for i in range(40):
                desk.add_document("one", f"{tag}{i}.txt", [f"text {i}"] * 3)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(first, "x")), threading.Thread(target=work, args=(second, "y"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert first.kb("one").document_count == 80
    first.close()
    second.close()


def test_connections_of_finished_threads_are_released(tmp_path):
    (tmp_path / "f").mkdir()
    for i in range(5):
        (tmp_path / "f" / f"{i}.txt").write_text(f"file {i}")
    desk = open_desk(tmp_path / "c.db")
    desk.create_kb("k")
    for _ in range(6):  # each add runs its own thread pool
        (tmp_path / "f" / "0.txt").write_text(f"changed {time.time()}")
        desk.add("k", [tmp_path / "f"], workers=3)
    threading.Thread(target=lambda: desk.kb("k")).start()  # one more thread opens one more
    time.sleep(0.1)
    desk.kb("k")
    assert len(sqlite_store(desk)._conns) <= 5
    desk.close()
