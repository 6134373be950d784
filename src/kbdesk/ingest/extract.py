"""Text extraction: bytes of a TXT / MD / CSV / HTML / PDF file → text in sections.

Every failure is an :class:`ExtractionError` whose message is one line for a person;
bad input fails that one document, never the caller. Problems that do not fail the
document (a PDF page that could not be read) are listed in ``Extracted.warnings``.

Section text per format (one module each):
- plain text: the text as is (newlines normalised), one section;
- Markdown (:mod:`.markdown_text`): the *Markdown source* of each heading block
  (heading line included), so tables, lists and code stay readable; metadata
  ``{"headings": [h1, h2, ...]}``;
- HTML (:mod:`.html_text`): rendered plain text per heading block (heading line
  included); metadata ``{"headings": [...], "title": <title>}``; the title is also the
  first line;
- CSV (:mod:`.csv_text`): one line per row, ``header: value; header: value``, one section;
- PDF (:mod:`.pdf_text`): one section per page with text, metadata ``{"page": n}``
  (1-based); parsed in a child process (:mod:`.pdf_worker`). Cancelling: pass
  ``cancelled`` (a callable, polled while a PDF is parsed) or call
  :func:`.pdf_worker.kill_pdf_workers`; either makes the extraction raise
  :class:`.pdf_text.ExtractionCancelled` (not a failure of the document).
A heading immediately followed by another heading is merged into the next section,
so no section is a bare heading. Every section's text (and heading path) is put in
Unicode NFKC (:func:`kbdesk.textnorm.nfkc`) before anything is chunked: a ligature
("ﬁ") or full-width letter is indexed, and found, by its plain spelling. Decoding (BOM,
UTF-8, cp1252; line endings to "\\n") is :mod:`.text_decode`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from kbdesk.ingest.csv_text import extract_csv
from kbdesk.ingest.html_text import extract_html
from kbdesk.ingest.markdown_text import extract_markdown
from kbdesk.ingest.pdf_text import extract_pdf
from kbdesk.ingest.sections import Extracted, ExtractionError, Section
from kbdesk.ingest.text_decode import decode_text, is_binary
from kbdesk.textnorm import nfkc

__all__ = [
    "SUPPORTED_SUFFIXES",
    "Extracted",
    "ExtractionError",
    "Section",
    "content_type_for",
    "decode_text",
    "extract_bytes",
    "extract_file",
]

_TYPES = {
    ".txt": "text/plain",
    ".text": "text/plain",
    # reStructuredText, logs and AsciiDoc are prose read as-is. JSON/XML/YAML are left
    # out: usually data or config (lockfiles, dumps) that would flood a folder import.
    ".rst": "text/plain",
    ".log": "text/plain",
    ".adoc": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    # .tsv is CSV with tabs; the delimiter is sniffed either way
    ".csv": "text/csv",
    ".tsv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "text/html",
    ".pdf": "application/pdf",
}
SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_TYPES)

_MB = 1024 * 1024

_TEXT_EXTRACTORS = {"text/markdown": extract_markdown, "text/html": extract_html, "text/csv": extract_csv}


def content_type_for(filename: str) -> str | None:
    """The content type kbdesk extracts ``filename`` as, or None if unsupported."""
    return _TYPES.get(os.path.splitext(filename)[1].lower())


def _size(n: int, *, whole: bool = False) -> str:
    for unit, scale in (("MB", _MB), ("KB", 1024)):
        if n >= scale:
            return f"{n // scale} {unit}" if whole and n % scale == 0 else f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _check_size(size: int, max_bytes: int) -> None:
    if size > max_bytes:
        shown, limit = _size(size), _size(max_bytes, whole=True)
        (a, unit_a), (b, unit_b) = shown.split(), limit.split()
        if unit_a == unit_b and float(a) == float(b):  # "10.0 MB" over "10 MB" says nothing
            shown, limit = f"{size:,} bytes", f"{max_bytes:,}-byte"
        raise ExtractionError(f"file is {shown}, over the {limit} limit")


def _type_or_raise(filename: str) -> str:
    ctype = content_type_for(filename)
    if ctype is None:
        suffix = os.path.splitext(filename)[1].lower()
        raise ExtractionError(f"unsupported file type '{suffix}'" if suffix else "unsupported file type (no extension)")
    return ctype


def extract_file(
    path,
    *,
    max_bytes: int = 10 * _MB,
    pdf_timeout: float = 30.0,
    pdf_memory_mb: int = 512,
    cancelled: Callable[[], bool] | None = None,
) -> Extracted:
    """Extract a file on disk; the size is checked before anything is read."""
    name = os.path.basename(os.fspath(path))
    _type_or_raise(name)
    try:
        # O_NONBLOCK: opening a FIFO must not hang; it is refused just below
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ExtractionError("not a regular file")
            _check_size(st.st_size, max_bytes)
            data = f.read(max_bytes + 1)  # the file may have grown since fstat
    except OSError as exc:
        raise ExtractionError(f"cannot read file ({exc.strerror or exc})") from None
    return extract_bytes(
        data, name, max_bytes=max_bytes, pdf_timeout=pdf_timeout, pdf_memory_mb=pdf_memory_mb, cancelled=cancelled
    )


def extract_bytes(
    data: bytes,
    filename: str,
    *,
    max_bytes: int = 10 * _MB,
    pdf_timeout: float = 30.0,
    pdf_memory_mb: int = 512,
    cancelled: Callable[[], bool] | None = None,
) -> Extracted:
    """Extract ``data`` according to the suffix of ``filename``; raises ExtractionError
    (or ExtractionCancelled when ``cancelled()`` turned true during a PDF)."""
    ctype = _type_or_raise(filename)
    _check_size(len(data), max_bytes)
    if not data:
        raise ExtractionError("empty file")
    warnings: list[str] = []
    if ctype == "application/pdf":
        sections, warnings = extract_pdf(data, pdf_timeout, pdf_memory_mb, cancelled)
    else:
        if is_binary(data):
            raise ExtractionError("binary file (not text)")
        text = decode_text(data)
        if not text.strip():
            raise ExtractionError("file has no text (only whitespace)")
        extractor = _TEXT_EXTRACTORS.get(ctype)
        sections = extractor(text) if extractor else [Section(text.strip(), {})]
    for section in sections:
        section.text = nfkc(section.text)
        if section.metadata.get("headings"):
            section.metadata["headings"] = [nfkc(h) for h in section.metadata["headings"]]
        if section.metadata.get("title"):
            section.metadata["title"] = nfkc(section.metadata["title"])
    return Extracted(
        text="\n\n".join(s.text for s in sections), content_type=ctype, sections=sections, warnings=warnings
    )
