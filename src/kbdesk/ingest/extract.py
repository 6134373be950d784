"""Text extraction: bytes of a file → text in sections, one module per format.

Every failure is an :class:`ExtractionError` whose message is one line for a person;
bad input fails that one document, never the caller. Problems that do not fail the
document (a PDF page that could not be read, an attachment in a format kbdesk does not
read) are listed in ``Extracted.warnings``. A failure that is the machine's (out of
time: :class:`~.sections.ResourceLimit`) is tried again by the next ``add``.

Section text per format (docs/FORMATS.md has the table, with the libraries measured):
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
  :class:`.pdf_text.ExtractionCancelled` (not a failure of the document); pages
  without a text layer (a scan) are read by OCR (:mod:`.ocr`, ``{"page": n,
  "ocr": true, "ocr_confidence": c}``);
- images (:mod:`.image_text`: PNG, JPEG, TIFF, WebP, GIF): OCR through Tesseract in a
  child process with the PDF reader's limits, a section per page of a TIFF, its word
  confidence in the metadata; without Tesseract they fail with how to install it;
- Word (:mod:`.docx_text`), OpenDocument text (:mod:`.opendoc_text`) and RTF
  (:mod:`.rtf_text`): heading blocks as for Markdown; PowerPoint (:mod:`.pptx_text`) and
  OpenDocument presentations: a section per slide ``{"slide": n}``; Excel
  (:mod:`.sheet_text`) and OpenDocument spreadsheets: a section per sheet ``{"sheet":
  name}``, rows as CSV's; EPUB (:mod:`.epub_text`): chapters in reading order, each read
  as HTML ``{"chapter": n}``; e-mail (:mod:`.email_text`): sections per message with its
  headers, attachments in formats kbdesk reads extracted too; notebooks
  (:mod:`.notebook_text`): Markdown and code cells, read as Markdown; code,
  configuration, LaTeX, BibTeX and org-mode (:mod:`.code_text`, :mod:`.config_text`,
  :mod:`.latex_text`, :mod:`.org_text`): sections at definitions, keys and headings;
  subtitles (:mod:`.subtitle_text`): a section per cue, its start as the heading. Their
  title, author and dates go into each section's metadata. Zip-based files are read
  within the limits of :mod:`.zip_parts` and :mod:`.xml_tree`, every format within the
  time and text of :mod:`.limits`.
Which suffix is read by which reader, and how, is one table (:data:`.formats.FORMATS`):
this module looks the file's format up there and runs its reader, on the budget's clock
unless the format runs in a child process of its own (``own_process``). A file whose
bytes are another format than its name says (a PDF, an Office package, an OLE file) is
read as what it is or refused saying so (the table's sniffers, :mod:`.sniff`).
A heading immediately followed by another heading is merged into the next section,
so no section is a bare heading. Every section's text (and heading path) is put in
Unicode NFKC (:func:`kbdesk.textnorm.nfkc`) before anything is chunked: a ligature
("ﬁ") or full-width letter is indexed, and found, by its plain spelling. Decoding
(BOM, UTF-16 without one, a declared charset, UTF-8, a guessed legacy encoding kept as
the sections' ``encoding``; line endings to "\\n") is :mod:`.text_decode`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from kbdesk.ingest.format_types import ChildLimits, Format, Source
from kbdesk.ingest.formats import FORMATS, SUPPORTED_SUFFIXES, format_for, format_of
from kbdesk.ingest.limits import Budget, clock
from kbdesk.ingest.ocr import OcrSetup
from kbdesk.ingest.sections import Extracted, ExtractionError, Section
from kbdesk.ingest.sniff import sniffed
from kbdesk.ingest.text_decode import decode_text
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

_MB = 1024 * 1024
_TEXT_FIELDS = ("title", "author", "subject", "from", "to", "sheet")


def _no_surrogates(text: str) -> str:
    """Surrogate pairs (RTF's \\uN writes characters past U+FFFF as two) joined, a lone
    one replaced: text that can be stored as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _read(fmt: Format, source: Source) -> list[Section]:
    """``fmt``'s reader over ``source``; a legacy encoding the text was read in is the
    sections' ``encoding`` (the document's own property)."""
    sections = fmt.read(source)
    if source.encoding is not None:
        for section in sections:
            section.metadata["encoding"] = source.encoding
    return sections


def _source(data: bytes, budget: Budget, warnings: list[str], limits: ChildLimits) -> Source:
    return Source(data, budget, warnings, limits, _attachment(warnings), _readable)


def _readable(name: str) -> bool:
    return format_for(name) is not None


def _attachment(warnings: list[str]) -> Callable[[bytes, str, Budget], list[Section]]:
    """How an e-mail (or an Office file) reads a file inside it: as the file it is,
    within its budget (PDFs included, in their own process with the default limits)."""

    def read(data: bytes, filename: str, budget: Budget) -> list[Section]:
        fmt = format_for(filename)
        if fmt is None or not fmt.attachment:  # a signature's logo is not read
            raise ExtractionError("not a format kbdesk reads")
        fmt = sniffed(data, fmt, FORMATS)
        return _read(fmt, _source(data, budget, warnings, ChildLimits()))

    return read


def content_type_for(filename: str) -> str | None:
    """The content type kbdesk extracts ``filename`` as, or None if unsupported."""
    fmt = format_for(filename)
    return fmt.content_type if fmt is not None else None


def typed_name(filename: str, content_type: str | None) -> str:
    """A name :func:`extract_bytes` reads as ``content_type``: ``filename`` when its
    suffix says so, else a name with that type's suffix (a web page's name is its URL,
    its type the server's Content-Type)."""
    fmt = format_of(content_type) if content_type is not None else None
    if fmt is None or content_type_for(filename) == content_type:
        return filename
    return "page" + fmt.suffixes[0]


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


def _format_or_raise(filename: str) -> Format:
    fmt = format_for(filename)
    if fmt is None:
        suffix = os.path.splitext(filename)[1].lower()
        raise ExtractionError(f"unsupported file type '{suffix}'" if suffix else "unsupported file type (no extension)")
    return fmt


def extract_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = 10 * _MB,
    pdf_timeout: float = 30.0,
    pdf_memory_mb: int = 512,
    cancelled: Callable[[], bool] | None = None,
    ocr: OcrSetup | None = None,
) -> Extracted:
    """Extract a file on disk; the size is checked before anything is read."""
    name = os.path.basename(os.fspath(path))
    _format_or_raise(name)
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
        data,
        name,
        max_bytes=max_bytes,
        pdf_timeout=pdf_timeout,
        pdf_memory_mb=pdf_memory_mb,
        cancelled=cancelled,
        ocr=ocr,
    )


