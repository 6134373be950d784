"""Integrity across processes on SQLite: two `kbdesk add` at once, a killed update
chain, and a file written by an older kbdesk with two rows for one path."""

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

from ingest_support import configure_provider, write_files
from integrity_scenarios import assert_one_ready_row_per_file
from kbdesk import open_desk
from kbdesk.store.sqlite.migrations import MIGRATIONS

CLI = "from kbdesk.cli.main import main; main()"
FILES = {
    f"part{i % 5}/doc{i:03d}.md": f"# Doc {i}\n\n" + f"Pier {i} holds crane {i * 31} and rope {i}. " * 8
    for i in range(150)
}


def start_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_processes_adding_one_folder_share_the_work(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", FILES)
    configure_provider(fake_openai)
    with open_desk() as desk:
        desk.create_kb("docs", model_id="text-embedding-3-small", provider="fake")
    fake_openai.fail_next("stall", times=10_000, seconds=0.4)  # every call takes a while: the runs overlap
    runs = [start_cli("add", "docs", str(folder), "--json", "--workers", "2") for _ in range(2)]
    outs = [run.communicate(timeout=300) for run in runs]
    for run, (_out, err) in zip(runs, outs, strict=True):
        assert run.returncode == 0, err
    reports = [json.loads(out) for out, _ in outs]
    done = Counter(name for r in reports for name in r["added"])
    assert set(done) == set(FILES) and max(done.values()) == 1  # each file indexed by one run
    for report in reports:  # the other run saw every file it did not do, done
        assert set(report["added"]) | set(report["by_other"]) | set(report["unchanged"]) == set(FILES)
    with open_desk() as desk:
        assert_one_ready_row_per_file(desk, "docs", folder, len(FILES))
        texts = {
            c
            for d in desk.store.list_documents(desk.kb("docs").id)
            for c in [
                r[0]
                for r in desk.store.connection().execute(
                    "SELECT content_hash FROM kb_chunks WHERE document_id = ?", (d.id,)
                )
            ]
        }
    embedded = sum(len(r.inputs) for r in fake_openai.embedding_requests)
    assert embedded == len(texts)  # no chunk was embedded twice


def test_kills_along_an_update_chain_end_with_the_newest_version(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", {f"f{i:02d}.txt": f"version 0 of file {i}" for i in range(30)})
    configure_provider(fake_openai)
    with open_desk() as desk:
        desk.create_kb("docs", model_id="text-embedding-3-small", provider="fake")
        desk.add("docs", [folder])
    fake_openai.fail_next("stall", times=10_000, seconds=0.3)
    for round_ in range(1, 6):  # edit, start an add, kill it mid-way
        for i in range(30):
            (folder / f"f{i:02d}.txt").write_text(f"version {round_} of file {i} " + "word " * (round_ * 40))
        child = start_cli("add", "docs", str(folder), "-q")
        time.sleep(1.0 + 0.3 * round_)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
    for i in range(30):
        (folder / f"f{i:02d}.txt").write_text(f"final version of file {i}")
    fake_openai._script.clear()
    done = start_cli("add", "docs", str(folder), "--json")
    _out, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    with open_desk() as desk:
        assert_one_ready_row_per_file(desk, "docs", folder, 30)
        conn = desk.store.connection()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        texts = [r[0] for r in conn.execute("SELECT content FROM kb_chunks")]
        assert sorted(texts) == sorted(f"final version of file {i}" for i in range(30))


def test_an_older_file_with_two_rows_for_a_path_is_mended(tmp_path):
    db = tmp_path / "old.db"
    with open_desk(db) as desk:
        desk.create_kb("docs", keyword_only=True)
        kb = desk.kb("docs")
        first = desk.add_document("docs", "a.txt", ["old words"], source_path="/x/a.txt")
    conn = sqlite3.connect(db)
    # as a kbdesk before schema step 7 left it: no unique index, a second ready row for the path
    conn.execute("DROP INDEX idx_kbdoc_source")
    conn.execute("DROP INDEX idx_kbdoc_result")  # a later step, run again on the way up
    conn.execute(
        "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, status, "
        "uploaded_by, source_path, created_at, updated_at) SELECT 'second', kb_id, filename, content_type, "
        "size_bytes, storage_key, 'ready', uploaded_by, source_path, '2099-01-01T00:00:00.000Z', updated_at "
        "FROM kb_documents WHERE id = ?",
        (first.id,),
    )
    conn.execute(
        "INSERT INTO kb_chunks(id, kb_id, document_id, chunk_index, content, token_count, created_at) "
        "VALUES ('c2', ?, 'second', 0, 'newer words', 2, '2099-01-01')",
        (kb.id,),
    )
    conn.execute("INSERT INTO kb_chunks_fts(rowid, content) SELECT seq, content FROM kb_chunks WHERE id = 'c2'")
    step = next(i for i, (name, _) in enumerate(MIGRATIONS, start=1) if name == "one_document_per_path")
    conn.execute("DELETE FROM schema_migrations WHERE version >= ?", (step,))  # back to before step 7
    conn.execute("DROP INDEX idx_kbdoc_facts")  # later steps, run again on the way up
    for column in ("folder", "file_type", "title", "tags", "properties", "doc_date"):
        conn.execute(f"ALTER TABLE kb_documents DROP COLUMN {column}")
    for table in ("channels", "personas"):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN filters")
    for column in ("version", "indexed_at", "indexed_hash", "error_kind"):
        conn.execute(f"ALTER TABLE kb_documents DROP COLUMN {column}")
    for table, column in (("channels", "retrieval"), ("personas", "retrieval"), ("personas", "max_tokens")):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")  # later steps, run again on the way up
    conn.execute("DROP TABLE api_tokens")
    conn.commit()
    conn.close()
    with open_desk(db) as desk:
        docs = desk.store.list_documents(desk.kb("docs").id)
        assert [d.id for d in docs] == ["second"]  # the newest ready row stays
        assert desk.kb("docs").document_count == 1 and desk.kb("docs").chunk_count == 1
        assert [h.content for h in desk.search(["docs"], "words", mode="keyword").results] == ["newer words"]
