"""Ingestion integrity scenarios, written once and run on both engines.

Each function takes ``open_db`` (a callable returning a fresh desk on the engine under
test: SQLite file or Postgres database), a temporary folder and the loopback fake
provider (used where vectors are involved). ``SCENARIOS`` lists them all:
tests/test_integrity.py runs every one on SQLite, tests/postgres/test_pg_integrity.py
on PostgreSQL + pgvector.
"""

from __future__ import annotations

import os
import threading
import time
import unicodedata
from collections import Counter
from pathlib import Path

from ingest_support import configure_provider, write_files
from kbdesk.errors import SupersededError
from kbdesk.models import ChunkInput
from kbdesk.store.claims import end_claim, new_claim
from kbdesk.store.doc_types import NewDocument

CORPUS = {
    f"area{i % 7}/note{i:03d}.md": f"# Note {i}\n\nHarbour {i} keeps lighthouse number {i * 13}. " * 3
    for i in range(60)
}


def rows_per_path(desk, kb: str) -> Counter:
    return Counter(d.source_path for d in desk.store.list_documents(desk.kb(kb).id))


def assert_one_ready_row_per_file(desk, kb: str, folder: Path, expected: int) -> None:
    docs = desk.store.list_documents(desk.kb(kb).id)
    per_path = Counter(d.source_path for d in docs)
    assert len(docs) == expected, f"{len(docs)} rows for {expected} files"
    assert max(per_path.values()) == 1
    assert {d.status for d in docs} == {"ready"}
    stored = desk.kb(kb)
    assert stored.document_count == expected
    assert stored.chunk_count == sum(d.chunk_count for d in docs)
    files = {desk.store.source_key(p): p for p in folder.rglob("*") if p.is_file()}  # (a team server hides paths)
    for doc in docs:  # every stored copy is the current file's bytes
        assert (desk.files_dir / doc.storage_key).read_bytes() == files[doc.source_path].read_bytes()


def keyword_kb(open_db, name: str = "docs"):
    desk = open_db()
    desk.create_kb(name, keyword_only=True)
    return desk


def vector_kb(open_db, server, name: str = "docs"):
    configure_provider(server)
    desk = open_db()
    desk.create_kb(name, model_id="text-embedding-3-small", provider="fake")
    return desk


# ── concurrency ────────────────────────────────────────────────────────────────
def two_threads_add_the_same_folder(open_db, tmp_path: Path, server) -> None:
    folder = write_files(tmp_path / "corpus", CORPUS)
    desk = keyword_kb(open_db)
    reports, errors = [], []

    def run() -> None:
        try:
            reports.append(desk.add("docs", [folder], workers=2))
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert_one_ready_row_per_file(desk, "docs", folder, len(CORPUS))
    # every file was indexed by exactly one of the two runs; the other saw it done
    done = Counter(name for r in reports for name in r.added)
    assert set(done) == set(CORPUS) and max(done.values()) == 1
    shared = [set(r.by_other) | set(r.unchanged) for r in reports]
    for report, seen in zip(reports, shared, strict=True):
        assert set(report.added) | seen == set(CORPUS)
    assert sorted(desk.add("docs", [folder]).unchanged) == sorted(CORPUS)
    desk.close()


# ── versions ───────────────────────────────────────────────────────────────────
def a_failing_new_version_keeps_the_old_text_marked_stale(open_db, tmp_path: Path, server) -> None:
    folder = write_files(tmp_path / "c", {"plan.md": "# Plan\n\nThe zeppelin leaves at dawn."})
    desk = keyword_kb(open_db)
    assert desk.add("docs", [folder]).added == ["plan.md"]
    first = desk.search(["docs"], "zeppelin", mode="keyword").results[0]
    assert "stale" not in first.metadata
    (folder / "plan.md").write_bytes(b"\x00\x01\x02binary junk" * 50)  # v2: broken
    report = desk.add("docs", [folder], sync=True)
    assert [name for name, _ in report.failed] == ["plan.md"]
    docs = desk.store.list_documents(desk.kb("docs").id)
    assert len(docs) == 1 and docs[0].status == "error" and docs[0].error
    assert docs[0].error_kind == "file" and docs[0].stale
    hit = desk.search(["docs"], "zeppelin", mode="keyword").results[0]  # v1 still findable, marked
    assert hit.metadata["stale"] is True and hit.metadata["indexed_at"]
    assert report.removed == []  # the file is there: --sync keeps it
    (folder / "plan.md").write_text("# Plan\n\nThe airship now leaves at noon.")  # v3: good
    again = desk.add("docs", [folder], sync=True)
    assert again.updated == ["plan.md"] and again.failed == []
    docs = desk.store.list_documents(desk.kb("docs").id)
    assert len(docs) == 1 and docs[0].status == "ready" and not docs[0].stale
    assert desk.search(["docs"], "zeppelin", mode="keyword").results == []
    hit = desk.search(["docs"], "airship", mode="keyword").results[0]
    assert "stale" not in hit.metadata
    assert desk.kb("docs").document_count == 1
    desk.close()


