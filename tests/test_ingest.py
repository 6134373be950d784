"""Ingestion end to end: folders in, chunks and vectors out, over real HTTP."""

import os
import socket

import pytest

from fake_openai import FakeOpenAI
from helpers import sqlite_store
from ingest_support import GOOD_FILES, configure_provider, vector_desk, write_files
from kbdesk import open_desk


def config_file():
    from kbdesk.paths import get_paths

    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def statuses(desk, kb):
    return {d.filename: (d.status, d.error) for d in desk.store.list_documents(desk.kb(kb).id)}


def test_a_folder_becomes_searchable_without_a_provider(tmp_path):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    with open_desk() as desk:
        desk.create_kb("plain")
        report = desk.add("plain", [folder])
        assert sorted(report.added) == sorted(GOOD_FILES) and report.failed == []
        assert {s for s, _ in statuses(desk, "plain").values()} == {"ready"}
        hit = desk.search(["plain"], "restore snapshot").results[0]
        assert hit.source == "guide.md" and hit.metadata["headings"] == ["Guide", "Restore"]
        assert desk.search(["plain"], "designer").results[0].source == "people.csv"
        assert desk.search(["plain"], "alert").results == []  # scripts are not text
        kb = desk.kb("plain")
        assert kb.document_count == 4 and kb.chunk_count >= 4
        # originals are kept under kb/{kb_id}/{doc_id}_{filename}
        for doc in desk.store.list_documents(kb.id):
            stored = desk.files_dir / doc.storage_key
            assert doc.storage_key.startswith(f"kb/{kb.id}/{doc.id}_")
            assert stored.read_bytes() == (folder / doc.filename).read_bytes()


