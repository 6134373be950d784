"""The formats kbdesk reads: one table, :data:`FORMATS`, and what is asked of it.

Each :class:`~.format_types.Format` declares its suffixes, content type, reader, content
sniffer and how it is run (its own child process or not, read inside an e-mail or not,
the Content-Types a web server names it by). Everything that decides what kbdesk reads
asks this table: :mod:`.extract` dispatches from it, :mod:`.sniff` tries its sniffers,
a folder walk and ``kbdesk watch`` (:mod:`.folders`) take the files whose suffix it
knows, the ingestion run keeps its ``own_process`` formats out of the helper process,
a fetched page's Content-Type is looked up in it, the TUI and ``kbdesk serve`` list its
suffixes; tests/test_format_registry.py checks docs/FORMATS.md against it.

Adding a format is one entry here plus its reader (a module of its own): subtitles
(:mod:`.subtitle_text`) were added so. Code is a family of entries, one line per language
(:func:`_code`: ``text/x-<language>``, the one code reader with that language's rules);
configuration, LaTeX, BibTeX and org-mode are entries like any other. An entry's reader
says how its bytes are decoded: :func:`~.format_types.on_text` (BOM, UTF-16, UTF-8, a
guessed legacy encoding kept as the sections' ``encoding``) or, for markup that declares
its charset (HTML, XML), :func:`~.format_types.on_markup`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

from kbdesk.ingest.code_text import extract_code
from kbdesk.ingest.config_text import extract_ini, extract_json, extract_toml, extract_xml, extract_yaml
from kbdesk.ingest.csv_text import extract_csv
from kbdesk.ingest.docx_text import extract_docx
from kbdesk.ingest.email_text import extract_eml, extract_mbox
from kbdesk.ingest.epub_text import extract_epub
from kbdesk.ingest.format_types import Attachment, Format, Reader, Source, on_markup, on_text
from kbdesk.ingest.html_main import extract_page
from kbdesk.ingest.image_text import extract_image
from kbdesk.ingest.latex_text import extract_bibtex, extract_latex
from kbdesk.ingest.limits import Budget
from kbdesk.ingest.markdown_text import extract_markdown
from kbdesk.ingest.notebook_text import extract_notebook
from kbdesk.ingest.ooxml_embedded import embedded_sections
from kbdesk.ingest.opendoc_text import extract_opendocument
from kbdesk.ingest.org_text import extract_org
from kbdesk.ingest.pdf_text import extract_pdf
from kbdesk.ingest.pptx_text import extract_pptx
from kbdesk.ingest.rtf_text import extract_rtf
from kbdesk.ingest.sections import ExtractionError, Section
from kbdesk.ingest.sheet_text import extract_xlsx
from kbdesk.ingest.sniff import pdf_header, zip_mimetype, zip_part
from kbdesk.ingest.subtitle_text import extract_srt, extract_vtt

__all__ = [
    "FORMATS",
    "OWN_PROCESS",
    "SUPPORTED_SUFFIXES",
    "Format",
    "format_for",
    "format_of",
    "media_types",
    "suffix_list",
]

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODT = "application/vnd.oasis.opendocument.text"
ODP = "application/vnd.oasis.opendocument.presentation"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
EPUB = "application/epub+zip"


# ── readers that need more than text ────────────────────────────────────────────────


def _plain(text: str) -> list[Section]:
    return [Section(text.strip(), {})]


def _pdf(source: Source) -> list[Section]:
    limits = source.limits
    sections, warnings = extract_pdf(source.data, limits.seconds, limits.memory_mb, limits.cancelled, limits.ocr)
    source.warnings.extend(warnings)
    return sections


def _image(source: Source) -> list[Section]:
    limits = source.limits
    sections, warnings = extract_image(source.data, limits.seconds, limits.memory_mb, limits.cancelled, limits.ocr)
    source.warnings.extend(warnings)
    return sections


def _notebook(source: Source) -> list[Section]:
    # a notebook counts the text it keeps, not its images' base64; JSON is UTF-8 by its format
    return extract_notebook(source.text(count=False, keep_encoding=False), source.budget)


def _office(reader: Callable[[bytes, Budget], list[Section]]) -> Reader:
    """An Office package's reader, then the documents embedded in it (:mod:`.ooxml_embedded`)."""

    def read(source: Source) -> list[Section]:
        own = reader(source.data, source.budget)
        return own + embedded_sections(source.data, source.budget, source.warnings, _inner(source), source.readable)

    return read


def _opendocument(source: Source) -> list[Section]:
    return extract_opendocument(source.data, source.budget)


