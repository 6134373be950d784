"""Text extraction: bytes of a TXT / MD / CSV / HTML / PDF file → text in sections.

Every failure is an :class:`ExtractionError` whose message is one line for a person;
bad input fails that one document, never the caller. PDFs are parsed in a child
process (see :mod:`kbdesk.ingest.pdf_worker`).

Section text per format:
- plain text: the text as is (newlines normalised), one section;
- Markdown: the *Markdown source* of each heading block (heading line included), so
  tables, lists and code stay readable; metadata ``{"headings": [h1, h2, ...]}``;
- HTML: rendered plain text per heading block (heading line included); metadata
  ``{"headings": [...], "title": <title>}``; the title is also the first line;
- CSV: one line per row, ``header: value; header: value``, one section;
- PDF: one section per page with text, metadata ``{"page": n}`` (1-based).
A heading immediately followed by another heading is merged into the next section,
so no section is a bare heading.
"""

from __future__ import annotations

import codecs
import csv
import functools
import io
import os
import re
import stat
from dataclasses import dataclass, field
from html.parser import HTMLParser

from kbdesk.errors import KbdeskError
from kbdesk.ingest.pdf_worker import PdfWorkerError, run_pdf_worker


class ExtractionError(KbdeskError):
    """The document's text could not be extracted; the message says why."""


@dataclass
class Section:
    text: str
    metadata: dict = field(default_factory=dict)  # {"page": 3} | {"headings": [...]} | {}


@dataclass
class Extracted:
    text: str  # all sections joined with "\n\n"; stored for re-chunking
    content_type: str  # text/plain, text/markdown, text/csv, text/html, application/pdf
    sections: list[Section]


_TYPES = {
    ".txt": "text/plain", ".text": "text/plain",
    # reStructuredText, logs and AsciiDoc are prose read as-is. JSON/XML/YAML are left
    # out: usually data or config (lockfiles, dumps) that would flood a folder import.
    ".rst": "text/plain", ".log": "text/plain", ".adoc": "text/plain",
    ".md": "text/markdown", ".markdown": "text/markdown",
    # .tsv is CSV with tabs; the delimiter is sniffed either way
    ".csv": "text/csv", ".tsv": "text/csv",
    ".html": "text/html", ".htm": "text/html", ".xhtml": "text/html",
    ".pdf": "application/pdf",
}
SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_TYPES)

_MB = 1024 * 1024


def content_type_for(filename: str) -> str | None:
    """The content type kbdesk extracts ``filename`` as, or None if unsupported."""
    return _TYPES.get(os.path.splitext(filename)[1].lower())


# ── bytes → str ─────────────────────────────────────────────────────────────────────

