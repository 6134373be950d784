"""What a file's bytes are, whatever its name says: read it as that, or refuse it saying so.

A file's suffix picks its reader (:func:`kbdesk.ingest.extract.content_type_for`), but
names lie: an Outlook message saved as ``.eml`` is an OLE compound file, a "report.txt"
mailed around is a PDF, a ``.docx`` renamed from ``.doc`` is the old binary format.
Before a reader runs, the first bytes are checked for three signatures:

- ``%PDF-`` — read as a PDF, whatever the name;
- a zip (``PK\\x03\\x04``) — read as the Office, OpenDocument or EPUB package its parts
  say it is (``word/document.xml``, ``xl/workbook.xml``, ``ppt/presentation.xml``, an
  OpenDocument or EPUB ``mimetype``); another zip is refused as "a zip archive";
- an OLE compound file (``D0 CF 11 E0``) — legacy Word/Excel/PowerPoint, an Outlook
  ``.msg``, a password-protected Office file: kbdesk reads none of them, and says which
  it is instead of indexing binary as text.

Text formats whose bytes are none of these are left to their reader (which refuses
binary on its own).
"""

from __future__ import annotations

import io
import zipfile

from kbdesk.ingest.sections import ExtractionError
from kbdesk.ingest.text_decode import is_binary

PDF_TYPE = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EPUB = "application/epub+zip"
OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP = b"PK\x03\x04"
PDF_WITHIN = 1024  # readers accept the %PDF- header this far into the file
_EMAIL = ("message/rfc822", "application/mbox")
_PACKAGE_PARTS = (("word/document.xml", DOCX), ("ppt/presentation.xml", PPTX), ("xl/workbook.xml", XLSX))
_MIMETYPES = (
    "application/vnd.oasis.opendocument.text",
    "application/vnd.oasis.opendocument.presentation",
    "application/vnd.oasis.opendocument.spreadsheet",
    EPUB,
)
KINDS = {
    "message/rfc822": "e-mail",
    "application/mbox": "a mailbox",
    PDF_TYPE: "a PDF",
    DOCX: "a Word .docx file",
    PPTX: "a PowerPoint .pptx file",
    XLSX: "an Excel .xlsx file",
    EPUB: "an EPUB book",
    "application/x-ipynb+json": "a notebook",
    "application/rtf": "RTF",
}


def sniffed(data: bytes, ctype: str) -> str:
    """The content type to read ``data`` as (``ctype``, the name's, unless its bytes say
    otherwise); :class:`ExtractionError` when they are a format kbdesk does not read."""
    what = KINDS.get(ctype, "text" if ctype.startswith("text/") else "a document of its kind")
    if data.startswith(OLE):
        if ctype in (DOCX, PPTX, XLSX):
            return ctype  # its reader says it: password-protected, or the older binary format
        if ctype in _EMAIL:
            raise ExtractionError("the file is an Outlook .msg / OLE file, not e-mail; save the message as .eml")
        raise ExtractionError(
            "the file is an OLE compound file (a legacy .doc/.xls/.ppt, an Outlook .msg or a password-protected "
            f"Office file), not {what}; kbdesk cannot read it"
        )
    if ctype != PDF_TYPE and _is_pdf(data):
        return PDF_TYPE
    if data.startswith(ZIP):
        found = _package(data)
        if found is None:
            if ctype in (DOCX, PPTX, XLSX, EPUB, *_MIMETYPES):
                return ctype  # its reader says what is wrong with it (a damaged package)
            raise ExtractionError(f"the file is a zip archive, not {what}")
        return found
    return ctype


def _is_pdf(data: bytes) -> bool:
    """A PDF header first, and a PDF's body after it: its end marker, or bytes that are not
    text (a note that merely starts with "%PDF-1.4" stays a note)."""
    at = data.find(b"%PDF-", 0, PDF_WITHIN)
    if at < 0 or data[:at].strip(b" \t\r\n\x00\xef\xbb\xbf"):
        return False
    return b"%%EOF" in data[-4096:] or is_binary(data[at + 5 :])  # (past the header is_binary knows)


def _package(data: bytes) -> str | None:
    """The Office, OpenDocument or EPUB type of a zip, from its parts; None when it is none."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = {name.lower() for name in archive.namelist()[:50_000]}
            mimetype = b""
            if "mimetype" in names:
                info = archive.getinfo(next(n for n in archive.namelist() if n.lower() == "mimetype"))
                if info.file_size <= 200 and info.compress_size <= 1024:
                    mimetype = archive.read(info)
    except Exception:  # noqa: BLE001 - a damaged or odd zip: left to the reader the name picks
        return None
    for part, kind in _PACKAGE_PARTS:
        if part in names:
            return kind
    text = mimetype.decode("ascii", "replace").strip()
    return text if text in _MIMETYPES else None
