"""What a file's bytes are, whatever its name says: read it as that, or refuse it saying so.

A file's suffix picks its format (:func:`kbdesk.ingest.formats.format_for`), but names
lie: an Outlook message saved as ``.eml`` is an OLE compound file, a "report.txt" mailed
around is a PDF, a ``.docx`` renamed from ``.doc`` is the old binary format. Before a
reader runs, :func:`sniffed` checks the first bytes:

- an OLE compound file (``D0 CF 11 E0``) — legacy Word/Excel/PowerPoint, an Outlook
  ``.msg``, a password-protected Office file: kbdesk reads none of them, and says which
  it is instead of indexing binary as text (unless the format the name says reads OLE
  files itself, ``reads_ole``: the Office readers say which of those it is);
- each format's own sniffer, in the table's order (:data:`kbdesk.ingest.formats.FORMATS`):
  ``%PDF-`` (:func:`pdf_header`), the part that makes a zip an Office package
  (:func:`zip_part`: ``word/document.xml``, ``xl/workbook.xml``, ``ppt/presentation.xml``),
  an OpenDocument or EPUB ``mimetype`` (:func:`zip_mimetype`): the first that knows the
  bytes is the format they are read as;
- a zip (``PK\\x03\\x04``) no sniffer knows is refused as "a zip archive", unless the
  name says a zip package (its reader says what is wrong with it).

Text formats whose bytes are none of these are left to their reader (which refuses
binary on its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kbdesk.ingest.format_types import ZIP, Format, Probe
from kbdesk.ingest.sections import ExtractionError
from kbdesk.ingest.text_decode import is_binary

OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
PDF_WITHIN = 1024  # readers accept the %PDF- header this far into the file


def sniffed(data: bytes, named: Format, formats: Iterable[Format]) -> Format:
    """The format to read ``data`` as (``named``, the name's, unless its bytes say
    otherwise); :class:`ExtractionError` when they are a format kbdesk does not read."""
    if data.startswith(OLE):
        if named.reads_ole:
            return named  # its reader says it: password-protected, or the older binary format
        raise ExtractionError(
            named.ole_refusal
            or "the file is an OLE compound file (a legacy .doc/.xls/.ppt, an Outlook .msg or a password-protected "
            f"Office file), not {named.refusal_name}; kbdesk cannot read it"
        )
    probe = Probe(data)
    for candidate in formats:
        if candidate.sniff is not None and candidate.sniff(probe):
            return candidate
    if data.startswith(ZIP) and not named.zip_based:
        raise ExtractionError(f"the file is a zip archive, not {named.refusal_name}")
    return named  # a damaged package: its reader says what is wrong with it


def pdf_header(probe: Probe) -> bool:
    """A PDF header first, and a PDF's body after it: its end marker, or bytes that are not
    text (a note that merely starts with "%PDF-1.4" stays a note)."""
    data = probe.data
    at = data.find(b"%PDF-", 0, PDF_WITHIN)
    if at < 0 or data[:at].strip(b" \t\r\n\x00\xef\xbb\xbf"):
        return False
    return b"%%EOF" in data[-4096:] or is_binary(data[at + 5 :])  # (past the header is_binary knows)


def zip_part(name: str) -> Callable[[Probe], bool]:
    """A zip holding the part ``name`` (lower case): an Office package by its main part."""
    return lambda probe: name in probe.zip_names


def zip_mimetype(content_type: str) -> Callable[[Probe], bool]:
    """A zip whose ``mimetype`` part says ``content_type`` (OpenDocument, EPUB)."""
    return lambda probe: probe.zip_mimetype == content_type
