"""One file's failure is its own: a limit, a crash or a timeout in one file of a batch never
touches what becomes of the others, and failures of the moment are tried again."""

from __future__ import annotations

import pytest

from kbdesk.ingest.sections import ExtractionError, ResourceLimit

NOTES = {f"note{i}.md": f"# Note {i}\n\nword{i}tide is in note {i}.\n" for i in range(6)}


def _failing_extract(real, failures):
    """``extract_bytes`` that raises ``failures[name]`` for the files named there."""

    def extract(data, filename, **kwargs):
        if filename in failures:
            raise failures[filename]
        return real(data, filename, **kwargs)

    return extract


def test_the_helpers_result_for_each_file_is_its_own(tmp_path, monkeypatch):
    from kbdesk.ingest import offload

    files = [("a.md", b"# A\n\nalpha words"), ("slow.md", b"# S\n\nslow words"), ("c.md", b"# C\n\ngamma words")]
    monkeypatch.setattr(
        offload,
        "extract_bytes",
        _failing_extract(offload.extract_bytes, {"slow.md": ResourceLimit("reading took too long; tried again")}),
    )
    items = [(str(tmp_path / f"copy-{name}"), data, True, name) for name, data in files]
    results = offload.prepare_each(items, 300, 50, 1 << 20)
    assert [r[0] for r in results] == ["ok", "resource", "ok"]  # one result per file, in order
    assert "alpha" in results[0][1] and "gamma" in results[2][1]  # not the neighbour's text
    assert results[1][1] == "reading took too long; tried again"


@pytest.fixture
def folder(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name, text in NOTES.items():
        (src / name).write_text(text)
    return src


def _words(desk, kb):
    docs = {d.filename: d for d in desk.documents(kb)}
    found = {}
    for i in range(len(NOTES)):
        hits = desk.search([kb], f"word{i}tide", mode="keyword", threshold=-1).results
        found[f"note{i}.md"] = sorted({h.source for h in hits})
    return docs, found


def test_a_limit_a_crash_and_a_bad_file_fail_alone_and_the_moment_s_failures_are_retried(desk, folder, monkeypatch):
    from kbdesk.ingest import batch

    real = batch.extract_bytes
    failures = {
        "note1.md": ResourceLimit("reading the document took longer than 60 s; the next add tries again"),
        "note2.md": RuntimeError("a reader bug"),
        "note3.md": ExtractionError("the file's own problem"),
    }
    monkeypatch.setattr(batch, "extract_bytes", _failing_extract(real, failures))
    desk.create_kb("Iso", keyword_only=True)
    report = desk.add("Iso", [str(folder)])
    assert dict(report.failed) == {
        "note1.md": "reading the document took longer than 60 s; the next add tries again",
        "note2.md": "internal error: RuntimeError: a reader bug",
        "note3.md": "the file's own problem",
    }
    assert sorted(report.added) == ["note0.md", "note4.md", "note5.md"]
    docs, found = _words(desk, "Iso")
    assert {n: d.error_kind for n, d in docs.items() if d.status == "error"} == {
        "note1.md": "resource",
        "note2.md": "internal",
        "note3.md": "file",
    }
    for name in ("note0.md", "note4.md", "note5.md"):  # each stored with its own text
        assert found[name] == [name]
    monkeypatch.setattr(batch, "extract_bytes", real)
    again = desk.add("Iso", [str(folder)])
    # out of time and internal errors are tried again; the file's own failure waits for a change
    assert sorted(again.added + again.updated + again.resumed) == ["note1.md", "note2.md"]
    assert [name for name, _ in again.known_failures] == ["note3.md"]
    _docs, found = _words(desk, "Iso")
    assert found["note1.md"] == ["note1.md"] and found["note2.md"] == ["note2.md"]


def test_a_crash_while_chunking_one_file_fails_that_file_alone(desk, folder, monkeypatch):
    from kbdesk.ingest import batch

    real = batch.chunk_sections

    def chunk(kb, sections):
        if any("word4tide" in s.text for s in sections):
            raise ValueError("chunker bug")
        return real(kb, sections)

    monkeypatch.setattr(batch, "chunk_sections", chunk)
    desk.create_kb("Chunks", keyword_only=True)
    report = desk.add("Chunks", [str(folder)])
    assert report.failed == [("note4.md", "internal error: ValueError: chunker bug")]
    assert sorted(report.added) == sorted(set(NOTES) - {"note4.md"})


@pytest.mark.slow
def test_a_file_whose_reading_needs_more_memory_than_one_file_may_have_fails_alone(tmp_path):
    from kbdesk.ingest.helper import MIN_FILES, Helper

    items = [
        (str(tmp_path / f"copy{i}.md"), f"# Note {i}\n\nnote{i} words.\n".encode(), True, f"n{i}.md")
        for i in range(MIN_FILES)
    ]
    big = ("many different words here " * 320_000).encode()  # 8 MB of text: tens of MB once read and chunked
    items.insert(5, (str(tmp_path / "copy-big.txt"), big, True, "big.txt"))
    helper = Helper(memory_mb=24)
    try:
        results = helper.prepare(items, 1000, 200, 10 << 20)
        assert helper._proc is not None and helper._proc.poll() is None  # the helper lives on
        again = helper.prepare(items[:5] + items[6:], 1000, 200, 10 << 20)  # and reads the next batch
    finally:
        helper.close()
    assert results is not None and again is not None
    assert results[5] == ("file", "reading the document needs more than 24 MB of memory")
    assert [r[0] for i, r in enumerate(results) if i != 5] == ["ok"] * MIN_FILES
    assert [r[0] for r in again] == ["ok"] * MIN_FILES


def test_a_helper_reply_that_is_not_one_result_per_file_is_not_trusted(tmp_path, monkeypatch):
    from kbdesk.ingest.helper import MIN_FILES, Helper

    items = [(str(tmp_path / f"c{i}.md"), f"# N{i}\n\nwords {i}".encode(), True, f"n{i}.md") for i in range(MIN_FILES)]
    helper = Helper()
    monkeypatch.setattr(helper, "_call", lambda kind, args: [("ok", "t", [], [])] * (len(items) + 1))
    assert helper.prepare(items, 1000, 200, 1 << 20) is None  # the run does the batch itself
    assert helper._here  # and every later one
    helper.close()
