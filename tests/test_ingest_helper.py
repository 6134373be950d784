"""Extraction and chunking in the helper process: the same documents, the same failures.

A batch of many files is copied, extracted and chunked by ``python -m kbdesk.ingest.helper``
(on another core); these tests hold it to what the run would have made itself.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from pdf_builders import make_pdf, text_page

NOTES = {
    **{
        f"note{i:02d}.md": f"# Note {i}\n\nTides rise {i} times.\n\n## Later\n\n{'More words. ' * (i * 20)}\n"
        for i in range(20)
    },
    "page.html": "<html><body><nav>menu</nav><main><h1>Vacuum</h1><p>Freeze old rows.</p></main></body></html>",
    "table.csv": "name,depth\nreef,12\nshelf,200\n",
    "plain.txt": "plain words " * 400,
    "binary.md": "# looks like a note\n\x00\x01\x02\x03 then bytes",
    "blank.txt": "   \n\t\n",
    "latin.txt": "caf\xe9 au lait",
}


def _write(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        data = text.encode("latin-1") if name == "latin.txt" else text.encode()
        (folder / name).write_bytes(data)


def _items(folder, files):
    return [
        (str(folder / "kb" / f"d{i}_{name}"), (folder / "src" / name).read_bytes(), True, name)
        for i, name in enumerate(files)
    ]


def test_the_helper_makes_what_the_run_would_make(tmp_path):
    from kbdesk.errors import KbdeskError
    from kbdesk.ingest.batch import chunk_sections
    from kbdesk.ingest.extract import extract_bytes
    from kbdesk.ingest.helper import MIN_FILES, Helper

    _write(tmp_path / "src", NOTES)
    items = _items(tmp_path, NOTES)
    assert len(items) >= MIN_FILES
    kb: Any = SimpleNamespace(chunk_size=300, chunk_overlap=50)  # chunk_sections reads only a KB's sizes
    helper = Helper()
    try:
        results = helper.prepare(items, kb.chunk_size, kb.chunk_overlap, 10 * 1024 * 1024)
        assert helper._proc is not None and helper._proc.poll() is None  # it went through the helper
    finally:
        helper.close()
    assert results is not None and len(results) == len(items)
    for (path, data, _fresh, name), result in zip(items, results, strict=True):
        with open(path, "rb") as f:
            assert f.read() == data  # the stored copy, whatever became of the text
        try:
            extracted = extract_bytes(data, name)
        except KbdeskError as exc:
            assert result == ("file", str(exc)), name
            continue
        chunks = chunk_sections(kb, extracted.sections)
        assert result[0] == "ok", name
        _, text, spans, rows = result
        assert (text, spans) == (extracted.text, extracted.spans)
        assert rows == [(c.content, c.token_count, c.metadata, c.content_hash, json.dumps(c.metadata)) for c in chunks]
    kinds = {name: result[0] for (_, _, _, name), result in zip(items, results, strict=True)}
    assert kinds["binary.md"] == kinds["blank.txt"] == "file"
    assert sum(1 for k in kinds.values() if k == "ok") == len(NOTES) - 2


def test_a_copy_that_cannot_be_written_fails_its_file_alone(tmp_path):
    from kbdesk.ingest.helper import Helper

    _write(tmp_path / "src", NOTES)
    items = _items(tmp_path, NOTES)
    blocked = tmp_path / "not-a-folder"
    blocked.write_bytes(b"a file where a folder should be")
    _path, data, fresh, name = items[2]
    items[2] = (str(blocked / "d2_x.md"), data, fresh, name)
    helper = Helper()
    try:
        results = helper.prepare(items, 1000, 200, 10 * 1024 * 1024)
    finally:
        helper.close()
    assert results is not None
    assert results[2][0] == "copy" and results[2][1] > 0 and results[2][2]
    assert results[0][0] == results[3][0] == "ok"


def test_small_batches_and_a_dead_helper_leave_the_work_to_the_run(tmp_path):
    from kbdesk.ingest.helper import MIN_FILES, Helper

    _write(tmp_path / "src", NOTES)
    items = _items(tmp_path, NOTES)
    helper = Helper()
    try:
        assert helper.prepare(items[: MIN_FILES - 1], 1000, 200, 1 << 20) is None and helper._proc is None
        assert helper.prepare(items, 1000, 200, 1 << 20) is not None
        assert helper._proc is not None  # that batch started the helper
        helper._proc.kill()  # the helper dies between two batches
        helper._proc.wait()
        assert helper.prepare(items, 1000, 200, 1 << 20) is None  # not waited for: the run does it
        assert helper._here and helper._proc is None
    finally:
        helper.close()
    assert Helper(process=False).prepare(items, 1000, 200, 1 << 20) is None


def test_a_few_large_files_go_to_the_helper_too(tmp_path):
    from kbdesk.ingest.helper import MIN_BYTES, Helper

    text = ("Long report line about tides and reefs. " * 1000 + "\n\n") * (MIN_BYTES // 40_000 + 1)
    items = [(str(tmp_path / "kb" / f"d{i}_big{i}.txt"), f"{i} {text}".encode(), True, f"big{i}.txt") for i in range(2)]
    assert sum(len(data) for _, data, _, _ in items) >= MIN_BYTES
    helper = Helper()
    try:
        results = helper.prepare(items, 1000, 200, 10 << 20)
        assert helper._proc is not None
    finally:
        helper.close()
    assert results is not None
    assert [r[0] for r in results] == ["ok", "ok"] and all(len(r[3]) > 100 for r in results)


def _stored(desk):
    conn = desk.store.connection()
    chunks = conn.execute(
        "SELECT d.filename, c.chunk_index, c.content, c.token_count, c.metadata, c.content_hash "
        "FROM kb_chunks c JOIN kb_documents d ON d.id = c.document_id "
        "ORDER BY d.filename, c.chunk_index"
    ).fetchall()
    docs = conn.execute(
        "SELECT filename, status, error, error_kind, extracted_text, extracted_sections, chunk_count "
        "FROM kb_documents ORDER BY filename"
    ).fetchall()
    return chunks, docs


@pytest.mark.parametrize("workers", [1, 3])
def test_a_run_through_the_helper_stores_what_a_run_without_it_stores(tmp_path, monkeypatch, workers):
    import kbdesk.ingest.helper as helper_module
    from kbdesk import open_desk

    files = dict(NOTES)
    _write(tmp_path / "src", files)
    (tmp_path / "src" / "paper.pdf").write_bytes(make_pdf([text_page("Sediment cores from the shelf")]))
    outcomes = []
    real = helper_module.Helper.prepare
    through = []

    def spying(self, *args):
        out = real(self, *args)
        through.append(out is not None)
        return out

    monkeypatch.setattr(helper_module.Helper, "prepare", spying)
    for helper in (True, False):
        if not helper:
            monkeypatch.setattr(helper_module, "MIN_FILES", 10_000)  # every batch done by the run itself
        with open_desk(home=tmp_path / f"home-{helper}") as desk:
            desk.create_kb("notes", chunk_size=300, chunk_overlap=50)
            report = desk.add("notes", [tmp_path / "src"], workers=workers)
            assert sorted(name for name, _ in report.failed) == ["binary.md", "blank.txt"]
            assert len(report.added) == len(files) + 1 - 2
            for doc in desk.documents(desk.kb("notes").id):
                assert (desk.files_dir / doc.storage_key).read_bytes() == (tmp_path / "src" / doc.filename).read_bytes()
            assert [r.source for r in desk.search(["notes"], "sediment cores", mode="keyword").results][:1] == [
                "paper.pdf"
            ]
            outcomes.append((sorted(report.failed), _stored(desk)))
        assert any(through) == helper  # the first run went through the helper, the second did not
        through.clear()
    assert outcomes[0] == outcomes[1]