_BOMS = (  # UTF-32 LE before UTF-16 LE: its BOM starts with the same two bytes
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _bom_encoding(data: bytes) -> tuple[str, int] | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    return None


def decode_text(data: bytes) -> str:
    """Decode by BOM, else UTF-8, else cp1252. Never raises; NUL characters removed."""
    found = _bom_encoding(data)
    if found:
        text = data[found[1]:].decode(found[0], errors="replace")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("cp1252", errors="replace")
    return text.replace("\x00", "")


# File signatures that are never text, whatever the file is called.
_MAGIC = (b"\x89PNG", b"\x7fELF", b"GIF87a", b"GIF89a", b"\xff\xd8\xff", b"PK\x03\x04",
          b"\x1f\x8b", b"%PDF-", b"SQLite format 3\x00", b"\xfd7zXZ\x00", b"7z\xbc\xaf\x27\x1c",
          b"\x28\xb5\x2f\xfd", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"\x00asm")
# C0 controls other than \t \n \v \f \r and ESC (ANSI colours in logs), plus DEL.
_CONTROL = frozenset(set(range(32)) - {9, 10, 11, 12, 13, 27}) | {127}


def _is_binary(data: bytes) -> bool:
    if data.startswith(_MAGIC):
        return True
    found = _bom_encoding(data)
    if found:
        sample = [ord(c) for c in data[found[1]:found[1] + 32768].decode(found[0], "replace")[:8192]]
    else:
        sample = data[:8192]
    controls = sum(1 for b in sample if b in _CONTROL)
    return controls > 0.05 * len(sample)  # a few stray NULs in real text are fine


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ── entry points ────────────────────────────────────────────────────────────────────


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
        raise ExtractionError(f"unsupported file type '{suffix}'" if suffix
                              else "unsupported file type (no extension)")
    return ctype


def extract_file(path, *, max_bytes: int = 10 * _MB, pdf_timeout: float = 30.0,
                 pdf_memory_mb: int = 512) -> Extracted:
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
    return extract_bytes(data, name, max_bytes=max_bytes, pdf_timeout=pdf_timeout,
                         pdf_memory_mb=pdf_memory_mb)


def extract_bytes(data: bytes, filename: str, *, max_bytes: int = 10 * _MB,
                  pdf_timeout: float = 30.0, pdf_memory_mb: int = 512) -> Extracted:
    """Extract ``data`` according to the suffix of ``filename``; raises ExtractionError."""
    ctype = _type_or_raise(filename)
    _check_size(len(data), max_bytes)
    if not data:
        raise ExtractionError("empty file")
    if ctype == "application/pdf":
        sections = _extract_pdf(data, pdf_timeout, pdf_memory_mb)
    else:
        if _is_binary(data):
            raise ExtractionError("binary file (not text)")
        text = _normalise(decode_text(data))
        if not text.strip():
            raise ExtractionError("file has no text (only whitespace)")
        if ctype == "text/markdown":
            sections = _extract_markdown(text)
        elif ctype == "text/html":
            sections = _extract_html(text)
        elif ctype == "text/csv":
            sections = _extract_csv(text)
        else:
            sections = [Section(text.strip(), {})]
    return Extracted(text="\n\n".join(s.text for s in sections), content_type=ctype,
                     sections=sections)


# ── formats ─────────────────────────────────────────────────────────────────────────


def _extract_pdf(data: bytes, timeout: float, memory_mb: int) -> list[Section]:
    if b"%PDF-" not in data[:1024]:
        raise ExtractionError("not a PDF file (no %PDF header)")
    try:
        result = run_pdf_worker(data, timeout=timeout, memory_mb=memory_mb)
    except PdfWorkerError as exc:
        raise ExtractionError(str(exc)) from None
    sections = [Section(_normalise(text).strip(), {"page": number})
                for number, text in enumerate(result.pages, start=1) if text.strip()]
    if not sections:
        if result.errors:
            raise ExtractionError(f"PDF could not be read ({result.errors[0]})")
        raise ExtractionError("PDF has no extractable text (scanned images?)")
    return sections


def _sections_from_blocks(blocks: list[tuple[list[str], str, bool]], extra: dict) -> list[Section]:
    """(heading path, text, has body) → Sections; bare headings merge into the next one."""
    sections: list[Section] = []
    carry, carry_path = "", []
    for path, text, has_body in blocks:
        if not text:
            continue
        if carry:
            text = f"{carry}\n\n{text}"
        if has_body:
            sections.append(Section(text, {"headings": path, **extra}))
            carry = ""
        else:
            carry, carry_path = text, path
    if carry:
        sections.append(Section(carry, {"headings": carry_path, **extra}))
    return sections


@functools.cache
def _markdown_parsers():
    from markdown_it import MarkdownIt

    # Only block structure is needed to find headings; inline parsing of every
    # paragraph is a third of the time, so it runs for heading text only.
    blocks = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    return blocks, MarkdownIt("commonmark")


def _md_inline_text(token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_md_inline_text(child))
    return " ".join("".join(parts).split())


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


def _extract_markdown(text: str) -> list[Section]:
    blocks_parser, inline_parser = _markdown_parsers()
    lines = text.split("\n")
    # YAML front matter is kept as text but not parsed (its closing --- would make the
    # last key a setext heading).
    front = _FRONT_MATTER.match(text)
    offset = len(front.group(0).rstrip("\n").split("\n")) if front else 0
    tokens = blocks_parser.parse("\n".join(lines[offset:]))
    headings = [(tok.map[0] + offset, tok.map[1] + offset, int(tok.tag[1]),
                 _md_inline_text(inline_parser.parseInline(tokens[i + 1].content)[0]))
                for i, tok in enumerate(tokens)
                if tok.type == "heading_open" and tok.level == 0 and tok.map]
    blocks = [([], "\n".join(lines[:headings[0][0] if headings else len(lines)]).strip(), True)]
    stack: list[tuple[int, str]] = []
    for i, (start, end, level, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        stop = headings[i + 1][0] if i + 1 < len(headings) else len(lines)
        body = "\n".join(lines[end:stop]).strip()
        blocks.append(([t for _, t in stack if t], "\n".join(lines[start:stop]).strip(), bool(body)))
    sections = _sections_from_blocks(blocks, {})
    if not sections:
        raise ExtractionError("file has no text")
    return sections


def _extract_csv(text: str) -> list[Section]:
    sample = text[:65536].split("\n")[:50]

    def score(delimiter: str) -> tuple[int, int]:
        try:
            rows = [r for r in csv.reader(sample[:-1] or sample, delimiter=delimiter) if r]
        except csv.Error:
            return (0, 0)
        width = len(rows[0]) if rows else 0
        return (sum(len(r) == width for r in rows) if width > 1 else 0, width)

    delimiter = max(",;\t|", key=score)
    try:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        header = next(reader, [])
        names = [" ".join(h.split()) or f"column {i + 1}" for i, h in enumerate(header)]
        lines = []
        for row in reader:
            cells = [(names[i] if i < len(names) else f"column {i + 1}", " ".join(v.split()))
                     for i, v in enumerate(row)]
            line = "; ".join(f"{name}: {value}" for name, value in cells if value)
            if line:
                lines.append(line)
    except csv.Error as exc:
        raise ExtractionError(f"CSV could not be parsed ({exc})") from None
    if not lines:
        raise ExtractionError("CSV has no data rows")
    return [Section("\n".join(lines), {})]


# ── HTML ────────────────────────────────────────────────────────────────────────────

_SKIP = frozenset({"script", "style", "template", "noscript", "svg", "iframe", "object"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "param", "source", "track", "wbr"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_PARAGRAPH = _HEADINGS | {"p", "pre", "blockquote", "table", "ul", "ol", "dl", "figure", "hr"}
_BLOCK = _PARAGRAPH | {"address", "article", "aside", "caption", "dd", "details", "dialog",
                       "div", "dt", "fieldset", "figcaption", "footer", "form", "header", "li",
                       "main", "nav", "section", "summary", "tr"}
# start tag → open elements it closes implicitly, and the ancestors that stop the search
_IMPLIED = {"li": ({"li"}, {"ul", "ol"}), "dt": ({"dt", "dd"}, {"dl"}),
            "dd": ({"dt", "dd"}, {"dl"}), "tr": ({"tr", "td", "th"}, {"table"}),
            "td": ({"td", "th"}, {"tr", "table"}), "th": ({"td", "th"}, {"tr", "table"}),
            "option": ({"option"}, {"select"}),
            **{h: (_HEADINGS, {"body"}) for h in _HEADINGS}}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden")


def _is_hidden(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    if tag in _SKIP:
        return True
    for name, value in attrs:
        value = (value or "").lower()
        if name == "hidden" or (name == "aria-hidden" and value.strip() == "true") \
                or (name == "style" and _HIDDEN_STYLE.search(value)):
            return True
    return False


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # open elements: (tag, hidden)
        self.open: dict[str, int] = {}  # tag → how many are on the stack (O(1) lookups)
        self.hidden = self.pre = 0
        self.title: str | None = None
        self.title_parts: list[str] | None = None
        self.heading: list[str] | None = None
        self.path: list[tuple[int, str]] = []
        self.blocks: list[tuple[list[str], str, bool]] = []
        self.lines: list[str] = []
        self.line: list[str] = []
        self.line_has_text = False
        self.has_body = True  # the text before the first heading counts as a body

    def _break(self, blank: bool = False) -> None:
        line = "".join(self.line)
        self.line, self.line_has_text = [], False
        line = line.rstrip() if self.pre else " ".join(line.split())
        if line or (self.pre and self.lines):
            self.lines.append(line)
        if blank and self.lines and self.lines[-1]:
            self.lines.append("")

    def _flush_block(self) -> None:
        self._break()
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(self.lines)).strip()
        self.blocks.append(([t for _, t in self.path if t], text, self.has_body))
        self.lines, self.has_body = [], False

    def handle_starttag(self, tag, attrs):
        if tag in _IMPLIED and any(self.open.get(t) for t in _IMPLIED[tag][0]):
            closes, stops = _IMPLIED[tag]
            for open_tag, _ in reversed(self.stack[-32:]):  # bounded: hostile nesting
                if open_tag in stops:
                    break
                if open_tag in closes:
                    self.handle_endtag(open_tag)
                    break
        if tag in _BLOCK and self.open.get("p"):
            self.handle_endtag("p")
        if tag == "title" and self.title is None and not self.hidden:
            self.title_parts = []
        if tag in _VOID:
            if not self.hidden and tag in ("br", "hr"):
                self._break(blank=tag == "hr")
            return
        hidden = _is_hidden(tag, attrs)
        self.stack.append((tag, hidden))
        self.open[tag] = self.open.get(tag, 0) + 1
        self.hidden += hidden
        if self.hidden:
            return
        if tag in _HEADINGS and self.heading is None:
            self._flush_block()
            self.heading = []
        elif tag in ("td", "th") and self.line_has_text:
            self.line.append(" | ")
        if tag in _BLOCK:
            self._break(blank=tag in _PARAGRAPH)
        if tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag):
        if tag == "title" and self.title_parts is not None:
            self.title = " ".join("".join(self.title_parts).split())
            self.title_parts = None
        if not self.open.get(tag):
            return  # stray end tag
        while self.stack:
            open_tag, hidden = self.stack.pop()
            self.open[open_tag] -= 1
            self._close(open_tag)
            self.hidden -= hidden
            if open_tag == tag:
                break

    def _close(self, tag: str) -> None:
        if self.hidden:
            return
        if tag in _BLOCK:
            self._break(blank=tag in _PARAGRAPH)
        if tag == "pre":
            self.pre -= 1
        if tag in _HEADINGS and self.heading is not None:
            level, text = int(tag[1]), " ".join("".join(self.heading).split())
            while self.path and self.path[-1][0] >= level:
                self.path.pop()
            self.path.append((level, text))
            self.heading = None

    def handle_data(self, data):
        if self.title_parts is not None:
            self.title_parts.append(data)
            return
        if self.hidden:
            return
        if data.strip():
            self.line_has_text = True
            if self.heading is None:
                self.has_body = True
        if self.heading is not None:
            self.heading.append(data)
        if not self.pre:
            self.line.append(re.sub(r"\s+", " ", data))
            return
        first, *rest = data.split("\n")
        self.line.append(first)
        for piece in rest:
            self._break()
            self.line.append(piece)


def _extract_html(text: str) -> list[Section]:
    parser = _HtmlText()
    try:
        parser.feed(text)
        parser.close()
    except Exception as exc:  # html.parser is lenient; this is a last resort
        raise ExtractionError(f"HTML could not be parsed ({exc})") from None
    parser._flush_block()
    extra = {"title": parser.title} if parser.title else {}
    sections = _sections_from_blocks(parser.blocks, extra)
    if parser.title:
        if sections:
            sections[0].text = f"{parser.title}\n\n{sections[0].text}"
        else:
            sections = [Section(parser.title, {"headings": [], **extra})]
    if not sections:
        raise ExtractionError("HTML has no visible text")
    return sections
