"""Files whose bytes are not what their names say, and structures built to break a
reader (deep MIME, zip features zipfile does not read, a notebook of one huge image):
each is read as what it is or fails alone with a reason a person can act on."""

from __future__ import annotations

import json
import struct

import pytest

from format_builders import docx, epub, zipped
from ingest_support import write_files
from kbdesk.ingest.email_text import MAX_MIME_DEPTH
from kbdesk.ingest.extract import ExtractionError, extract_bytes
from pdf_builders import make_pdf, text_page

END, FREE, FAT = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD


def outlook_msg(subject: str) -> bytes:
    """An Outlook .msg as Outlook writes it: an OLE compound file (version 3, 512-byte
    sectors) with the subject in its ``__substg1.0_0037001F`` stream (UTF-16)."""
    body = subject.encode("utf-16-le").ljust(4096, b"\0")  # at the mini-stream cutoff: in regular sectors
    data_sectors = len(body) // 512
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII",
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        bytes(16),
        0x3E,
        3,
        0xFFFE,
        9,
        6,
        bytes(6),
        0,  # directory sectors (always 0 in version 3)
        1,  # FAT sectors
        1,  # the directory's first sector
        0,
        4096,
        END,  # no mini FAT
        0,
        END,  # no DIFAT sectors
        0,
    ) + struct.pack("<109I", 0, *([FREE] * 108))
    fat = [FAT, END] + [3 + i for i in range(data_sectors - 1)] + [END]
    fat_sector = struct.pack(f"<{len(fat)}I", *fat).ljust(512, b"\xff")

    def entry(name: str, kind: int, child: int, start: int, size: int) -> bytes:
        encoded = (name + "\0").encode("utf-16-le")
        return struct.pack(
            "<64sHBBIII16sIQQIQ", encoded, len(encoded), kind, 1, FREE, FREE, child, bytes(16), 0, 0, 0, start, size
        )

    directory = (
        entry("Root Entry", 5, 1, END, 0)
        + entry("__substg1.0_0037001F", 2, FREE, 2, len(body))
        + bytes(128) * 2  # unused entries
    )
    return header + fat_sector + directory + body


def test_an_outlook_msg_named_eml_is_refused_as_what_it_is(tmp_path, kbdesk_home):
    msg = outlook_msg("Quarterly numbers for the board")
    with pytest.raises(ExtractionError, match=r"^the file is an Outlook \.msg / OLE file, not e-mail"):
        extract_bytes(msg, "board.eml")
    with pytest.raises(ExtractionError, match=r"an Outlook \.msg / OLE file, not e-mail"):
        extract_bytes(msg, "archive.mbox")
    with pytest.raises(ExtractionError, match=r"^the file is an OLE compound file .* not text; kbdesk cannot read it"):
        extract_bytes(msg, "notes.md")
    # through `add`: it fails alone, with that reason, and leaves no chunk of binary
    from kbdesk import open_desk

    folder = write_files(tmp_path / "mail", {"board.eml": msg, "ok.txt": "The board meets on Friday."})
    with open_desk() as desk:
        desk.create_kb("mail", keyword_only=True)
        report = desk.add("mail", [folder])
        assert report.failed == [
            ("board.eml", "the file is an Outlook .msg / OLE file, not e-mail; save the message as .eml")
        ]
        assert report.added == ["ok.txt"]
        assert [h.source for h in desk.search(["mail"], "Quarterly board", mode="keyword").results] == ["ok.txt"]


def test_a_pdf_or_an_office_file_under_another_name_is_read_as_what_it_is():
    pdf = make_pdf([text_page("Heron migration begins in early spring")])
    read = extract_bytes(pdf, "field-notes.txt")
    assert read.content_type == "application/pdf" and "Heron migration begins" in read.text
    word = extract_bytes(docx("the egret count doubled"), "count.txt")
    assert "the egret count doubled" in word.text
    assert extract_bytes(docx("a sheet that is a document"), "misnamed.xlsx").content_type.endswith("document")
    with pytest.raises(ExtractionError, match=r"^the file is a zip archive, not text$"):
        extract_bytes(zipped({"photos/a.txt": "hello"}), "photos.md")


def _nested_eml(depth: int) -> bytes:
    opening = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n' for i in range(depth))
    closing = "".join(f"\n--b{i}--\n" for i in reversed(range(depth)))
    head = "Subject: nested\nFrom: a@example.org\nMIME-Version: 1.0\n"
    return (head + opening + "Content-Type: text/plain\n\nThe kestrel hovers.\n" + closing).encode()


def test_mime_nested_past_the_limit_fails_with_a_reason_and_a_few_levels_still_read():
    with pytest.raises(ExtractionError, match=f"more than {MAX_MIME_DEPTH} levels deep"):
        extract_bytes(_nested_eml(1200), "deep.eml")
    assert "The kestrel hovers." in extract_bytes(_nested_eml(12), "fine.eml").text


def _version(data: bytes, version: int) -> bytes:
    """``data`` (a zip) with every entry saying it needs zip ``version`` to be read."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        struct.pack_into("<H", out, at + 6, version)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def _method(data: bytes, method: int) -> bytes:
    """``data`` (a zip) with every entry compressed by an unknown ``method``."""
    out = bytearray(data)
    for signature, offset in ((b"PK\x01\x02", 10), (b"PK\x03\x04", 8)):
        at = out.find(signature)
        while at >= 0:
            struct.pack_into("<H", out, at + offset, method)
            at = out.find(signature, at + 4)
    return bytes(out)


@pytest.mark.parametrize(("name", "make"), [("report.docx", lambda: docx("x")), ("book.epub", lambda: epub("x"))])
def test_zip_entries_of_an_unknown_version_or_method_fail_with_a_reason(name, make):
    with pytest.raises(ExtractionError, match=r"uses a zip feature kbdesk cannot read \(zip file version 9\.9\)"):
        extract_bytes(_version(make(), 99), name)
    with pytest.raises(ExtractionError) as failed:
        extract_bytes(_method(make(), 99), name)
    assert "NotImplementedError" not in str(failed.value)


def test_a_notebook_of_one_huge_image_is_read_for_its_text():
    image = "iVBORw0KGgoAAAANSUhEUgAA" + "A" * (24 * 1024 * 1024)  # 24 MB of base64 PNG: past 20M characters
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": "# Growth\n\nThe chart shows the heron census."},
            {
                "cell_type": "code",
                "source": "plot(census)",
                "outputs": [{"output_type": "display_data", "data": {"image/png": image, "text/plain": "<Figure>"}}],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    data = json.dumps(notebook).encode()
    read = extract_bytes(data, "census.ipynb", max_bytes=32 * 1024 * 1024)
    assert "The chart shows the heron census." in read.text and "plot(census)" in read.text
    assert "AAAA" not in read.text
