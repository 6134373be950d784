"""Text extraction: what a user gets out of each file type, and how bad files fail.

PDFs are written by hand below (pypdf cannot write text), so every case — good,
truncated, encrypted, image-only, decompression bomb, slow — is built in the test.
"""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pypdf
import pytest

from kbdesk.errors import KbdeskError
from kbdesk.ingest import pdf_worker
from kbdesk.ingest.extract import (
    SUPPORTED_SUFFIXES,
    Extracted,
    ExtractionError,
    content_type_for,
    decode_text,
    extract_bytes,
    extract_file,
)
from kbdesk.ingest.sections import ResourceLimit
from pdf_builders import IMAGE, _stream, bomb_page, encrypt, make_pdf, text_page


def fails(data: bytes, filename: str, **kwargs) -> str:
    with pytest.raises(ExtractionError) as info:
        extract_bytes(data, filename, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message, "errors are one readable line"
    return message


def leftover_workers() -> set[int]:
    """Our child processes that are a PDF worker or an unreaped zombie (Linux /proc)."""
    found: set[int] = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("PPid", "").strip() == str(os.getpid()) and (
            b"pdf_worker" in cmdline or fields.get("State", "").startswith("Z")
        ):
            found.add(int(proc.name))
    return found


# ── types and decoding ──────────────────────────────────────────────────────────────


def test_content_types_and_unsupported_suffix():
    assert content_type_for("Notes.MD") == "text/markdown"
    assert content_type_for("report.pdf") == "application/pdf"
    assert content_type_for("page.htm") == "text/html"
    assert content_type_for("data.tsv") == "text/csv"
    assert content_type_for("a.txt") == "text/plain"
    assert content_type_for("photo.jpg") == "image/jpeg"  # read by OCR (test_ocr.py)
    assert content_type_for("song.mp3") is None and content_type_for("Makefile") is None
    assert {".txt", ".md", ".markdown", ".csv", ".html", ".htm", ".pdf"} <= SUPPORTED_SUFFIXES
    assert fails(b"x", "tool.xyz") == "unsupported file type '.xyz'"
    assert issubclass(ExtractionError, KbdeskError)


def test_decode_text_boms_and_fallbacks():
    assert decode_text("\ufeffcafé".encode("utf-8")) == "café"
    assert decode_text("café".encode("utf-16")) == "café"  # with BOM, either byte order
    assert decode_text(b"\xfe\xff" + "café".encode("utf-16-be")) == "café"
    assert decode_text("café".encode("utf-32")) == "café"
    assert decode_text("prix 5 € – été".encode("cp1252")) == "prix 5 € – été"
    assert decode_text(b"a\x00b") == "ab"
    assert decode_text(bytes(range(256))).startswith("\x01\x02")  # never raises


def test_utf16_and_utf8_bom_text_files():
    utf16 = extract_bytes("Grüße aus Köln\r\nzweite Zeile\r\n".encode("utf-16"), "greeting.txt")
    assert utf16.text == "Grüße aus Köln\nzweite Zeile"
    assert utf16.content_type == "text/plain" and utf16.sections[0].metadata == {}
    bom8 = extract_bytes(b"\xef\xbb\xbfplain words", "a.txt")
    assert bom8.text == "plain words"


def test_nul_bytes_are_removed_not_fatal():
    data = b"A log line with a stray\x00 NUL byte, from a C program.\n" * 5 + b"end\x00\n"
    result = extract_bytes(data, "app.log")
    assert "\x00" not in result.text and "stray NUL byte" in result.text


# ── Markdown, HTML, CSV ─────────────────────────────────────────────────────────────

MARKDOWN = """\
---
title: Field guide
---
Read this first.

# Guide

## Install

Run `pip install kbdesk`.

### On Windows
Use **py** instead.

## Use

| cmd | what |
|-----|------|
| add | ingest |

# Appendix
```
# not a heading (code)
```
"""


def test_markdown_sections_keep_their_heading_path():
    result = extract_bytes(MARKDOWN.encode(), "guide.md")
    assert result.content_type == "text/markdown"
    by_path = {tuple(s.metadata["headings"]): s.text for s in result.sections}
    # front matter is neither a heading nor text: its fields go with every section
    assert by_path[()] == "Read this first."
    assert all(s.metadata["title"] == "Field guide" for s in result.sections)
    # "# Guide" has no text of its own: it is merged into its first subsection
    assert by_path[("Guide", "Install")] == "# Guide\n\n## Install\n\nRun `pip install kbdesk`."
    assert by_path[("Guide", "Install", "On Windows")] == "### On Windows\nUse **py** instead."
    assert "| add | ingest |" in by_path[("Guide", "Use")]  # markdown source kept, table intact
    assert "# not a heading (code)" in by_path[("Appendix",)]
    assert result.text == "\n\n".join(s.text for s in result.sections)


HTML = b"""<!DOCTYPE html><html><head><title>Caf&eacute; &amp; Bar guide</title>
<style>body { color: red }</style><script>var secret = "script-text";</script></head>
<body><svg><title>icon-title</title></svg>
<nav aria-hidden="true">menu-text</nav>
<p>Welcome&nbsp;to   the
   <b>guide</b>.<br>Second line</p>
<h1>Opening hours</h1><p>Mon&ndash;Fri<div hidden>hidden-attr-text</div>
<div style="display : none">display-none-text</div><span style="Visibility:hidden">vis-text</span>
<noscript>noscript-text</noscript><template><p>template-text</p></template>
<h2>Weekend</h2><ul><li>Sat 10&ndash;14<li>Sun closed</ul>
<table><tr><th>Day<th>Open<tr><td>Sat<td>yes</table>
<pre>  keep
    this</pre>
</body></html>"""


def test_html_drops_hidden_text_and_keeps_title_and_headings():
    result = extract_bytes(HTML, "bar.html")
    assert result.content_type == "text/html"
    for gone in (
        "script-text",
        "color: red",
        "menu-text",
        "hidden-attr-text",
        "display-none-text",
        "vis-text",
        "noscript-text",
        "template-text",
        "icon-title",
    ):
        assert gone not in result.text, gone
    assert all(s.metadata["title"] == "Café & Bar guide" for s in result.sections)
    assert result.text.startswith("Café & Bar guide\n\nWelcome to the guide.\nSecond line")
    paths = [s.metadata["headings"] for s in result.sections]
    assert paths == [[], ["Opening hours"], ["Opening hours", "Weekend"]]
    weekend = result.sections[2].text
    assert weekend.startswith("Weekend\n\nSat 10–14\nSun closed")
    assert "Day | Open\nSat | yes" in weekend
    assert "  keep\n    this" in weekend  # <pre> keeps its whitespace
    assert "Mon–Fri" in result.sections[1].text


def test_html_with_nothing_visible_fails():
    assert fails(b"<html><script>x()</script><div hidden>y</div></html>", "a.html") == "HTML has no visible text"


def test_csv_rows_carry_their_header_cp1252_semicolons():
    data = "Name;Ville;Prix\nAlice;Montréal;5 €\nBob;;3\n\n".encode("cp1252")
    result = extract_bytes(data, "prices.csv")
    assert result.content_type == "text/csv"
    assert result.text == "Name: Alice; Ville: Montréal; Prix: 5 €\nName: Bob; Prix: 3"


def test_csv_comma_quotes_and_tabs():
    quoted = b'name,note,age\n"Smith, Jo","line one\nline two",41\n'
    assert extract_bytes(quoted, "people.csv").text == "name: Smith, Jo; note: line one line two; age: 41"
    tabbed = b"id\tcity\n1\tParis\n2\tOslo\n"
    assert extract_bytes(tabbed, "cities.tsv").text == "id: 1; city: Paris\nid: 2; city: Oslo"
    assert fails(b"only,a,header\n", "h.csv") == "CSV has no data rows"


# ── PDF ─────────────────────────────────────────────────────────────────────────────


def test_pdf_text_per_page_with_page_numbers():
    pdf = make_pdf([text_page("Alpha page text"), _stream(b""), text_page("Gamma page", deflate=1)])
    result = extract_bytes(pdf, "doc.pdf")
    assert result.content_type == "application/pdf"
    # the empty middle page yields no section, but numbering still follows the real pages
    assert [(s.metadata, s.text) for s in result.sections] == [
        ({"page": 1}, "Alpha page text"),
        ({"page": 3}, "Gamma page"),
    ]
    assert result.text == "Alpha page text\n\nGamma page"


def test_truncated_and_garbage_pdfs_fail_cleanly():
    pdf = make_pdf([text_page("One"), text_page("Two")])
    assert fails(pdf[: len(pdf) // 2], "cut.pdf").startswith("PDF is damaged")
    assert fails(b"%PDF-1.7\n" + bytes(range(256)) * 40, "junk.pdf").startswith("PDF is damaged")
    assert fails(random.Random(1).randbytes(5000), "random.pdf") == "not a PDF file (no %PDF header)"


def test_encrypted_pdf():
    pdf = make_pdf([text_page("Classified")])
    assert fails(encrypt(pdf, "hunter2"), "locked.pdf") == "PDF is encrypted: it needs a password to open"
    # only an owner password (restricts printing etc.): readable with the empty password
    assert extract_bytes(encrypt(pdf, ""), "owner-only.pdf").text == "Classified"


@pytest.mark.parametrize("algorithm", ["AES-128", "AES-256"])
def test_aes_encrypted_pdf_with_an_empty_open_password_is_read(algorithm):

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(make_pdf([text_page("Quarterly plan")]))))
    writer.encrypt(user_password="", owner_password="owner-secret", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    assert extract_bytes(out.getvalue(), "aes.pdf").text == "Quarterly plan"
    writer.encrypt(user_password="hunter2", owner_password="owner-secret", algorithm=algorithm)
    locked = io.BytesIO()
    writer.write(locked)
    assert fails(locked.getvalue(), "aes-locked.pdf") == "PDF is encrypted: it needs a password to open"


def test_brotli_compressed_pdf_streams_are_read():
    import brotli

    data = brotli.compress(b"BT /F1 12 Tf 72 720 Td (Compressed with Brotli) Tj ET")
    page = b"<< /Length %d /Filter /BrotliDecode >>\nstream\n%s\nendstream" % (len(data), data)
    assert extract_bytes(make_pdf([page]), "brotli.pdf").text == "Compressed with Brotli"


def test_image_only_pdf_is_an_error_not_an_empty_document():
    page = _stream(b"q 200 0 0 200 72 500 cm /Im1 Do Q")
    pdf = make_pdf([page, page], shared=IMAGE, resources=b"<< /XObject << /Im1 3 0 R >> >>")
    # a 1×1 image holds no text: OCR (where Tesseract is installed) finds none, else it says how to install it
    assert fails(pdf, "scan.pdf").startswith("PDF has no extractable text")


def test_decompression_bomb_is_stopped_by_pypdf_limit():
    pdf = make_pdf([bomb_page()])
    assert len(pdf) < 2000
    message = fails(pdf, "bomb.pdf")
    assert "safety limit" in message or "memory" in message


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_decompression_bomb_hits_the_memory_cap():
    message = fails(make_pdf([bomb_page()]), "bomb.pdf", pdf_memory_mb=64)
    assert message == "PDF extraction used more than 64 MB of memory"


def test_one_bad_page_does_not_lose_the_others_and_is_a_warning():
    result = extract_bytes(make_pdf([text_page("Good page"), bomb_page(), text_page("Third")]), "mixed.pdf")
    assert [(s.metadata, s.text) for s in result.sections] == [({"page": 1}, "Good page"), ({"page": 3}, "Third")]
    # the document succeeds, but does not hide that page 2 is missing
    assert len(result.warnings) == 1, result.warnings
    assert result.warnings[0].startswith("page 2 could not be read: ")
    assert "safety limit" in result.warnings[0] or "memory" in result.warnings[0]


def test_pdfs_extract_in_parallel_threads():
    pdfs = [make_pdf([text_page(f"Document {i} page {p}") for p in (1, 2)]) for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        texts = list(pool.map(lambda pdf: extract_bytes(pdf, "d.pdf").text, pdfs))
    assert texts == [f"Document {i} page 1\n\nDocument {i} page 2" for i in range(4)]


@pytest.mark.slow
def test_slow_pdf_is_killed_at_the_time_limit():
    # ~6 KB that takes pypdf several seconds: 500,000 text-show operators on one page
    slow = make_pdf([_stream(b"BT /F1 12 Tf " + b"(x) Tj " * 500_000 + b"ET", deflate=1)])
    before = leftover_workers()
    reason = fails(slow, "slow.pdf", pdf_timeout=1.0)
    # the limit is processor time (the child's RLIMIT_CPU), not the wall clock of a busy machine
    assert reason.startswith("PDF extraction took more than 1 s of processor time; the next add tries again")
    assert "ingest.pdf_timeout" in reason  # what raises the limit
    with pytest.raises(ResourceLimit):  # out of time: tried again by the next add
        extract_bytes(slow, "slow.pdf", pdf_timeout=1.0)
    assert leftover_workers() <= before  # the worker was killed and reaped


@pytest.mark.slow
def test_the_whole_pdf_reaches_a_child_that_starts_reading_late():
    # a child busy elsewhere (a loaded machine) reads its input only after the poll interval;
    # the bytes are more than a pipe holds, so they must keep coming after the first poll
    late = "import sys, time; time.sleep(0.6); print(len(sys.stdin.buffer.read()))"
    data = bytes(range(256)) * 2048  # 512 KiB
    proc = subprocess.Popen(
        [sys.executable, "-c", late], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, _err = pdf_worker._communicate(proc, data, 30.0, lambda: False)
    assert proc.returncode == 0 and out.strip() == str(len(data)).encode()


@pytest.mark.slow
def test_a_pdf_child_that_works_is_not_killed_by_the_wall_clock_one_that_stalls_is():
    def child(code):
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    # working (using processor time) for longer than the backstop, as on a busy machine
    working = child("import time; end = time.time() + 4\nwhile time.time() < end: pass\nprint('done')")
    out, _ = pdf_worker._communicate(working, b"", 1.5, None)
    assert out.strip() == b"done"
    stalled = child("import time; time.sleep(60)")  # no processor time at all: the backstop ends it
    with pytest.raises(pdf_worker.PdfWorkerTimeout, match="made no progress for 1 s"):
        pdf_worker._communicate(stalled, b"", 1.0, None)
    assert stalled.returncode is not None


# ── size, empty, binary, files on disk ──────────────────────────────────────────────


def test_file_over_the_size_limit(tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(11 * 1024 * 1024)
    with pytest.raises(ExtractionError, match=r"^file is 11\.0 MB, over the 10 MB limit$"):
        extract_file(big)
    assert fails(b"x" * 101, "small.md", max_bytes=100) == "file is 101 bytes, over the 100 bytes limit"


def test_empty_and_whitespace_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ExtractionError, match=r"^empty file$"):
        extract_file(empty)
    assert fails(b"", "e.pdf") == "empty file"
    assert fails(b" \r\n\t\n", "blank.md") == "file has no text (only whitespace)"


def test_binary_files_with_text_names():
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
    elf = b"\x7fELF\x02\x01\x01" + b"\x00" * 200
    noise = random.Random(0).randbytes(8192)
    for data, name in ((png, "image.txt"), (elf, "prog.md"), (noise, "dump.csv"), (b"\x00" * 50, "z.html")):
        assert fails(data, name) == "binary file (not text)", name


def test_extract_file_reads_from_disk(tmp_path):
    path = tmp_path / "notes.md"
    path.write_bytes(b"# Notes\n\nbody")
    assert extract_file(path) == Extracted(
        "# Notes\n\nbody", "text/markdown", extract_bytes(b"# Notes\n\nbody", "notes.md").sections
    )
    with pytest.raises(ExtractionError, match=r"^cannot read file"):
        extract_file(tmp_path / "missing.txt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_extract_file_refuses_a_fifo_without_hanging(tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(ExtractionError, match=r"^not a regular file$"):
        extract_file(fifo)


# ── module layout, warnings ─────────────────────────────────────────────────────────


def test_public_api_is_the_same_objects_as_the_format_modules():
    from kbdesk.ingest import extract, sections, text_decode

    assert extract.ExtractionError is sections.ExtractionError
    assert extract.Extracted is sections.Extracted and extract.Section is sections.Section
    assert extract.decode_text is text_decode.decode_text
    assert set(extract.__all__) == {
        "ExtractionError",
        "Section",
        "Extracted",
        "SUPPORTED_SUFFIXES",
        "content_type_for",
        "extract_bytes",
        "extract_file",
        "decode_text",
    }


def test_extracted_warnings_default_to_empty_and_old_constructor_still_works():
    made = Extracted("t", "text/plain", [])
    assert made.warnings == [] and made == Extracted("t", "text/plain", [], [])
    assert Extracted("t", "text/plain", []).warnings is not made.warnings  # not shared
    assert extract_bytes(b"plain words", "a.txt").warnings == []
    assert extract_bytes(make_pdf([text_page("Fine")]), "ok.pdf").warnings == []


def test_page_warnings_are_capped_with_a_summary():
    from kbdesk.ingest.pdf_text import MAX_PAGE_WARNINGS, page_warnings

    errors = [f"page {n}: broken font" for n in range(1, 26)]
    warnings = page_warnings(errors)
    assert warnings[0] == "page 1 could not be read: broken font"
    assert len(warnings) == MAX_PAGE_WARNINGS + 1
    assert warnings[-1] == f"{25 - MAX_PAGE_WARNINGS} more pages could not be read"
    assert page_warnings(["odd message"]) == ["a page could not be read: odd message"]


# ── line endings ────────────────────────────────────────────────────────────────────


def test_decode_text_normalises_windows_and_old_mac_line_endings():
    assert decode_text(b"a\r\nb\rc\n\r\nd") == "a\nb\nc\n\nd"
    assert decode_text("x\r\ny".encode("utf-16")) == "x\ny"
    assert decode_text("caf\xe9\r\n".encode("cp1252")) == "caf\xe9\n"


def test_crlf_paragraphs_come_out_as_blank_line_separated():
    from kbdesk.ingest.chunker import chunk_sections

    result = extract_bytes(b"First paragraph.\r\n\r\nSecond paragraph.\r\rThird (old Mac).\r\n", "p.txt")
    assert result.text == "First paragraph.\n\nSecond paragraph.\n\nThird (old Mac)."
    chunks = chunk_sections(result.sections, chunk_size=20, chunk_overlap=0)
    assert [c.content for c in chunks] == ["First paragraph.", "Second paragraph.", "Third (old Mac)."]


def test_crlf_markdown_csv_and_html_match_their_lf_versions():
    md = MARKDOWN.replace("\n", "\r\n").encode()
    assert extract_bytes(md, "g.md") == extract_bytes(MARKDOWN.encode(), "g.md")
    csv_data = b'name,note\r\n"Jo","line one\r\nline two"\r\nAl,x\r\n'
    assert extract_bytes(csv_data, "a.csv").text == "name: Jo; note: line one line two\nname: Al; note: x"
    assert extract_bytes(HTML.replace(b"\n", b"\r\n"), "b.html") == extract_bytes(HTML, "b.html")
    # a carriage return written as a character reference inside <pre>
    pre = extract_bytes(b"<pre>one&#13;&#10;two&#13;three</pre>", "p.html")
    assert pre.text == "one\ntwo\nthree"


# ── CSV details ─────────────────────────────────────────────────────────────────────


def test_csv_extra_columns_blank_cells_and_unicode_spaces():
    data = "a,b\n1,\u00a0\u2003,extra,\n x\u00a0 y ,\t,,last\n,,\n".encode()
    assert extract_bytes(data, "t.csv").text == "a: 1; column 3: extra\na: x y; column 4: last"
    no_header_names = b" ,\n1,2\n"
    assert extract_bytes(no_header_names, "n.csv").text == "column 1: 1; column 2: 2"


# ── Markdown: the partial parse finds exactly the headings of a whole parse ─────────

_MD_PIECES = [
    # plain blocks: never parsed
    "Plain text.",
    "more text",
    "- item",
    "1. item",
    "  - nested",
    "    indented code",
    "> quote",
    "| a | b |",
    "|---|---|",
    "[ref]: /url",
    "  indented text",
    "<span>x</span>",
    "text -->",
    # could be headings
    "# One",
    "## Two *em*",
    "### `code` & [link](x)",
    "####### seven",
    "   # indented",
    "    # code",
    "\t# tab",
    "Title",
    "===",
    "---",
    "   ---",
    "- # in a list",
    "> # in a quote",
    "#",
    "## closing ##",
    # blocks that go on past blank lines
    "```",
    "~~~",
    "````",
    "```python",
    "- ```",
    "  ```",
    "<!--",
    "-->",
    "<pre>",
    "</pre>",
    "<script>",
    "</script>",
    "<?php",
    "?>",
    "<!DOCTYPE html>",
    "<![CDATA[",
    "]]>",
    "<div>",
    "</div>",
    # deep nesting: markdown-it stops parsing the rest of the document
    "- - - - - - - - - - - deep",
    ">>>>>>>>>>>>>>>>>>>>>> deep",
    "\t\t\t\t\t- deep",
]


def _markdown_documents(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        blocks = [
            "\n".join(
                rng.choice(_MD_PIECES[:13] if rng.random() < 0.7 else _MD_PIECES) for _ in range(rng.randint(1, 4))
            )
            for _ in range(rng.randint(1, 50))
        ]
        yield "".join(b + "\n" * rng.choice([1, 2, 2, 3]) for b in blocks)


def test_markdown_partial_parse_matches_a_whole_parse():
    from kbdesk.ingest.markdown_text import _headings, _headings_whole

    for doc in _markdown_documents(seed=7, count=250):
        assert _headings(doc) == _headings_whole(doc), doc


@pytest.mark.parametrize(
    "doc, expected",
    [
        # a fence that spans a blank line: the "#" line inside is code
        ("```\ncode\n\n# not a heading\n```\n\n# Real\n", ["Real"]),
        ("```\nnever closed\n\n# not a heading\n\ntext\n", []),
        ("~~~~\n```\n\n# inside\n~~~~\n\n## After\n", ["After"]),
        # an HTML comment spanning blank lines, ended mid-line in a later paragraph
        ("<!--\n\n# hidden\n\nsome text -->\n\n# Real\n", ["Real"]),
        ("<script>\n\n# js\n\n</script>\n\n# Real\n", ["Real"]),
        # setext headings, lists that go on after a blank line
        ("Title\n=====\n\nbody\n\nSub\n---\n\nmore\n", ["Title", "Sub"]),
        ("- a\n\n- b\n\n# H\n\n- # nested\n", ["H"]),
        # deep nesting: markdown-it gives up on the rest; so do we
        ("# Before\n\n" + "- " * 12 + "x\n\n# After\n", ["Before"]),
    ],
)
def test_markdown_headings_in_tricky_places(doc, expected):
    from kbdesk.ingest.markdown_text import _headings, _headings_whole

    assert [content for *_, content in _headings(doc)] == expected
    assert _headings(doc) == _headings_whole(doc)


def test_markdown_parses_only_the_pieces_that_can_hold_a_heading(monkeypatch):
    from kbdesk.ingest import markdown_text

    parser = markdown_text._parsers()[0]
    parsed: list[int] = []
    real = parser.parse

    def counted(src, env=None):
        parsed.append(len(src))
        return real(src, env)

    monkeypatch.setattr(parser, "parse", counted)
    body = "\n\n".join(
        ["A paragraph of text.", "- a list\n- of items", "| a | b |\n|---|---|\n| 1 | 2 |", "```\ncode\n```"] * 50
    )
    doc = "\n\n".join(f"## Part {n}\n\n{body}" for n in range(5))
    sections = extract_bytes(doc.encode(), "big.md").sections
    assert [s.metadata["headings"] for s in sections] == [[f"Part {n}"] for n in range(5)]
    assert sum(parsed) < len(doc) / 3


def test_markdown_heading_titles_without_and_with_inline_syntax():
    from kbdesk.ingest.markdown_text import _heading_title

    assert _heading_title("Plain   title\nsecond line") == "Plain title second line"
    assert _heading_title("Use `pip` & *care*") == "Use pip & care"
    assert _heading_title("A [link](http://x) and ![alt](i.png) \\# and &amp;") == "A link and alt # and &"
    assert _heading_title("<b>html</b> stays out") == "html stays out"


def test_a_pdf_read_while_polling_for_cancel_is_read_whole():
    """The ingestion always passes a cancel check: polling it must not break the reading
    of a PDF that takes longer than one poll (the child alone takes that long to start)."""
    from kbdesk.ingest.extract import extract_bytes

    data = make_pdf([text_page(f"page {i} about herons") for i in range(40)])
    out = extract_bytes(data, "long.pdf", cancelled=lambda: False)
    assert [s.metadata["page"] for s in out.sections] == list(range(1, 41))


ATX_LINES = [
    "# T",
    "#",
    "# #",
    "# ###",
    "## Title ##",
    "## Title#",
    "### a # b ###  ",
    "#\tTab title\t#",
    "####### seven",
    "#5 bolt",
    "\\# escaped",
    "# T \\#",
    "# café  ",
    "#  spaced   out  ",
    "# ends with \u00a0",
    "###### six",
    "# a ## b",
    "#  #  #",
    "# x #\t",
    "#hashtag",
    "# T#x #",
    "# \u3000wide",
    "# `code` and *stars*",
]


@pytest.mark.parametrize("line", ATX_LINES)
def test_markdown_heading_lines_read_without_the_parser_read_as_the_parser_reads_them(line):
    from kbdesk.ingest.markdown_text import _headings, _headings_whole

    for doc in (
        line,
        line + "\n",
        "para\n\n" + line + "\n\nafter\n",
        line + "\n  \n\ntext",
        "x\n\n" + line,
        line + "\ntext right after\n",
    ):
        assert _headings(doc) == _headings_whole(doc), doc