def test_vectors_usage_and_hybrid_search(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    with vector_desk(fake_openai) as desk:
        report = desk.add("docs", [folder])
        assert report.failed == [] and report.embedded_chunks > 0
        kb = desk.kb("docs")
        assert kb.dimensions == fake_openai.dimensions
        assert all(r.headers.get("authorization") is None for r in fake_openai.embedding_requests)
        usage = (
            desk.store.connection()
            .execute("SELECT role, provider, model, sum(inputs) FROM usage_log GROUP BY role")
            .fetchall()
        )
        assert usage == [("embedding", "fake", "text-embedding-3-small", report.embedded_chunks)]
        # the fake server's vectors are a hash of the text: the exact chunk text is a perfect match
        text = "We agreed to ship the lighthouse feature in March.\n\nAlice owns the rollout."
        response = desk.search(["docs"], text)
        assert response.mode == "hybrid" and response.results[0].source == "notes/meeting.txt"
        assert response.results[0].similarity == pytest.approx(1.0, abs=1e-5)
        assert all(r.similarity >= 0.3 for r in response.results)


def test_unchanged_folder_costs_no_embedding_call_and_an_edit_costs_only_its_chunks(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    with vector_desk(fake_openai) as desk:
        desk.add("docs", [folder])
        calls = len(fake_openai.embedding_requests)
        again = desk.add("docs", [folder])
        assert sorted(again.unchanged) == sorted(GOOD_FILES)
        assert len(fake_openai.embedding_requests) == calls and again.embedding_calls == 0

        # touch without change: mtime moves, the content hash does not
        os.utime(folder / "guide.md", (1, 1))
        assert desk.add("docs", [folder]).unchanged and len(fake_openai.embedding_requests) == calls

        # one edited paragraph in a multi-chunk file: only the new chunk text is embedded
        big = {"long.txt": "\n\n".join(f"Paragraph {i}: " + "word " * 150 for i in range(6))}
        write_files(folder, big)
        desk.add("docs", [folder])
        before = sum(len(r.inputs) for r in fake_openai.embedding_requests)
        text = (folder / "long.txt").read_text().replace("Paragraph 5:", "Paragraph five, edited:")
        (folder / "long.txt").write_text(text)
        report = desk.add("docs", [folder])
        assert report.updated == ["long.txt"]
        sent = sum(len(r.inputs) for r in fake_openai.embedding_requests) - before
        assert 1 <= sent < 6 and report.cached_chunks >= 5 - sent
        long_docs = [d for d in desk.store.list_documents(desk.kb("docs").id) if d.filename == "long.txt"]
        assert len(long_docs) == 1 and long_docs[0].status == "ready"
        assert "edited" in desk.search(["docs"], "edited paragraph five", mode="keyword").results[0].content

        # the same text under another name is found in the cache, not re-embedded
        write_files(folder, {"copy/guide-again.md": GOOD_FILES["guide.md"] + "\n"})
        requests = len(fake_openai.embedding_requests)
        report = desk.add("docs", [folder])
        assert report.added == ["copy/guide-again.md"] and len(fake_openai.embedding_requests) == requests


def test_rebuild_reports_counts_and_reuses_vectors(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", {**GOOD_FILES, "empty.txt": ""})
    with vector_desk(fake_openai) as desk:
        desk.add("docs", [folder])
        requests = len(fake_openai.embedding_requests)
        counts, report = desk.ingestor().rebuild("docs")
        assert counts == {"total_docs": 5, "rebuilding": 4, "skipped": 1}  # empty.txt has no stored text
        assert report.failed == [] and len(fake_openai.embedding_requests) == requests
        assert statuses(desk, "docs")["guide.md"] == ("ready", None)
        hit = desk.search(["docs"], "restore snapshot", mode="keyword").results[0]
        assert hit.metadata["headings"] == ["Guide", "Restore"]  # metadata survives re-chunking
        assert [e["action"] for e in desk.store.audit_entries(desk.kb("docs").id)][-1] == "kb.rebuild"


def test_changing_the_model_re_embeds_the_whole_kb(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    with FakeOpenAI(dimensions=16) as bigger:
        configure_provider(bigger, "big")
        with vector_desk(fake_openai) as desk:
            desk.add("docs", [folder])
            chunks = desk.kb("docs").chunk_count
            kb, report = desk.ingestor().reembed("docs", "big", "nomic-embed-text")
            assert kb.embedding_config["model_id"] == "nomic-embed-text" and kb.dimensions == 16
            assert report.embedded_chunks == chunks
            conn = desk.store.connection()
            sizes = {r[0] for r in conn.execute("SELECT length(embedding) FROM kb_chunks")}
            assert sizes == {16 * 4}  # never a mix of two models
            text = "We agreed to ship the lighthouse feature in March.\n\nAlice owns the rollout."
            response = desk.search(["docs"], text, mode="vector")
            assert response.results[0].source == "notes/meeting.txt"
            assert response.results[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_sync_removes_documents_whose_files_are_gone(tmp_path):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    with open_desk() as desk:
        desk.create_kb("plain")
        desk.add("plain", [folder])
        (folder / "people.csv").unlink()
        assert desk.add("plain", [folder]).removed == []  # without --sync nothing is removed
        report = desk.add("plain", [folder], sync=True)
        assert report.removed == ["people.csv"]
        assert "people.csv" not in statuses(desk, "plain")
        assert desk.search(["plain"], "designer").results == []


def test_include_exclude_and_hidden(tmp_path):
    folder = write_files(
        tmp_path / "corpus", {**GOOD_FILES, ".secret/keys.txt": "hidden words", ".dotfile.md": "# dot"}
    )
    with open_desk() as desk:
        desk.create_kb("plain")
        report = desk.add("plain", [folder], include=["*.md", "*.txt"], exclude=["notes/*"])
        assert report.added == ["guide.md"]
        report = desk.add("plain", [folder], hidden=True, include=["*.txt"])
        assert sorted(report.added) == [".secret/keys.txt", "notes/meeting.txt"]


def test_provider_failures_fail_documents_with_reasons_and_lose_nothing(tmp_path):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    server = FakeOpenAI(api_key="sk-test-SECRET-0123456789").start()
    try:
        configure_provider(server, extra='api_key = "sk-wrong-KEY-9876543210"')
        with open_desk() as desk:
            desk.create_kb("docs", model_id="text-embedding-3-small", provider="fake")
            report = desk.add("docs", [folder])
            assert len(report.failed) == 4
            for _name, reason in report.failed:
                assert "fake" in reason and "sk-" not in reason
            assert {s for s, _ in statuses(desk, "docs").values()} == {"error"}
            db = desk.db_path
        raw = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))
        assert b"sk-wrong-KEY" not in raw and b"sk-test-SECRET" not in raw
    finally:
        server.stop()
    # the provider comes back (with the right key): re-running finishes every document
    with FakeOpenAI() as healthy:
        path = config_file()
        path.write_text(f'[providers.fake]\nkind = "custom"\nbase_url = "{healthy.base_url}"\n')
        with open_desk() as desk:
            report = desk.add("docs", [folder])
            assert report.failed == [] and len(report.added) == 4
            assert {s for s, _ in statuses(desk, "docs").values()} == {"ready"}
            assert desk.kb("docs").document_count == 4


def test_an_unreachable_provider_is_a_reason_not_a_crash(tmp_path):
    folder = write_files(tmp_path / "corpus", {"a.txt": "alpha text"})
    path = config_file()
    path.write_text(
        '[providers.down]\nkind = "custom"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "max_retries = 1\nretry_budget = 2.0\ntimeout = 1.0\n"
    )
    with open_desk() as desk:
        desk.create_kb("docs", model_id="m", provider="down")
        report = desk.add("docs", [folder])
        assert len(report.failed) == 1 and "down" in report.failed[0][1]
        assert statuses(desk, "docs")["a.txt"][0] == "error"


def test_429_with_retry_after_is_waited_out(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", {"a.txt": "alpha text", "b.txt": "beta text"})
    fake_openai.fail_next("429", times=2, retry_after="0.2")
    with vector_desk(fake_openai) as desk:
        report = desk.add("docs", [folder], workers=1)
        assert report.failed == [] and sorted(report.added) == ["a.txt", "b.txt"]
        # two refusals, then one call carrying both small documents' chunks
        assert len(fake_openai.embedding_requests) == 3
        assert sorted(fake_openai.embedding_requests[-1].inputs) == ["alpha text", "beta text"]


def test_interrupted_documents_resume(tmp_path, fake_openai):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    with vector_desk(fake_openai) as desk:
        desk.add("docs", [folder])
        kb = desk.kb("docs")
        doc = desk.store.list_documents(kb.id)[0]
        # as a kill would leave it: mid-embedding, no chunks, claimed by a dead process
        with desk.store.write() as conn:
            conn.execute("DELETE FROM kb_chunks WHERE document_id = ?", (doc.id,))
            conn.execute(
                "UPDATE kb_documents SET status = 'embedding', claimed_by = ? WHERE id = ?",
                (f"{socket.gethostname()}:999999999", doc.id),
            )
        report = desk.ingestor().resume()
        assert report.resumed == [doc.filename]
        assert statuses(desk, "docs")[doc.filename] == ("ready", None)
        assert desk.store.get_document(doc.id).chunk_count > 0


def test_a_document_of_a_live_worker_is_not_stolen(tmp_path):
    with open_desk() as desk:
        desk.create_kb("plain")
        doc = sqlite_store(desk).create_document(
            desk.kb("plain").id, "x.txt", content_type="text/plain", size_bytes=1, content_hash="h"
        )
        with desk.store.write() as conn:  # claimed by a process that is alive: pid 1
            conn.execute("UPDATE kb_documents SET claimed_by = ? WHERE id = ?", (f"{socket.gethostname()}:1", doc.id))
        assert desk.store.unfinished_documents() == []


def test_cancel_leaves_the_rest_for_resume(tmp_path, fake_openai):
    files = {f"n{i:03d}.txt": f"note {i} about tides and harbours" for i in range(200)}
    folder = write_files(tmp_path / "corpus", files)
    with vector_desk(fake_openai) as desk:
        ingestor = desk.ingestor(workers=1)
        sizes = {}

        def on_event(event):
            if event.kind == "queued":
                sizes[event.filename] = event.size
            if event.kind == "ready":
                ingestor.cancel()  # after the first batch is in

        ingestor.on_event = on_event
        report = ingestor.add("docs", [folder])
        assert sizes["n007.txt"] == len(files["n007.txt"])
        assert report.cancelled and len(report.added) + len(report.cancelled) == 200
        assert not report.failed
        conn = desk.store.connection()
        partial = conn.execute(
            "SELECT count(*) FROM kb_documents d WHERE status != 'ready' AND EXISTS "
            "(SELECT 1 FROM kb_chunks c WHERE c.document_id = d.id)"
        ).fetchone()[0]
        assert partial == 0
        finished = desk.ingestor().resume("docs")
        assert sorted(finished.resumed) == sorted(report.cancelled)
        assert {s for s, _ in statuses(desk, "docs").values()} == {"ready"}


def test_a_run_shortens_the_gil_switch_interval_only_while_it_runs(tmp_path):
    import sys

    from kbdesk.ingest.pipeline import SWITCH_INTERVAL

    folder = write_files(tmp_path / "corpus", {f"n{i}.txt": f"note {i} about tides" for i in range(5)})
    before = sys.getswitchinterval()
    during = []
    with open_desk() as desk:
        desk.create_kb("plain")
        report = desk.add("plain", [folder], on_event=lambda event: during.append(sys.getswitchinterval()))
        assert len(report.added) == 5
    assert during and max(during) <= SWITCH_INTERVAL  # the workers and the writer take turns quickly
    assert sys.getswitchinterval() == before  # the interpreter's setting is given back


def test_a_store_failure_while_finishing_fails_those_files_and_the_next_add_finishes_them(tmp_path):
    from kbdesk.errors import StoreError

    files = {f"n{i}.txt": f"note {i} about harbours" for i in range(6)}
    folder = write_files(tmp_path / "corpus", files)
    with open_desk() as desk:
        desk.create_kb("plain")
        store = desk.store
        real = store.finish_documents
        refused: list[int] = []

        def failing(items, **kwargs):
            if items and not refused:  # the first round that makes documents ready
                refused.append(len(items))
                raise StoreError("database is locked")
            return real(items, **kwargs)

        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(store, "finish_documents", failing)
            report = desk.add("plain", [folder], workers=1)
        assert len(report.failed) == refused[0] and all(reason == "database is locked" for _, reason in report.failed)
        assert sorted(report.added + [name for name, _ in report.failed]) == sorted(files)
        rows = {d.filename: d for d in store.list_documents(desk.kb("plain").id)}
        for name, _ in report.failed:
            assert rows[name].status == "error" and rows[name].error_kind == "store"
        again = desk.add("plain", [folder])  # a store failure is tried again without asking
        assert sorted(again.updated + again.added) == sorted(name for name, _ in report.failed)
        assert {d.status for d in store.list_documents(desk.kb("plain").id)} == {"ready"}
