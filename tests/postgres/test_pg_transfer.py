"""Export and import between SQLite and Postgres: complete, idempotent, resumable, refusing mixes."""

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from ingest_support import GOOD_FILES, vector_desk, write_files
from kbdesk import open_desk
from kbdesk.cli.main import cli
from kbdesk.errors import ConflictError, StoreError
from kbdesk.models import ChunkInput
from kbdesk.transfer import ModelMismatchError, export_kb, import_kb
from pg_support import sql, with_password

QUERIES = ["restore snapshot", "who owns the rollout", "designer", "all systems green", "lighthouse March"]
EXTRA = {
    "ledger.txt": "Invoices are paid within thirty days.\n\nLate fees apply after that.",
    "faq.md": "# FAQ\n\n## Access\n\nAsk the admin for a badge.\n\n## Parking\n\nPark behind the lighthouse.",
}


def pg_snapshot(uri):
    """Every row of every table, hashed per table: any change shows."""
    tables = [r[0] for r in sql(uri, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    return {
        t: sql(uri, f"SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM \"{t}\" x")[0]
        for t in tables
    }


def sqlite_snapshot(desk):
    conn = desk.store.connection()
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
            "'vec_kb_%' AND name NOT LIKE 'kb_chunks_fts%' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return {n: sorted(map(repr, conn.execute(f'SELECT * FROM "{n}"').fetchall())) for n in names}


def chunks_of(desk):
    rows = (
        desk.store.connection()
        .execute(
            "SELECT c.id, c.document_id, c.chunk_index, c.content, c.metadata, c.content_hash, c.embedding "
            "FROM kb_chunks c ORDER BY c.id"
        )
        .fetchall()
    )
    return [(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], bytes(r[6]) if r[6] is not None else None) for r in rows]


def clean(meta):
    return {k.replace("\x00", ""): v.replace("\x00", "") if isinstance(v, str) else v for k, v in meta.items()}


def results(desk, query, server, mode):
    vector = server.vector_for(query, server.dimensions) if mode != "keyword" else None
    response = desk.search(["docs"], query, query_vector=vector, mode=mode, limit=5, threshold=-1)
    # NUL bytes do not survive Postgres (they are stripped on the way in)
    return [(r.source, r.content.replace("\x00", ""), r.similarity, clean(r.metadata)) for r in response.results]


@pytest.fixture
def laptop(tmp_path, fake_openai, kbdesk_home):
    """A KB built on the laptop by the real pipeline, plus a document with NUL bytes."""
    folder = write_files(tmp_path / "corpus", {**GOOD_FILES, **EXTRA})
    desk = vector_desk(fake_openai, db=tmp_path / "laptop.db")
    report = desk.add("docs", [folder])
    assert report.failed == []
    text = "scanned page\x00 with a NUL byte about invoices"
    desk.add_document(
        "docs",
        "scan.pdf",
        [ChunkInput(text, 9, {"page": 3, "ocr\x00": "yes\x00"})],
        vectors=[fake_openai.vector_for(text, fake_openai.dimensions)],
        extracted_text=text,
    )
    yield desk
    desk.close()


def test_round_trip_keeps_vectors_files_and_search_results(laptop, pg_uri, fake_openai, tmp_path):
    events: list[Any] = []
    report = export_kb(laptop, "docs", pg_uri, batch_docs=2, on_event=events.append)
    total = laptop.kb("docs").document_count
    assert report.kb_created and report.copied_documents == total and report.unchanged_documents == 0
    assert report.batches == (total + 1) // 2 and report.copied_files == len(GOOD_FILES) + len(EXTRA)
    assert [e.kind for e in events] == ["plan"] + ["batch"] * report.batches + ["done"]
    assert events[-2].chunks_done == events[0].chunks_total == laptop.kb("docs").chunk_count

    with open_desk(pg_uri) as server:
        kb = server.kb("docs")
        assert (kb.id, kb.document_count, kb.chunk_count, kb.status) == (
            laptop.kb("docs").id,
            total,
            laptop.kb("docs").chunk_count,
            "active",
        )
        # searched there with the same results (vector ranking is the same function of the same vectors)
        for query in QUERIES:
            there, here = results(server, query, fake_openai, "vector"), results(laptop, query, fake_openai, "vector")
            assert [r[0] for r in there] == [r[0] for r in here]
            assert [r[2] for r in there] == pytest.approx([r[2] for r in here], abs=2e-6)
            assert (
                results(server, query, fake_openai, "hybrid")[0][0]
                == results(laptop, query, fake_openai, "hybrid")[0][0]
            )
        assert sql(pg_uri, "SELECT count(*) FROM kbdesk_document_blobs")[0][0] == report.copied_files
        # the server keeps file names, never where they lie on the laptop
        folder = str(tmp_path)
        for row in sql(pg_uri, "SELECT to_jsonb(d)::text FROM kb_documents d"):
            assert folder not in row[0]
        assert {(r[0] or "")[:12] for r in sql(pg_uri, "SELECT source_path FROM kb_documents")} == {"kbdesk-path:", ""}

    # re-exported with zero changes
    before = pg_snapshot(pg_uri)
    again = export_kb(laptop, "docs", pg_uri)
    assert not again.changed and again.unchanged_documents == total and again.summary().startswith("nothing to do")
    assert pg_snapshot(pg_uri) == before

    # imported back into a fresh SQLite file: intact
    with open_desk(tmp_path / "back.db") as back:
        imported = import_kb(back, pg_uri, "docs")
        assert imported.copied_documents == total and imported.copied_files == report.copied_files
        want, got = chunks_of(laptop), chunks_of(back)
        # ids, text hashes and vectors: the same bits; text and metadata without their NULs
        assert [(c[0], c[1], c[2], c[5], c[6]) for c in got] == [(c[0], c[1], c[2], c[5], c[6]) for c in want]
        assert [(c[3], c[4]) for c in got] == [(c[3].replace("\x00", ""), clean(c[4])) for c in want]
        for query in QUERIES:
            for mode in ("vector", "keyword", "hybrid"):
                assert results(back, query, fake_openai, mode) == results(laptop, query, fake_openai, mode), (
                    query,
                    mode,
                )
        for doc in laptop.store.list_documents(laptop.kb("docs").id):
            copy = back.store.get_document(doc.id)
            assert (copy.filename, copy.content_hash, copy.size_bytes) == (
                doc.filename,
                doc.content_hash,
                doc.size_bytes,
            )
            assert copy.source_path is None  # the server kept no path of the laptop's to give back
            assert back.store.document_sections(doc.id) == [
                (t.replace("\x00", ""), m) for t, m in laptop.store.document_sections(doc.id)
            ]
            original = laptop.files_dir / doc.storage_key
            if original.exists():
                assert (back.files_dir / copy.storage_key).read_bytes() == original.read_bytes()
        snapshot = sqlite_snapshot(back)
        assert not import_kb(back, pg_uri, "docs").changed
        assert sqlite_snapshot(back) == snapshot


def test_an_interrupted_export_is_finished_by_running_it_again(laptop, pg_uri):
    total = laptop.kb("docs").document_count

    def drop_connection(event):
        if event.kind == "batch" and event.docs_done == 2:
            sql(
                pg_uri,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()",
            )

    with pytest.raises(StoreError, match="lost the connection"):
        export_kb(laptop, "docs", pg_uri, batch_docs=1, on_event=drop_connection)
    assert sql(pg_uri, "SELECT count(*), min(status) FROM kb_documents") == [(2, "ready")]
    assert sql(pg_uri, "SELECT status FROM knowledge_bases") == [("processing",)]
    report = export_kb(laptop, "docs", pg_uri, batch_docs=1)
    assert (report.unchanged_documents, report.copied_documents) == (2, total - 2)
    assert sql(pg_uri, "SELECT count(*) FROM kb_documents")[0][0] == total
    assert sql(pg_uri, "SELECT status, document_count, chunk_count FROM knowledge_bases") == [
        ("active", total, laptop.kb("docs").chunk_count)
    ]


@pytest.mark.slow
def test_a_killed_export_process_is_finished_by_running_it_again(tmp_path, pg_uri, kbdesk_home):
    db = tmp_path / "many.db"
    with open_desk(db) as desk:
        desk.create_kb("many", model_id="m", dimensions=32)
        rng = np.random.default_rng(5)
        for i in range(300):
            desk.add_document(
                "many", f"n{i}.txt", [f"note {i} part {j}" for j in range(4)], vectors=rng.standard_normal((4, 32))
            )
    cmd = [
        sys.executable,
        "-m",
        "kbdesk.cli.main",
        "--db",
        str(db),
        "export",
        "many",
        "--to",
        pg_uri,
        "--batch-size",
        "1",
        "--json",
    ]
    env = {**os.environ, "KBDESK_HOME": str(kbdesk_home)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if sql(pg_uri, "SELECT count(*) FROM kb_documents")[0][0] >= 20:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = sql(pg_uri, "SELECT count(*) FROM kb_documents")[0][0]
    assert 20 <= done < 300, done
    # no half-written document: every row has all its chunks
    assert (
        sql(
            pg_uri,
            "SELECT count(*) FROM kb_documents d WHERE chunk_count <> "
            "(SELECT count(*) FROM kb_chunks c WHERE c.document_id = d.id)",
        )[0][0]
        == 0
    )
    out = subprocess.run(
        [*cmd[:-3], "--batch-size", "50", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["unchanged_documents"] == done and report["copied_documents"] == 300 - done
    assert sql(pg_uri, "SELECT status, document_count, chunk_count FROM knowledge_bases") == [("active", 300, 1200)]


def test_a_different_model_on_the_target_is_refused(laptop, pg_uri, fake_openai):
    with open_desk(pg_uri) as server:  # the team server already has a "docs" that embeds otherwise
        server.create_kb("docs", model_id="other-model", dimensions=8)
    before = pg_snapshot(pg_uri)
    with pytest.raises(ModelMismatchError, match=r"other-model.*refusing to mix"):
        export_kb(laptop, "docs", pg_uri)
    assert pg_snapshot(pg_uri) == before
    result = CliRunner().invoke(cli, ["--db", str(laptop.db_path), "export", "docs", "--to", pg_uri])
    assert result.exit_code == 1 and "refusing to mix" in result.output and "Traceback" not in result.output


def test_a_kb_re_embedded_since_its_export_is_refused_too(laptop, pg_uri):
    export_kb(laptop, "docs", pg_uri)
    kb = laptop.kb("docs")
    rng = np.random.default_rng(1)
    laptop.store.put_cached_vectors(
        "new-model", [(h, rng.standard_normal(12)) for h, _ in laptop.store.chunk_texts(kb.id)]
    )
    laptop.store.swap_embedding_model(kb.id, "fake", "new-model", "new-model")
    with pytest.raises(ModelMismatchError, match=r"text-embedding-3-small.*new-model"):
        export_kb(laptop, "docs", pg_uri)
    with open_desk(pg_uri) as server:
        assert server.kb("docs").model_id == "text-embedding-3-small"


def test_changed_removed_and_pruned_documents(laptop, pg_uri):
    export_kb(laptop, "docs", pg_uri)
    docs = {d.filename: d for d in laptop.store.list_documents(laptop.kb("docs").id)}
    laptop.delete_document(docs["people.csv"].id)
    laptop.store.finish_document(
        docs["ledger.txt"].id, [ChunkInput("Invoices are paid within sixty days.")], [np.ones(8)]
    )
    report = export_kb(laptop, "docs", pg_uri)
    assert (report.copied_documents, report.extra_on_target, report.pruned_documents) == (1, 1, 0)
    pruned = export_kb(laptop, "docs", pg_uri, prune=True)
    assert (pruned.copied_documents, pruned.pruned_documents) == (0, 1)
    assert sql(pg_uri, "SELECT count(*) FROM kb_documents WHERE filename = 'people.csv'")[0][0] == 0
    with open_desk(pg_uri) as server:
        assert server.search(["docs"], "sixty days", mode="keyword").results[0].source == "ledger.txt"
        assert server.kb("docs").document_count == len(docs) - 1
    assert not export_kb(laptop, "docs", pg_uri, prune=True).changed


def test_another_kb_of_the_same_name_is_not_merged(laptop, pg_uri):
    with open_desk(pg_uri) as server:
        server.create_kb("docs", model_id="text-embedding-3-small")
    with pytest.raises(ConflictError, match="different knowledge base named 'docs'"):
        export_kb(laptop, "docs", pg_uri)


def test_cli_export_and_import_as_team_kb_never_write_the_password(laptop, pg_uri, tmp_path, kbdesk_home):
    team = str(sql(pg_uri, "INSERT INTO teams(name) VALUES ('Eng') RETURNING id")[0][0])
    config = kbdesk_home / "config" / "config.toml"
    config.write_text(config.read_text() + '\n[identity]\nusername = "lead"\n[identity.teams]\nEng = "admin"\n')
    secret_uri = with_password(pg_uri, "hunter2-secret")
    runner = CliRunner()
    out = runner.invoke(
        cli,
        [
            "--db",
            str(laptop.db_path),
            "export",
            "docs",
            "--to",
            secret_uri,
            "--scope",
            "team",
            "--team",
            "Eng",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    body = json.loads(out.output)
    assert body["kb_created"] and body["copied_documents"] == laptop.kb("docs").document_count
    assert sql(pg_uri, "SELECT scope, team_id::text, owner_id FROM knowledge_bases") == [("team", team, None)]
    again = runner.invoke(cli, ["--db", str(laptop.db_path), "export", "docs", "--to", secret_uri])
    assert again.exit_code == 0 and "nothing to do" in again.output
    back = tmp_path / "back.db"
    imported = runner.invoke(cli, ["--db", str(back), "import", "--from", secret_uri, "docs", "--json"])
    assert imported.exit_code == 0, imported.output
    listed = runner.invoke(cli, ["--db", secret_uri, "kb", "list", "--json"])
    assert [kb["name"] for kb in json.loads(listed.output)["data"]] == ["docs"]
    for text in (out.output, again.output, imported.output, listed.output):
        assert "hunter2" not in text
    assert "***" in out.output
    # nowhere in the server's tables, the laptop's or the imported copy's
    for table in [r[0] for r in sql(pg_uri, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]:
        assert not sql(pg_uri, f"SELECT 1 FROM \"{table}\" x WHERE x::text LIKE '%%hunter2%%' LIMIT 1"), table
    for path in (laptop.db_path, back):
        for file in (path, path.with_name(path.name + "-wal")):
            assert not file.exists() or b"hunter2" not in file.read_bytes()
    audit = [e for e in laptop.store.audit_entries() if e["action"] == "kb.export"]
    assert audit and "***" in audit[-1]["details"]["to"]


def test_a_keyword_only_kb_moves_both_ways(tmp_path, pg_uri, kbdesk_home):
    with open_desk(tmp_path / "plain.db") as laptop:
        laptop.create_kb("plain", "no embeddings", chunk_size=400, chunk_overlap=40)
        laptop.add("plain", [write_files(tmp_path / "corpus", GOOD_FILES)])
        assert export_kb(laptop, "plain", pg_uri).copied_documents == len(GOOD_FILES)
        with open_desk(pg_uri) as server:
            kb = server.kb("plain")
            assert (kb.model_id, kb.chunk_size, kb.description) == (None, 400, "no embeddings")
            assert server.search(["plain"], "restore snapshot").results[0].source == "guide.md"
        with open_desk(tmp_path / "copy.db") as copy:
            assert import_kb(copy, pg_uri, "plain").copied_documents == len(GOOD_FILES)
            for query in QUERIES:
                assert [(r.source, r.content, r.similarity) for r in copy.search(["plain"], query).results] == [
                    (r.source, r.content, r.similarity) for r in laptop.search(["plain"], query).results
                ]


def test_two_desktops_exporting_one_kb_at_once_both_succeed(laptop, pg_uri, tmp_path):
    """Two copies of one KB (a colleague imported it) exported to the server at the same
    moment, in small batches that interleave: both runs finish, the server holds each
    document once (no raw constraint error for the one that comes second)."""
    import shutil
    import threading

    copy = tmp_path / "colleague.db"
    laptop.store.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(tmp_path / "laptop.db", copy)
    total, chunks = laptop.kb("docs").document_count, laptop.kb("docs").chunk_count
    start, reports, errors = threading.Barrier(2), [], []

    def export(db):
        try:
            with open_desk(db) as desk:
                start.wait()
                reports.append(export_kb(desk, "docs", pg_uri, batch_docs=1))
        except Exception as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=export, args=(db,)) for db in (tmp_path / "laptop.db", copy)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and len(reports) == 2
    assert sql(pg_uri, "SELECT count(*), count(DISTINCT id) FROM kb_documents") == [(total, total)]
    assert sql(pg_uri, "SELECT status, document_count, chunk_count FROM knowledge_bases") == [("active", total, chunks)]
    assert export_kb(laptop, "docs", pg_uri).copied_documents == 0  # and nothing left to do
