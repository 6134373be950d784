"""Office details that used to be lost, each on a real public test file where one exists
(tests/real_files/README.md says where each comes from)."""

from __future__ import annotations

from pathlib import Path

import pytest

from format_builders import ODF_NS, zipped
from kbdesk.ingest.extract import extract_bytes, extract_file
from kbdesk.ingest.number_formats import formatted

REAL = Path(__file__).parent / "real_files"


def test_a_word_table_row_inside_a_content_control_is_read():
    text = extract_file(REAL / "tika-3816.docx").text
    assert "Note | Details" in text
    assert "Choose an item. | Here is just a sample" in text


def test_excel_cell_comments_are_read_after_the_sheets_rows():
    (sheet,) = extract_file(REAL / "SimpleWithComments.xlsx").sections
    lines = sheet.text.split("\n")
    assert lines[-3:] == [
        "Comment B1: Yegor Kozlov: first cell",
        "Comment B2: Yegor Kozlov: second cell",
        "Comment B3: Yegor Kozlov: third cell",
    ]


def test_opendocument_cell_comments_are_read_with_their_cell():
    note = (
        "<office:annotation><dc:creator>Ann</dc:creator><text:p>Check the lighthouse</text:p>"
        "<text:p>figures again</text:p></office:annotation>"
    )
    body = (
        '<table:table table:name="Budget"><table:table-row><table:table-cell><text:p>item</text:p></table:table-cell>'
        "<table:table-cell><text:p>cost</text:p></table:table-cell></table:table-row>"
        '<table:table-row table:number-rows-repeated="2"><table:table-cell table:number-columns-repeated="2"/>'
        "</table:table-row><table:table-row><table:table-cell><text:p>lamp</text:p></table:table-cell>"
        f"<table:table-cell>{note}<text:p>12</text:p></table:table-cell></table:table-row></table:table>"
    )
    content = (
        f'<?xml version="1.0"?><office:document-content {ODF_NS}><office:body><office:spreadsheet>{body}'
        "</office:spreadsheet></office:body></office:document-content>"
    )
    data = zipped(
        {"mimetype": "application/vnd.oasis.opendocument.spreadsheet", "content.xml": content},
        stored_first="mimetype",
    )
    (sheet,) = extract_bytes(data, "budget.ods").sections
    assert sheet.text.split("\n") == [
        "Sheet Budget",
        "item: lamp; cost: 12",
        "Comment B4: Check the lighthouse figures again",
    ]


def test_excel_numbers_read_as_their_format_shows_them():
    text = extract_file(REAL / "Formatting.xlsx").text
    assert "nn.nnn; column 2: 10.520" in text and "nn.n; column 2: 10.5\n" in text
    assert "dd/mm/yyyy; column 2: 2006-11-24" in text


@pytest.mark.parametrize(
    ("raw", "code", "shown"),
    [
        ("0.256", "0.0%", "25.6%"),
        ("0.5", "0%", "50%"),
        ("123", "00000", "00123"),
        ("0.604166666666", "h:mm", "14:30"),
        ("0.604166666666", "h:mm:ss AM/PM", "14:30:00"),
        ("45000.5", "yyyy-mm-dd h:mm", "2023-03-15 12:00"),
        ("45000", "d-mmm-yy", "2023-03-15"),
        ("10.52", '"£"#,##0.000;[Red]-"£"#,##0.000', "10.520"),
        ("1.5", "[h]:mm:ss", "1.5"),
        ("0.1", "General", "0.1"),
        ("2", "# ?/?", "2"),
    ],
)
def test_a_number_format_is_drawn_as_excel_shows_it(raw, code, shown):
    assert formatted(raw, code) == shown


def test_ruby_readings_do_not_split_the_words_they_annotate():
    from format_builders import W, _rels

    assert extract_file(REAL / "61470.docx").text == "東京"  # not とうきょう東京

    ruby = (
        "<w:p><w:r><w:ruby><w:rubyPr/><w:rt><w:r><w:t>かかく</w:t></w:r></w:rt>"
        "<w:rubyBase><w:r><w:t>価格</w:t></w:r></w:rubyBase></w:ruby></w:r><w:r><w:t>設定</w:t></w:r></w:p>"
    )
    data = zipped(
        {
            "[Content_Types].xml": '<?xml version="1.0"?><Types/>',
            "_rels/.rels": _rels(("rId1", "officeDocument", "word/document.xml")),
            "word/document.xml": f'<?xml version="1.0"?><w:document {W}><w:body>{ruby}</w:body></w:document>',
        }
    )
    assert extract_bytes(data, "price.docx").text == "価格設定"
    odt_ruby = (
        "<text:p><text:ruby><text:ruby-base>価格</text:ruby-base><text:ruby-text>かかく</text:ruby-text>"
        "</text:ruby>設定</text:p>"
    )
    content = (
        f'<?xml version="1.0"?><office:document-content {ODF_NS}><office:body><office:text>{odt_ruby}'
        "</office:text></office:body></office:document-content>"
    )
    odt = zipped(
        {"mimetype": "application/vnd.oasis.opendocument.text", "content.xml": content}, stored_first="mimetype"
    )
    assert extract_bytes(odt, "price.odt").text == "価格設定"