def a_killed_update_chain_ends_with_the_newest_version(open_db, tmp_path: Path, server) -> None:
    """v1 ready; v2 claimed by a runner that died before storing its copy; v3 written."""
    folder = write_files(tmp_path / "c", {"log.txt": "version one mentions quartz."})
    desk = keyword_kb(open_db)
    desk.add("docs", [folder])
    doc = desk.store.list_documents(desk.kb("docs").id)[0]
    (folder / "log.txt").write_text("version two mentions basalt.")
    st = (folder / "log.txt").stat()
    dead = "host-that-died:1:x:y"  # taken below as a runner on another host...
    claim = new_claim()  # ...no: a claim of this process whose run has ended is dead
    taken = desk.store.take_versions(
        [
            NewDocument(
                doc.kb_id,
                doc.filename,
                size_bytes=st.st_size,
                content_hash="0" * 64,
                source_path=doc.source_path,
                source_mtime=st.st_mtime,
                expected_version=doc.version,
            )
        ],
        claim,
    )
    assert taken[0] is not None and taken[0].status == "pending" and dead
    end_claim(claim)  # the run "died": its stored copy still holds v1's bytes
    time.sleep(0.01)
    (folder / "log.txt").write_text("version three mentions granite.")
    report = desk.add("docs", [folder])
    assert report.failed == [] and (report.updated or report.resumed)
    docs = desk.store.list_documents(desk.kb("docs").id)
    assert len(docs) == 1 and docs[0].status == "ready" and docs[0].version > taken[0].version
    assert desk.search(["docs"], "granite", mode="keyword").results
    for word in ("quartz", "basalt"):
        assert desk.search(["docs"], word, mode="keyword").results == []
    assert_one_ready_row_per_file(desk, "docs", folder, 1)
    desk.close()


def a_superseded_runner_cannot_write(open_db, tmp_path: Path, server) -> None:
    folder = write_files(tmp_path / "c", {"a.txt": "alpha"})
    desk = keyword_kb(open_db)
    desk.add("docs", [folder])
    doc = desk.store.list_documents(desk.kb("docs").id)[0]
    slow = new_claim()
    [held] = desk.store.claim_documents([doc], slow)
    end_claim(slow)  # presumed dead...
    fast = new_claim()
    [taken] = desk.store.claim_documents([held], fast)  # ...and taken over
    assert taken.version == held.version + 1
    [late] = desk.store.finish_documents([(doc.id, [ChunkInput("stale words")], None, held.version)])
    assert isinstance(late, SupersededError)
    [late] = desk.store.finish_documents([(doc.id, [ChunkInput("stale words")], None, held.version)], rows=False)
    assert isinstance(late, SupersededError)  # without its row read back, the error all the same
    desk.store.set_statuses(
        [
            __import__("kbdesk.store.doc_types", fromlist=["StatusUpdate"]).StatusUpdate(
                doc.id, "error", error="late", version=held.version
            )
        ]
    )
    assert desk.store.get_document(doc.id).status != "error"  # the late runner's write was dropped
    [quiet] = desk.store.finish_documents([(doc.id, [ChunkInput("fresh words")], None, taken.version)], rows=False)
    assert quiet is None and desk.store.get_document(doc.id).status == "ready"
    [done] = desk.store.finish_documents([(doc.id, [ChunkInput("fresh words")], None, taken.version)])
    assert done.status == "ready" and done.chunk_count == 1
    assert desk.search(["docs"], "fresh", mode="keyword").results
    assert desk.search(["docs"], "stale", mode="keyword").results == []
    end_claim(fast)
    desk.close()


