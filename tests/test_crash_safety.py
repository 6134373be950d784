"""SIGKILL at random moments during ingestion never corrupts or half-writes anything."""

import contextlib
import random
import signal
import sqlite3
import subprocess
import sys
import time

from helpers import sqlite_store
from ingest_support import vector_desk, write_files
from kbdesk import open_desk

CHILD = """
import sys
from kbdesk import open_desk
with open_desk() as desk:
    desk.add("docs", [sys.argv[1]], workers=3)
"""

FILES = {
    f"topic{i:02d}/note{i:02d}.md": f"# Note {i}\n\n"
    + "\n\n".join(
        f"Section {j} of note {i} talks about harbour {i * 7 + j} and its lighthouse keepers. " * 4 for j in range(3)
    )
    for i in range(320)
}


def check_invariants(desk) -> dict[str, int]:
    conn = desk.store.connection()
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.execute("INSERT INTO kb_chunks_fts(kb_chunks_fts) VALUES ('integrity-check')")
    orphans = conn.execute(
        "SELECT count(*) FROM kb_chunks c WHERE NOT EXISTS (SELECT 1 FROM kb_documents d WHERE d.id = c.document_id)"
    ).fetchone()[0]
    assert orphans == 0
    empty_ready = conn.execute(
        "SELECT count(*) FROM kb_documents d WHERE status = 'ready' AND NOT EXISTS "
        "(SELECT 1 FROM kb_chunks c WHERE c.document_id = d.id)"
    ).fetchone()[0]
    assert empty_ready == 0
    miscounted = conn.execute(
        "SELECT count(*) FROM kb_documents d WHERE status = 'ready' AND chunk_count != "
        "(SELECT count(*) FROM kb_chunks c WHERE c.document_id = d.id)"
    ).fetchone()[0]
    assert miscounted == 0
    partial = conn.execute(
        "SELECT count(*) FROM kb_documents d WHERE status != 'ready' AND EXISTS "
        "(SELECT 1 FROM kb_chunks c WHERE c.document_id = d.id)"
    ).fetchone()[0]
    assert partial == 0  # a document is in completely or not at all
    assert conn.execute("SELECT count(*) FROM kb_chunks WHERE embedding IS NULL").fetchone()[0] == 0
    statuses = dict(conn.execute("SELECT status, count(*) FROM kb_documents GROUP BY status").fetchall())
    return statuses


def test_kill_during_ingestion_then_finish(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", FILES)
    desk = vector_desk(fake_openai)
    db_path = desk.db_path
    desk.close()
    fake_openai.fail_next("stall", times=10_000, seconds=0.8)  # every embedding call takes a moment

    def unfinished() -> int:
        with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)) as conn:
            return conn.execute("SELECT count(*) FROM kb_documents WHERE status != 'ready'").fetchone()[0]

    rng = random.Random(20261130)
    seen_partial = 0
    for _ in range(8):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder)])
        # once the run has claimed work (or a killed run left some), kill it at a random
        # moment of what follows: claiming, extracting, embedding, making documents ready
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline and not unfinished():
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 2.0))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        with open_desk() as desk:
            statuses = check_invariants(desk)
            if set(statuses) - {"ready"}:
                seen_partial += 1
    assert seen_partial >= 1, "no kill landed mid-ingestion; the test proved nothing"

    finisher = subprocess.run([sys.executable, "-c", CHILD, str(folder)], timeout=300, capture_output=True, text=True)
    assert finisher.returncode == 0, finisher.stderr
    with open_desk() as desk:
        statuses = check_invariants(desk)
        assert statuses == {"ready": len(FILES)}
        kb = desk.kb("docs")
        assert kb.document_count == len(FILES)
        names = sorted(d.filename for d in desk.store.list_documents(kb.id))
        assert names == sorted(FILES)  # no duplicates left by resumed work
        hits = desk.search(["docs"], "harbour 2233", mode="keyword").results
        assert hits and hits[0].source == "topic319/note319.md"
        # the sqlite-vec index and the matrix file agree with the table after all the kills
        from kbdesk.store.sqlite.vectors import vec_table

        query = [1.0] * fake_openai.dimensions
        desk.search(["docs"], "x", query_vector=query, mode="vector")  # the matrix file
        matrix = sqlite_store(desk).vectors.matrices.cached(kb.id)
        assert matrix is not None and matrix.seqs.size == kb.chunk_count
        sqlite_store(desk).vectors.matrices.enabled = False
        desk.search(["docs"], "x", query_vector=query, mode="vector")  # the vec0 table, built now
        conn = desk.store.connection()
        assert conn.execute(f"SELECT count(*) FROM {vec_table(kb.id)}").fetchone()[0] == kb.chunk_count