def extract_bytes(
    data: bytes,
    filename: str,
    *,
    max_bytes: int = 10 * _MB,
    pdf_timeout: float = 30.0,
    pdf_memory_mb: int = 512,
    cancelled: Callable[[], bool] | None = None,
    budget: Budget | None = None,
    ocr: OcrSetup | None = None,
) -> Extracted:
    """Extract ``data`` according to the suffix of ``filename``; raises ExtractionError
    (or ExtractionCancelled when ``cancelled()`` turned true during a PDF). ``budget``:
    the time and text one document may cost (:mod:`.limits`; a fresh one by default).
    ``ocr``: Tesseract as the run uses it (:func:`.ocr.setup_for`; found on PATH when
    not given)."""
    fmt = _format_or_raise(filename)
    _check_size(len(data), max_bytes)
    if not data:
        raise ExtractionError("empty file")
    fmt = sniffed(data, fmt, FORMATS)  # the bytes' own format, whatever the name says (:mod:`.sniff`)
    warnings: list[str] = []
    source = _source(data, budget or Budget(), warnings, ChildLimits(pdf_timeout, pdf_memory_mb, cancelled, ocr))
    if fmt.own_process:  # a child process with its own bounds (the PDF reader, OCR)
        sections = _read(fmt, source)
    else:
        with clock(source.budget):
            sections = _read(fmt, source)
    for section in sections:
        section.text = nfkc(_no_surrogates(section.text))
        meta = section.metadata
        if meta.get("headings"):
            meta["headings"] = [nfkc(h) for h in meta["headings"]]
        for key in _TEXT_FIELDS:
            if isinstance(meta.get(key), str):
                meta[key] = nfkc(meta[key])
    sections = [s for s in sections if s.text.strip()]
    if not sections:
        raise ExtractionError("file has no text")
    return Extracted(
        text="\n\n".join(s.text for s in sections), content_type=fmt.content_type, sections=sections, warnings=warnings
    )