def _mail(reader: Callable[[bytes, Budget, list[str], Attachment | None], list[Section]]) -> Reader:
    """An e-mail reader, its attachments read as the files they are."""
    return lambda source: reader(source.data, source.budget, source.warnings, _inner(source))


def _code(language: str, *suffixes: str) -> Format:
    """A programming language's entry: ``text/x-<language>``, read by the code reader
    with that language's rules (:func:`.code_text.extract_code`)."""
    return Format(language, f"text/x-{language}", suffixes, on_text(partial(extract_code, language=language)))


def _inner(source: Source) -> Attachment:
    if source.attachment is None:
        raise ExtractionError("files inside this one cannot be read here")
    return source.attachment


# ── the table ───────────────────────────────────────────────────────────────────────

FORMATS: tuple[Format, ...] = (
    # reStructuredText, logs and AsciiDoc are prose read as-is
    Format(
        "text", "text/plain", (".txt", ".text", ".rst", ".log", ".adoc"), on_text(_plain), media_types=("text/plain",)
    ),
    Format(
        "Markdown",
        "text/markdown",
        (".md", ".markdown"),
        on_text(extract_markdown),
        media_types=("text/markdown", "text/x-markdown"),
    ),
    # .tsv is CSV with tabs; the delimiter is sniffed either way
    Format(
        "CSV / TSV",
        "text/csv",
        (".csv", ".tsv"),
        on_text(extract_csv),
        media_types=("text/csv", "text/tab-separated-values"),
    ),
    Format(
        "HTML",
        "text/html",
        (".html", ".htm", ".xhtml"),
        on_markup(extract_page),
        media_types=("text/html", "application/xhtml+xml"),
    ),
    Format("PDF", PDF, (".pdf",), _pdf, sniff=pdf_header, own_process=True, media_types=(PDF,), described="a PDF"),
    Format(
        "Word",
        DOCX,
        (".docx", ".docm"),
        _office(extract_docx),
        sniff=zip_part("word/document.xml"),
        zip_based=True,
        reads_ole=True,
        described="a Word .docx file",
    ),
    Format(
        "PowerPoint",
        PPTX,
        (".pptx", ".pptm"),
        _office(extract_pptx),
        sniff=zip_part("ppt/presentation.xml"),
        zip_based=True,
        reads_ole=True,
        described="a PowerPoint .pptx file",
    ),
    Format(
        "Excel",
        XLSX,
        (".xlsx", ".xlsm"),
        _office(extract_xlsx),
        sniff=zip_part("xl/workbook.xml"),
        zip_based=True,
        reads_ole=True,
        described="an Excel .xlsx file",
    ),
    Format("OpenDocument text", ODT, (".odt",), _opendocument, sniff=zip_mimetype(ODT), zip_based=True),
    Format("OpenDocument presentation", ODP, (".odp",), _opendocument, sniff=zip_mimetype(ODP), zip_based=True),
    Format("OpenDocument spreadsheet", ODS, (".ods",), _opendocument, sniff=zip_mimetype(ODS), zip_based=True),
    Format(
        "RTF",
        "application/rtf",
        (".rtf",),
        lambda source: extract_rtf(source.data, source.budget),
        media_types=("application/rtf", "text/rtf"),
        described="RTF",
    ),
    Format(
        "EPUB",
        EPUB,
        (".epub",),
        lambda source: extract_epub(source.data, source.budget, source.warnings),
        sniff=zip_mimetype(EPUB),
        zip_based=True,
        media_types=(EPUB,),
        described="an EPUB book",
    ),
    Format(
        "e-mail",
        "message/rfc822",
        (".eml",),
        _mail(extract_eml),
        ole_refusal="the file is an Outlook .msg / OLE file, not e-mail; save the message as .eml",
        media_types=("message/rfc822",),
        described="e-mail",
    ),
    Format(
        "mailbox",
        "application/mbox",
        (".mbox",),
        _mail(extract_mbox),
        ole_refusal="the file is an Outlook .msg / OLE file, not e-mail; save the message as .eml",
        media_types=("application/mbox",),
        described="a mailbox",
    ),
    Format(
        "notebook",
        "application/x-ipynb+json",
        (".ipynb",),
        _notebook,
        media_types=("application/x-ipynb+json",),
        described="a notebook",
    ),
    # scans, screenshots, photos: read by OCR (Tesseract) in a child process, see .ocr;
    # a signature's logo in an e-mail is not read
    Format("PNG image", "image/png", (".png",), _image, own_process=True, attachment=False),
    Format("JPEG image", "image/jpeg", (".jpg", ".jpeg"), _image, own_process=True, attachment=False),
    Format("TIFF image", "image/tiff", (".tif", ".tiff"), _image, own_process=True, attachment=False),
    Format("WebP image", "image/webp", (".webp",), _image, own_process=True, attachment=False),
    Format("GIF image", "image/gif", (".gif",), _image, own_process=True, attachment=False),
    # code: one entry per language, all read by the code reader (.code_text), cut at the
    # language's definitions; a language is one line here
    _code("python", ".py", ".pyw", ".pyi"),
    _code("javascript", ".js", ".jsx", ".mjs", ".cjs"),
    _code("typescript", ".ts", ".tsx", ".mts", ".cts"),
    _code("go", ".go"),
    _code("rust", ".rs"),
    _code("java", ".java", ".cs", ".scala", ".groovy", ".dart"),
    _code("kotlin", ".kt", ".kts"),
    _code("swift", ".swift"),
    _code("c", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".mm"),
    _code("matlab", ".m"),  # MATLAB/Octave, or Objective-C: both kinds of definitions are found
    _code("php", ".php"),
    _code("ruby", ".rb", ".rake"),
    _code("lua", ".lua"),
    _code("perl", ".pl", ".pm"),
    _code("r", ".r"),
    _code("shell", ".sh", ".bash", ".zsh", ".fish", ".ps1"),
    _code("sql", ".sql"),
    # configuration (.config_text): a section per key path or INI section
    Format("JSON", "application/json", (".json",), on_text(extract_json)),
    Format("YAML", "application/yaml", (".yaml", ".yml"), on_text(extract_yaml)),
    Format("TOML", "application/toml", (".toml",), on_text(extract_toml)),
    Format("INI", "text/x-ini", (".ini", ".cfg", ".conf"), on_text(extract_ini)),
    # XML is markup: its declared encoding is honoured, as HTML's
    Format("XML", "application/xml", (".xml",), on_markup(extract_xml)),
    # notes and papers: LaTeX and BibTeX (.latex_text), org-mode (.org_text), cut at their headings
    Format("LaTeX", "text/x-tex", (".tex",), on_text(extract_latex)),
    Format("BibTeX", "text/x-bibtex", (".bib",), on_text(extract_bibtex)),
    Format("org-mode", "text/x-org", (".org",), on_text(extract_org)),
    # subtitles and transcripts: the words of each cue, its start time as its heading
    Format(
        "SubRip subtitles",
        "application/x-subrip",
        (".srt",),
        on_text(extract_srt),
        media_types=("application/x-subrip",),
        described="subtitles",
    ),
    Format(
        "WebVTT subtitles",
        "text/vtt",
        (".vtt",),
        on_text(extract_vtt),
        media_types=("text/vtt",),
        described="subtitles",
    ),
)

