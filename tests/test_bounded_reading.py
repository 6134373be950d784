"""Reading a document costs bounded memory and processor time, never the wall clock's.

A Word body of ~180 MB of XML (7 MB zipped: ordinary paragraphs, not a bomb) is read
a block at a time and stops as soon as its text is over the limit: it fails alone, as
the file's own problem ("too large", not tried again until it changes). Peak memory
and time of such files are measured in bench/busy_ingest.py (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import time
import zipfile

import pytest

import format_builders as fb
from kbdesk.ingest import xml_tree
from kbdesk.ingest.extract import extract_bytes
from kbdesk.ingest.limits import Budget, check_time, clock
from kbdesk.ingest.sections import ExtractionError


@pytest.mark.slow
def test_a_word_body_of_180_mb_fails_alone_as_too_large_and_is_not_retried(tmp_path):
    from kbdesk import open_desk

    desk = open_desk(backend="numpy")  # one backend: what is measured is the reading
    folder = tmp_path / "src"
    folder.mkdir()
    fb.big_docx(folder / "log.docx")
    with zipfile.ZipFile(folder / "log.docx") as z:
        assert z.getinfo("word/document.xml").file_size > 170_000_000
    for i in range(3):
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nnote{i}word is here.\n")
    desk.create_kb("Big", keyword_only=True)
    report = desk.add("Big", [str(folder)])
    reason = "the Word document is too large: more than 20,000,000 characters of text"
    assert report.failed == [("log.docx", reason)]
    assert sorted(report.added) == ["note0.md", "note1.md", "note2.md"]
    [doc] = [d for d in desk.documents("Big") if d.filename == "log.docx"]
    assert (doc.status, doc.error_kind) == ("error", "file")
    again = desk.add("Big", [str(folder)])  # too large by nature: not read again until it changes
    assert again.known_failures == [("log.docx", reason)] and not again.failed
    desk.close()


def test_the_word_body_is_read_a_block_at_a_time(monkeypatch):
    # the cap on what one tree holds applies to one block: a long document of small
    # paragraphs reads, one paragraph too large to hold fails as the file's own problem
    monkeypatch.setattr(xml_tree, "MAX_TREE_ELEMENTS", 2_000)
    many = "".join(f"<w:p><w:r><w:t>paragraph {i}</w:t></w:r></w:p>" for i in range(3_000))
    text = extract_bytes(fb.zipped({"word/document.xml": _document(many)}), "many.docx").text
    assert "paragraph 0" in text and "paragraph 2999" in text
    rows = "".join(f"<w:tr><w:tc><w:p><w:r><w:t>row {i}</w:t></w:r></w:p></w:tc></w:tr>" for i in range(1_000))
    table = extract_bytes(fb.zipped({"word/document.xml": _document(f"<w:tbl>{rows}</w:tbl>")}), "t.docx").text
    assert table.splitlines()[0] == "row 0" and table.splitlines()[-1] == "row 999"  # a table: a row at a time
    huge = "<w:p>" + "".join(f"<w:r><w:t>run {i} </w:t></w:r>" for i in range(1_000)) + "</w:p>"
    with pytest.raises(ExtractionError, match="too large to read"):
        extract_bytes(fb.zipped({"word/document.xml": _document(huge)}), "huge.docx")


def test_a_tree_holds_a_bounded_number_of_elements(monkeypatch):
    monkeypatch.setattr(xml_tree, "MAX_TREE_ELEMENTS", 4_096)
    shapes = "".join(
        f"<p:sp><p:txBody><a:p><a:r><a:t>shape {i}</a:t></a:r></a:p></p:txBody></p:sp>" for i in range(2_000)
    )
    with pytest.raises(ExtractionError, match=r"ppt/slides/slide1.xml is too large to read \(over 4,096 elements"):
        xml_tree.parse(
            f"<p:sld {fb.P} {fb.A}><p:cSld><p:spTree>{shapes}</p:spTree></p:cSld></p:sld>".encode(),
            "ppt/slides/slide1.xml",
        )


def test_the_time_limit_is_processor_time_not_the_wall_clock():
    budget = Budget(seconds=0.3)
    with clock(budget):
        time.sleep(0.6)  # a busy machine: time passes, this thread does not run
        check_time()
        for _ in range(128):
            budget.spend(1)
    spinning = Budget(seconds=0.05)
    with clock(spinning), pytest.raises(ExtractionError, match="of processor time; the next add tries again"):
        while True:  # a hostile document: the thread works all the time
            check_time()


def _document(body: str) -> str:
    return f'<?xml version="1.0"?><w:document {fb.W}><w:body>{body}</w:body></w:document>'


def test_an_unknown_xml_encoding_is_the_file_s_own_failure():
    body = '<?xml version="1.0" encoding="UTF78"?><w:document/>'
    with pytest.raises(ExtractionError, match="declares an unknown encoding"):
        extract_bytes(fb.zipped({"word/document.xml": body}), "odd.docx")


def test_opendocument_content_is_read_a_block_at_a_time(monkeypatch):
    monkeypatch.setattr(xml_tree, "MAX_TREE_ELEMENTS", 2_000)
    rows = "".join(
        f"<table:table-row><table:table-cell><text:p>site {i}</text:p></table:table-cell>"
        f"<table:table-cell><text:p>{i} m</text:p></table:table-cell></table:table-row>"
        for i in range(1_500)
    )
    head = "<table:table-row><table:table-cell><text:p>site</text:p></table:table-cell>"
    head += "<table:table-cell><text:p>depth</text:p></table:table-cell></table:table-row>"
    sheet = f'<table:table table:name="Soundings">{head}{rows}</table:table>'
    ods = fb._odf("spreadsheet", sheet, "application/vnd.oasis.opendocument.spreadsheet")
    [section] = extract_bytes(ods, "deep.ods").sections
    assert section.metadata["sheet"] == "Soundings"
    assert section.text.splitlines()[-1] == "site: site 1499; depth: 1499 m"
    paragraphs = "".join(f"<text:p>paragraph {i}</text:p>" for i in range(3_000))
    text = extract_bytes(fb._odf("text", paragraphs, "application/vnd.oasis.opendocument.text"), "long.odt").text
    assert "paragraph 0" in text and "paragraph 2999" in text


def test_an_epub_chapter_is_inflated_only_as_far_as_its_limit(monkeypatch):
    from kbdesk.ingest import epub_text

    book = fb.epub("lighthousekeeper")
    assert "lighthousekeeper" in extract_bytes(book, "book.epub").text
    monkeypatch.setattr(epub_text, "MAX_CHAPTER_BYTES", 64)
    with pytest.raises(ExtractionError, match=r"EPUB is too large to read \(chapter .* holds over"):
        extract_bytes(book, "book.epub")