def test_an_epub_page_drawn_as_inline_svg_is_read():
    from format_builders import epub

    book = epub("placeholder")
    page = (
        '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>p</title>'
        '</head><body><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100"><image href="p1.png"/>'
        '<text x="10" y="20">The lighthouse <tspan>keeper</tspan></text><text x="10" y="40">waves</text></svg>'
        "</body></html>"
    )
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(book)) as z:
        parts = {name: z.read(name) for name in z.namelist()}
    parts["OEBPS/one.xhtml"] = page.encode()
    sections = extract_bytes(zipped(parts, stored_first="mimetype"), "comic.epub").sections
    assert sections[-1].text == "The lighthouse keeper\nwaves"
    assert sections[-1].metadata["chapter"] == 2


def test_text_on_a_slide_master_is_read_once_and_its_prompts_are_not():
    sections = extract_file(REAL / "WithMaster.pptx").sections
    master = sections[-1]
    assert master.metadata["headings"] == ["Slide master"]
    assert master.text == "Slide master\n\nThis text comes from the Master Slide"
    whole = "\n".join(s.text for s in sections)
    assert "Click to edit Master" not in whole and whole.count("This text comes from the Master Slide") == 1


def _with_part(package: bytes, name: str, data: bytes) -> bytes:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(package)) as z:
        parts: dict[str, str | bytes] = {n: z.read(n) for n in z.namelist()}
    parts[name] = data
    return zipped(parts)


def test_a_document_embedded_in_an_office_file_is_read_under_its_name():
    from format_builders import docx, pptx, xlsx

    report = _with_part(docx("the survey"), "word/embeddings/Budget.xlsx", xlsx("lighthouse lamps"))
    sections = extract_bytes(report, "report.docx").sections
    assert sections[-1].metadata["headings"][0] == "Budget.xlsx"
    assert "lighthouse lamps" in sections[-1].text
    deck = _with_part(pptx("launch"), "ppt/embeddings/Notes.docx", docx("harbour walls"))
    assert "harbour walls" in extract_bytes(deck, "deck.pptx").text
    # embedding inside embedding is followed a few levels, not without end
    doll = docx("level zero")
    for level in range(1, 6):
        doll = _with_part(docx(f"level {level}"), "word/embeddings/inner.docx", doll)
    text = extract_bytes(doll, "doll.docx").text
    assert "level 5" in text and "level 2" in text and "level 1" not in text and "level zero" not in text


def test_a_charts_own_data_workbook_is_not_read_again_as_an_embedded_document():
    text = extract_file(REAL / "bar-chart.pptx").text
    assert "Sales: 1st Qtr" in text  # the chart, with its data
    assert "To resize chart data range" not in text and "Sheet Sheet1" not in text


def test_word_altchunks_in_html_rtf_and_plain_text_are_read():
    from format_builders import R, W, _rels

    body = (
        '<w:p><w:r><w:t>Before the imports.</w:t></w:r></w:p><w:altChunk r:id="rId1"/>'
        '<w:altChunk r:id="rId2"/><w:altChunk r:id="rId3"/>'
    )
    data = zipped(
        {
            "[Content_Types].xml": '<?xml version="1.0"?><Types/>',
            "_rels/.rels": _rels(("rId1", "officeDocument", "word/document.xml")),
            "word/document.xml": f'<?xml version="1.0"?><w:document {W} {R}><w:body>{body}</w:body></w:document>',
            "word/_rels/document.xml.rels": _rels(
                ("rId1", "aFChunk", "chunk1.html"), ("rId2", "aFChunk", "chunk2.rtf"), ("rId3", "aFChunk", "chunk3.txt")
            ),
            "word/chunk1.html": "<html><body><p>Imported lighthouse page.</p></body></html>",
            "word/chunk2.rtf": r"{\rtf1\ansi {\fonttbl{\f0 Arial;}}\f0 Imported harbour memo.\par}",
            "word/chunk3.txt": "Imported tide table.",
        }
    )
    text = extract_bytes(data, "imports.docx").text
    for phrase in (
        "Before the imports.",
        "Imported lighthouse page.",
        "Imported harbour memo.",
        "Imported tide table.",
    ):
        assert phrase in text