# ── identity is the path, not the bytes ───────────────────────────────────────
def copies_are_their_own_documents(open_db, tmp_path: Path, server) -> None:
    text = "Identical words about a copper kettle. " * 20
    folder = write_files(tmp_path / "c", {"one.txt": text, "other.txt": "Another text entirely about tin."})
    desk = vector_kb(open_db, server)
    desk.add("docs", [folder])
    calls = len(server.embedding_requests)
    (folder / "copy.txt").write_text(text)  # an identical copy under a new name
    report = desk.add("docs", [folder])
    assert report.added == ["copy.txt"] and report.embedded_chunks == 0 and report.cached_chunks > 0
    assert len(server.embedding_requests) == calls  # its vectors came from the cache
    (folder / "other.txt").write_text(text)  # edited so its bytes equal another file's
    report = desk.add("docs", [folder])
    assert report.updated == ["other.txt"]
    hits = desk.search(["docs"], "copper kettle", mode="keyword", limit=10).results
    assert {h.source for h in hits} == {"one.txt", "copy.txt", "other.txt"}
    assert desk.search(["docs"], "tin", mode="keyword").results == []
    assert_one_ready_row_per_file(desk, "docs", folder, 3)
    desk.close()


# ── failures are remembered ────────────────────────────────────────────────────
def failures_are_remembered_until_the_file_changes(open_db, tmp_path: Path, server) -> None:
    folder = write_files(tmp_path / "c", {"good.txt": "fine text", "bad.pdf": b"%PDF-1.4 not really a pdf"})
    desk = keyword_kb(open_db)
    first = desk.add("docs", [folder])
    assert [n for n, _ in first.failed] == ["bad.pdf"]
    second = desk.add("docs", [folder])
    assert second.failed == [] and [n for n, _ in second.known_failures] == ["bad.pdf"]
    assert second.known_failures[0][1] == first.failed[0][1]  # the reason it failed, shown again
    bad = next(d for d in desk.store.list_documents(desk.kb("docs").id) if d.filename == "bad.pdf")
    forced = desk.add("docs", [folder], retry_failed=True)
    assert [n for n, _ in forced.failed] == ["bad.pdf"] and forced.known_failures == []
    os.utime(folder / "bad.pdf", (time.time() + 5, time.time() + 5))  # touched, same bytes: still known
    assert [n for n, _ in desk.add("docs", [folder]).known_failures] == ["bad.pdf"]
    (folder / "bad.pdf").write_text("now a text that pretends to be a pdf")  # changed: tried again
    changed = desk.add("docs", [folder])
    assert [n for n, _ in changed.failed] == ["bad.pdf"] and changed.known_failures == []
    docs = desk.store.list_documents(desk.kb("docs").id)
    assert len(docs) == 2 and next(d for d in docs if d.filename == "bad.pdf").id == bad.id
    desk.close()


def provider_failures_are_retried(open_db, tmp_path: Path, server) -> None:
    folder = write_files(tmp_path / "c", {"a.txt": "POISON alpha text", "b.txt": "beta text"})
    desk = vector_kb(open_db, server)
    server.poison = {"POISON": "context"}  # an input the model refuses on its own
    first = desk.add("docs", [folder])
    assert [n for n, _ in first.failed] == ["a.txt"]
    doc = next(d for d in desk.store.list_documents(desk.kb("docs").id) if d.filename == "a.txt")
    assert doc.error_kind == "provider"
    server.poison = {}
    second = desk.add("docs", [folder])  # not the file's fault: tried again without being asked
    assert second.added == ["a.txt"] and second.known_failures == []
    assert_one_ready_row_per_file(desk, "docs", folder, 2)
    desk.close()