_BY_SUFFIX: dict[str, Format] = {suffix: fmt for fmt in FORMATS for suffix in fmt.suffixes}
_BY_TYPE: dict[str, Format] = {fmt.content_type: fmt for fmt in FORMATS}
SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_BY_SUFFIX)
# read in child processes of their own (the PDF reader, OCR): never in the ingestion
# helper's process, nor under the run's turn at the interpreter
OWN_PROCESS: frozenset[str] = frozenset(fmt.content_type for fmt in FORMATS if fmt.own_process)


def suffix_list(limit: int | None = None, *, capitals: bool = False) -> str:
    """The suffixes kbdesk reads, without their dots, alphabetical, comma-separated: what
    the TUI's add dialog, an upload's refusal and the HTTP API's description of an upload
    say. Within ``limit`` characters, whole suffixes then "and 12 more" past it."""
    names = sorted({s.lstrip(".").upper() if capitals else s.lstrip(".") for s in SUPPORTED_SUFFIXES})
    shown: list[str] = []
    for n, name in enumerate(names):
        rest = len(names) - n - 1
        tail = f" and {rest} more" if rest else ""
        if limit is not None and len(", ".join([*shown, name])) + len(tail) > limit:
            return ", ".join(shown) + f" and {len(names) - len(shown)} more"
        shown.append(name)
    return ", ".join(shown)


def format_for(filename: str) -> Format | None:
    """The format ``filename`` is read as, by its suffix; None when kbdesk reads no such file."""
    return _BY_SUFFIX.get(os.path.splitext(filename)[1].lower())


def format_of(content_type: str) -> Format | None:
    """The format of a content type (one a :class:`Format` declares), or None."""
    return _BY_TYPE.get(content_type)


def media_types() -> dict[str, str]:
    """What a web server's Content-Type is read as: media type → content type."""
    return {media: fmt.content_type for fmt in FORMATS for media in fmt.media_types}
