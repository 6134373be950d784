"""Minimal valid documents of every format kbdesk reads, built in code (no third-party files).

Each builder plants ``phrase`` in the document's body and returns the file's bytes.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from email.message import EmailMessage
from pathlib import Path
from xml.sax.saxutils import escape

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
P = 'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = 'xmlns="http://schemas.openxmlformats.org/package/2006/relationships"'


def zipped(parts: Mapping[str, str | bytes], stored_first: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        if stored_first:
            z.writestr(zipfile.ZipInfo(stored_first), parts[stored_first], compress_type=zipfile.ZIP_STORED)
        for name, data in parts.items():
            if name != stored_first:
                z.writestr(name, data)
    return buf.getvalue()


def _rels(*items: tuple[str, str, str]) -> str:
    body = "".join(f'<Relationship Id="{i}" Type="{REL}/{t}" Target="{target}"/>' for i, t, target in items)
    return f'<?xml version="1.0"?><Relationships {PKG_REL}>{body}</Relationships>'


def _core(title: str, author: str) -> str:
    return (
        '<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
        'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/'
        f'terms/"><dc:title>{title}</dc:title><dc:creator>{author}</dc:creator>'
        "<dcterms:created>2024-03-01T10:00:00Z</dcterms:created></cp:coreProperties>"
    )


def docx(phrase: str, heading: str = "Results", title: str = "Quarterly report") -> bytes:
    body = (
        f'<w:p><w:pPr><w:pStyle w:val="Kop1"/></w:pPr><w:r><w:t>{escape(heading)}</w:t></w:r></w:p>'
        f'<w:p><w:r><w:t xml:space="preserve">The survey found </w:t></w:r><w:r><w:t>{escape(phrase)}</w:t></w:r>'
        "<w:r><w:tab/><w:t>in the field.</w:t></w:r><w:r><w:delText>deleted words</w:delText></w:r></w:p>"
        "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Region</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>North</w:t></w:r>"
        "</w:p></w:tc></w:tr></w:tbl>"
    )
    styles = (
        f'<?xml version="1.0"?><w:styles {W}><w:style w:type="paragraph" w:styleId="Kop1">'
        '<w:name w:val="heading 1"/></w:style></w:styles>'
    )
    return zipped(
        {
            "[Content_Types].xml": '<?xml version="1.0"?><Types/>',
            "_rels/.rels": _rels(
                ("rId1", "officeDocument", "word/document.xml"), ("rId2", "core", "docProps/core.xml")
            ),
            "word/document.xml": f'<?xml version="1.0"?><w:document {W}><w:body>{body}</w:body></w:document>',
            "word/styles.xml": styles,
            "docProps/core.xml": _core(title, "Ada Lovelace"),
        }
    )


def pptx(phrase: str, title: str = "Launch plan") -> bytes:
    def slide(head: str, text: str) -> str:
        return (
            f'<?xml version="1.0"?><p:sld {P} {A}><p:cSld><p:spTree>'
            f'<p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>{head}</a:t>'
            f"</a:r></a:p></p:txBody></p:sp><p:sp><p:txBody><a:p><a:r><a:t>{escape(text)}</a:t></a:r></a:p>"
            "</p:txBody></p:sp></p:spTree></p:cSld></p:sld>"
        )

    pres = (
        f'<?xml version="1.0"?><p:presentation {P} {R}><p:sldIdLst><p:sldId id="256" r:id="rId2"/>'
        '<p:sldId id="257" r:id="rId1"/></p:sldIdLst></p:presentation>'
    )
    return zipped(
        {
            "[Content_Types].xml": '<?xml version="1.0"?><Types/>',
            "_rels/.rels": _rels(("rId1", "officeDocument", "ppt/presentation.xml")),
            "ppt/presentation.xml": pres,
            # slide order comes from the list, not the part names: slide2 is the first slide
            "ppt/_rels/presentation.xml.rels": _rels(
                ("rId1", "slide", "slides/slide1.xml"), ("rId2", "slide", "slides/slide2.xml")
            ),
            "ppt/slides/slide2.xml": slide(title, "Opening words"),
            "ppt/slides/slide1.xml": slide("Budget", phrase),
        }
    )


def xlsx(phrase: str) -> bytes:
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    sheet = (
        f'<?xml version="1.0"?><worksheet {ns}><sheetData>'
        '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>'
        '<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>1250.5</v></c></row>'
        '<row r="3"><c r="A3" t="inlineStr"><is><t>Total</t></is></c><c r="B3" s="1"><v>45292</v></c></row>'
        "</sheetData></worksheet>"
    )
    strings = (
        f'<?xml version="1.0"?><sst {ns}><si><t>Item</t></si><si><t>Amount</t></si>'
        f"<si><t>{escape(phrase)}</t></si></sst>"
    )
    styles = (
        f'<?xml version="1.0"?><styleSheet {ns}><cellXfs><xf numFmtId="0"/><xf numFmtId="14"/></cellXfs></styleSheet>'
    )
    book = (
        f'<?xml version="1.0"?><workbook {ns} {R}><sheets><sheet name="Q3" sheetId="1" r:id="rId1"/></sheets>'
        "</workbook>"
    )
    return zipped(
        {
            "[Content_Types].xml": '<?xml version="1.0"?><Types/>',
            "_rels/.rels": _rels(("rId1", "officeDocument", "xl/workbook.xml")),
            "xl/workbook.xml": book,
            "xl/_rels/workbook.xml.rels": _rels(
                ("rId1", "worksheet", "worksheets/sheet1.xml"), ("rId2", "sharedStrings", "sharedStrings.xml")
            ),
            "xl/worksheets/sheet1.xml": sheet,
            "xl/sharedStrings.xml": strings,
            "xl/styles.xml": styles,
        }
    )


ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"'
)


def _odf(kind: str, body: str, mimetype: str) -> bytes:
    meta = (
        f'<?xml version="1.0"?><office:document-meta {ODF_NS}><office:meta><dc:title>Field notes</dc:title>'
        "<meta:initial-creator>Grace Hopper</meta:initial-creator></office:meta></office:document-meta>"
    )
    content = (
        f'<?xml version="1.0"?><office:document-content {ODF_NS}><office:body><office:{kind}>{body}'
        f"</office:{kind}></office:body></office:document-content>"
    )
    return zipped({"mimetype": mimetype, "content.xml": content, "meta.xml": meta}, stored_first="mimetype")


def odt(phrase: str) -> bytes:
    body = (
        '<text:h text:outline-level="1">Methods</text:h>'
        f'<text:p>We measured<text:s text:c="2"/>{escape(phrase)} twice.</text:p>'
        "<table:table><table:table-row><table:table-cell><text:p>Site</text:p></table:table-cell>"
        "<table:table-cell><text:p>Alpha</text:p></table:table-cell></table:table-row></table:table>"
    )
    return _odf("text", body, "application/vnd.oasis.opendocument.text")


def odp(phrase: str) -> bytes:
    body = (
        '<draw:page draw:name="p1"><draw:frame presentation:class="title"><draw:text-box><text:p>Welcome</text:p>'
        '</draw:text-box></draw:frame></draw:page><draw:page draw:name="p2"><draw:frame presentation:class="title">'
        "<draw:text-box><text:p>Plan</text:p></draw:text-box></draw:frame><draw:frame><draw:text-box>"
        f"<text:p>{escape(phrase)}</text:p></draw:text-box></draw:frame></draw:page>"
    )
    return _odf("presentation", body, "application/vnd.oasis.opendocument.presentation")


def ods(phrase: str) -> bytes:
    body = (
        '<table:table table:name="Stock"><table:table-row><table:table-cell><text:p>Item</text:p></table:table-cell>'
        "<table:table-cell><text:p>Count</text:p></table:table-cell></table:table-row><table:table-row>"
        f"<table:table-cell><text:p>{escape(phrase)}</text:p></table:table-cell><table:table-cell><text:p>7</text:p>"
        '</table:table-cell></table:table-row><table:table-row table:number-rows-repeated="1048000">'
        '<table:table-cell table:number-columns-repeated="1024"/></table:table-row></table:table>'
    )
    return _odf("spreadsheet", body, "application/vnd.oasis.opendocument.spreadsheet")


def epub(phrase: str) -> bytes:
    def chapter(head: str, text: str) -> str:
        return (
            '<?xml version="1.0" encoding="utf-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml">'
            f"<head><title>The Book</title></head><body><h1>{head}</h1><p>{escape(text)}</p></body></html>"
        )

    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
        'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>The Book</dc:title><dc:creator>Mary Shelley'
        '</dc:creator></metadata><manifest><item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="c2" href="two.xhtml" media-type="application/xhtml+xml"/></manifest><spine>'
        '<itemref idref="c2"/><itemref idref="c1"/></spine></package>'
    )
    container = (
        '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">'
        '<rootfiles><rootfile full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/></rootfiles>'
        "</container>"
    )
    return zipped(
        {
            "mimetype": "application/epub+zip",
            "META-INF/container.xml": container,
            "OEBPS/book.opf": opf,
            "OEBPS/two.xhtml": chapter("Beginning", "It was a dark night."),
            "OEBPS/one.xhtml": chapter("Ending", phrase),
        },
        stored_first="mimetype",
    )


def rtf(phrase: str) -> str:
    return (
        r"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Arial;}}{\stylesheet{\s1 heading 1;}}"
        r"{\info{\title Memo}{\author Alan Turing}}"
        r"{\pard\s1 Summary\par}"
        r"\pard Caf\'e9 and na\u239?ve: " + phrase + r" \par"
        r"{\*\fldinst HYPERLINK http://x}{\pict\wmetafile8 0123456789abcdef}"
        r"\trowd\cellx1000\cellx2000 Cell one\cell Cell two\cell\row}"
    )


def eml(phrase: str, attachment: tuple[str, bytes] | None = None) -> bytes:
    msg = EmailMessage()
    msg["Subject"] = "Budget meeting"
    msg["From"] = "Ada <ada@example.org>"
    msg["To"] = "team@example.org"
    msg["Date"] = "Mon, 04 Mar 2024 09:00:00 +0000"
    msg.set_content(f"Hello team,\n\nThe plan: {phrase}.\n")
    msg.add_alternative(f"<html><body><p>The plan: {escape(phrase)}.</p></body></html>", subtype="html")
    if attachment:
        name, data = attachment
        msg.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return bytes(msg)


def mbox(phrases: list[str]) -> bytes:
    out = b""
    for i, phrase in enumerate(phrases):
        msg = EmailMessage()
        msg["Subject"] = f"Message {i + 1}"
        msg["From"] = "bob@example.org"
        msg.set_content(f"Text of message {i + 1}: {phrase}\nFrom here on the body goes on.\n")
        body = bytes(msg).replace(b"\nFrom here", b"\n>From here")
        out += b"From bob@example.org Mon Mar  4 09:00:00 2024\n" + body + b"\n"
    return out


def ipynb(phrase: str) -> str:
    return json.dumps(
        {
            "nbformat": 4,
            "metadata": {"language_info": {"name": "python"}, "title": "Analysis"},
            "cells": [
                {"cell_type": "markdown", "source": ["# Analysis\n", "\n", f"We look at {phrase}.\n"]},
                {
                    "cell_type": "code",
                    "source": "print('hello')",
                    "outputs": [
                        {"output_type": "stream", "text": ["hello\n"]},
                        {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo" + "A" * 5000}},
                    ],
                },
            ],
        }
    )


_PLACES = ("harbour", "reef", "estuary", "lagoon", "shoal", "inlet", "cove", "strait")


def big_docx(path: Path, paragraphs: int = 600_000) -> None:
    """A .docx whose word/document.xml is ~180 MB of ordinary paragraphs (~5 MB zipped),
    written a piece at a time (the test never holds it)."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z,
        z.open("word/document.xml", "w") as f,
    ):
        f.write(f'<?xml version="1.0"?><w:document {W}><w:body>'.encode())
        for start in range(0, paragraphs, 2000):
            f.write(
                "".join(
                    f'<w:p w:rsidR="00{i % 7:04X}1A2B" w:rsidRDefault="00C49E"><w:pPr><w:pStyle w:val="BodyText"/>'
                    '<w:spacing w:after="120"/></w:pPr><w:r><w:rPr><w:lang w:val="en-GB"/></w:rPr>'
                    f'<w:t xml:space="preserve">Entry {i}: the tide at the {_PLACES[i % 8]} rose {i % 97} cm, '
                    "as logged in the harbour master record book.</w:t></w:r></w:p>"
                    for i in range(start, min(start + 2000, paragraphs))
                ).encode()
            )
        f.write(b"</w:body></w:document>")