# ── file names ─────────────────────────────────────────────────────────────────
def odd_file_names_fail_or_pass_alone(open_db, tmp_path: Path, server) -> None:
    folder = tmp_path / "names"
    folder.mkdir()
    names = {
        b"tab\there.txt": b"tab text",
        b"new\nline.txt": b"newline text",
        b"esc\x1b]0;PWNED\x07.txt": b"escape text",
        b"caf\xe9.md": b"latin-1 name text",  # not UTF-8
        ("x" * 240 + ".txt").encode(): b"long name text",
        unicodedata.normalize("NFC", "r\u00e9sum\u00e9.txt").encode(): b"composed text",
        unicodedata.normalize("NFD", "r\u00e9sum\u00e9.txt").encode(): b"decomposed text",
        b"plain.txt": b"plain text",
    }
    for raw, data in names.items():
        with open(os.path.join(os.fsencode(folder), raw), "wb") as handle:
            handle.write(data)
    deep = folder.joinpath(*["d" * 200] * 6)  # a relative name of 1,200+ characters
    deep.mkdir(parents=True)
    (deep / "deep.txt").write_text("deep text")
    desk = keyword_kb(open_db)
    report = desk.add("docs", [folder])
    assert report.failed == []
    docs = desk.store.list_documents(desk.kb("docs").id)
    assert len(docs) == len(names) + 1 and len({d.source_path for d in docs}) == len(names) + 1
    long_one = next(d for d in docs if d.filename.endswith("deep.txt"))
    assert "…" in long_one.filename and len(long_one.filename) <= 1000
    assert long_one.source_path == desk.store.source_key(deep / "deep.txt")
    shown = {d.filename for d in docs}
    assert "tab\\there.txt" in shown and "new\\nline.txt" in shown and "esc\\x1b]0;PWNED\\x07.txt" in shown
    assert "caf\\xe9.md" in shown
    for doc in docs:  # each name is one safe line, and each stored copy is the file's bytes
        assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in doc.filename)
        assert (desk.files_dir / doc.storage_key).exists()
    assert desk.search(["docs"], "latin", mode="keyword").results[0].source == "caf\\xe9.md"
    again = desk.add("docs", [folder], sync=True)
    assert sorted(again.unchanged) == sorted(shown) and again.removed == []
    os.unlink(os.path.join(os.fsencode(folder), b"caf\xe9.md"))
    synced = desk.add("docs", [folder], sync=True)
    assert synced.removed == ["caf\\xe9.md"]
    kb_dir = desk.files_dir / "kb" / desk.kb("docs").id
    owned = {Path(d.storage_key).name for d in desk.store.list_documents(desk.kb("docs").id)}
    assert {p.name for p in kb_dir.iterdir()} == owned  # no stored copy outlives its document
    desk.close()


# ── a stopped run ──────────────────────────────────────────────────────────────
class _CancelAfterFirstCall:
    """An in-process embedder that stops the ingestion once its first call is answered."""

    def __init__(self) -> None:
        self.ingestor = None
        self.inputs: list[str] = []

    def embed(self, texts, model, on_input_error="raise"):
        import numpy as np

        from kbdesk.providers import EmbedResult

        self.inputs += list(texts)
        if self.ingestor is not None:
            self.ingestor.cancel()
        rng = np.random.default_rng(7)
        return EmbedResult(vectors=[rng.standard_normal(8).tolist() for _ in texts], calls=1)


def vectors_paid_for_by_a_stopped_run_are_not_embedded_again(open_db, tmp_path: Path, server) -> None:
    """A run stopped (Ctrl-C) or killed after its provider answered keeps those vectors
    staged; the next run uses them, and they leave the staging once their chunks are stored."""
    from kbdesk.ingest.batch import EMBED_GROUP, STAGED

    texts = {f"n{i:03d}.txt": f"note {i} about the estuary and its {i} herons" for i in range(EMBED_GROUP + 30)}
    folder = write_files(tmp_path / "c", texts)
    desk = open_db()
    embedder = _CancelAfterFirstCall()
    desk.embedders.register("stopper", embedder)
    desk.create_kb("docs", model_id="m", provider="stopper")
    ingestor = desk.ingestor(workers=1)
    embedder.ingestor = ingestor
    first = ingestor.add("docs", [folder])
    assert first.cancelled and not first.added  # stopped once the provider answered its first call
    paid = len(embedder.inputs)
    assert 0 < paid < len(texts)
    embedder.ingestor = None
    second = desk.add("docs", [folder])
    assert sorted(second.added + second.resumed) == sorted(texts)
    assert len(embedder.inputs) == len(texts)  # the first call's chunks were not embedded again
    assert second.cached_chunks == paid
    from kbdesk.store.doc_types import text_hash

    assert desk.store.cached_vectors(STAGED + "m", [text_hash(t) for t in texts.values()]) == {}
    desk.close()


SCENARIOS = [
    two_threads_add_the_same_folder,
    a_failing_new_version_keeps_the_old_text_marked_stale,
    a_killed_update_chain_ends_with_the_newest_version,
    a_superseded_runner_cannot_write,
    copies_are_their_own_documents,
    failures_are_remembered_until_the_file_changes,
    provider_failures_are_retried,
    odd_file_names_fail_or_pass_alone,
    vectors_paid_for_by_a_stopped_run_are_not_embedded_again,
]
