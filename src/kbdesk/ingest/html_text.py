"""HTML → plain text per heading block, with ``html.parser`` (standard library).

Each section is the rendered text of one heading block (heading line included);
metadata ``{"headings": [...], "title": <title>}``; the page title is also the first
line of the first section. Hidden content is dropped: <script>, <style>, <template>,
<noscript>, <svg>, <iframe>, <object>, and elements with ``hidden``,
``aria-hidden="true"``, ``display: none`` or ``visibility: hidden``. Block elements
start new lines, paragraphs and the like are separated by a blank line, table cells
are joined with " | ", and <pre> keeps its whitespace.

Main content only. Page furniture is not text of the page: <nav>; <header>, <footer>
and <aside> outside the page's <main>/<article>; elements whose ``role`` is navigation,
search, banner, contentinfo or complementary; and the classes documentation generators
give their chrome (:data:`~kbdesk.ingest.html_tags._CHROME_CLASSES`: DocBook's navheader/navfooter and
mini-TOCs, Sphinx's sidebar, "related" bars, footer and heading anchors). When the page
marks its main content (a <main> or ``role="main"`` element, found by the parse: never by
a mention in a code sample, a script or a comment), only that is read (and the title).
A heading inside an admonition (DocBook's ``<div class="note"><h3>Note</h3>``, the
classes of :data:`~kbdesk.ingest.html_tags._ADMONITION_CLASSES`) is a line of the box, not a section: the
section around it keeps its heading path.

A page's table of contents (DocBook's mini-TOC, Sphinx's toctree: :data:`~kbdesk.ingest.html_tags._TOC_CLASSES`)
repeats the headings that follow it or names other pages: it is left out, unless its
links lead mostly to other pages (not to an element of this page) and the page has fewer than :data:`TOC_PAGE_WORDS`
words without it — a chapter's or part's page, whose list of sections (DocBook's with
each command's purpose) is its content: then
the list is read as text, its "Table of Contents" label left out.

Navigation pages: a generated index (the markup of :data:`~kbdesk.ingest.html_tags._INDEX_CLASSES` in its main
content), a page whose main text is mostly link text (at least
:data:`INDEX_LINK_SHARE` of its words, with at least :data:`INDEX_MIN_LINKS` links), or
a search form with almost no text is indexed by its title alone, with ``"page_kind": "index"`` or ``"search"`` in
its metadata: its links would otherwise match every query about the pages they name.

Speed: the handlers run once per tag and per run of text, so they do little each time:
one dict look-up tells what a tag is, text outside <pre> is kept raw and its whitespace
collapsed once per line, and html.parser's line/column bookkeeping is switched off.
"""

from __future__ import annotations

from html.parser import HTMLParser

from kbdesk.ingest.html_tags import (
    _ADMONITION,
    _BLANK_LINES,
    _CHROME_TAGS,
    _EDGE_TAGS,
    _HIDE,
    _IMPLIED,
    _INDEX,
    _K_ADMONITION,
    _K_BLOCK,
    _K_BREAK,
    _K_CELL,
    _K_HEADING,
    _K_IMPLIED,
    _K_MAIN,
    _K_PARAGRAPH,
    _K_PRE,
    _K_SKIP,
    _K_TITLE,
    _K_TOC,
    _K_VOID,
    _KIND,
    _MAIN,
    _MAIN_CONTENT,
    _TOC,
    _TOC_LABELS,
    INDEX_LINK_SHARE,
    INDEX_MIN_LINKS,
    SEARCH_PAGE_MAX_WORDS,
    TOC_PAGE_WORDS,
    _attribute_flags,
)
from kbdesk.ingest.sections import ExtractionError, Section, sections_from_blocks
from kbdesk.ingest.text_decode import normalise_newlines


class _HtmlText(HTMLParser):
    def __init__(self, has_main: bool = False, show_toc: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.show_toc = show_toc
        self.saw_toc = False
        self.in_toc = 0  # open table-of-contents elements
        self.toc_targets: list[str] = []  # the fragments their links lead to ("" for none)
        self.ids: set[str] = set()  # element ids after the first table of contents
        # open elements: (tag, hidden, kind); hidden is 1 for an element that hides its
        # content, -1 for the main content that shows what is outside it hidden, else 0
        self.stack: list[tuple[str, int, int]] = []
        self.open: dict[str, int] = {}  # tag → how many are on the stack (O(1) lookups)
        # with a marked main content, everything starts hidden until it opens
        self.outside = int(has_main)
        self.hidden, self.pre = self.outside, 0
        self.main = 0  # open <main>/<article>/role=main elements
        self.saw_main = False  # a marked main content was opened (and shown)
        self.admonition = 0  # open admonition boxes
        self.text_words = self.link_words = self.links = 0
        self.search_form = self.index_marker = False
        self.title: str | None = None
        self.title_parts: list[str] | None = None
        self.heading: list[str] | None = None
        self.path: list[tuple[int, str]] = []
        self.blocks: list[tuple[list[str], str, bool]] = []
        self.lines: list[str] = []
        # text of the current line; outside <pre> raw (whitespace collapsed in _break)
        self.line: list[str] = []
        self.line_has_text = False
        self.has_body = True  # the text before the first heading counts as a body

    def updatepos(self, i: int, j: int) -> int:
        # HTMLParser counts lines and columns of everything it reads, for getpos(),
        # which nothing here uses: a tenth of the parse time saved.
        return j

    def _break(self, blank: bool = False) -> None:
        if self.line:
            line = "".join(self.line)
            self.line, self.line_has_text = [], False
            line = line.rstrip() if self.pre else " ".join(line.split())
        else:
            line = ""
        lines = self.lines
        if line or (self.pre and lines):
            lines.append(line)
        if blank and lines and lines[-1]:
            lines.append("")

    def _flush_block(self) -> None:
        self._break()
        text = _BLANK_LINES.sub("\n\n", "\n".join(self.lines)).strip()
        self.blocks.append(([t for _, t in self.path if t], text, self.has_body))
        self.lines, self.has_body = [], False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        kind = _KIND.get(tag, 0)
        if self.saw_toc and attrs:
            self.ids.update(v for k, v in attrs if k == "id" and v)
        open_count = self.open
        flags = _attribute_flags(attrs) if attrs else 0
        if not kind:  # an inline element: only whether it hides its content matters
            hidden = flags & _HIDE
            self.stack.append((tag, hidden, 0))
            open_count[tag] = open_count.get(tag, 0) + 1
            self.hidden += hidden
            if tag == "a" and not self.hidden:
                self.links += 1
            if tag == "a" and self.in_toc:  # a table of contents of this page, or of others
                href = next((v for k, v in attrs if k == "href"), None) or "#"
                self.toc_targets.append(href.partition("#")[2])
            return
        if kind & _K_IMPLIED:
            closes, stops = _IMPLIED[tag]
            if any(map(open_count.get, closes)):
                for open_tag, _, _ in reversed(self.stack[-32:]):  # bounded: hostile nesting
                    if open_tag in stops:
                        break
                    if open_tag in closes:
                        self.handle_endtag(open_tag)
                        break
        if kind & _K_BLOCK and open_count.get("p"):
            self.handle_endtag("p")
        if kind & _K_TITLE and self.title is None and self.hidden <= self.outside:
            self.title_parts = []
        if kind & _K_VOID:
            if tag == "input" and not self.hidden and open_count.get("form"):
                self.search_form = self.search_form or dict(attrs).get("type", "text") in ("text", "search")
            if kind & _K_BREAK and not self.hidden:
                self._break(blank=tag == "hr")
            return
        if flags & _TOC:
            self.saw_toc = self.saw_toc or not self.hidden
            kind |= _K_TOC
            self.in_toc += 1
        hidden = (
            1
            if (
                kind & _K_SKIP
                or flags & _HIDE
                or (flags & _TOC and not self.show_toc)
                or tag in _CHROME_TAGS
                or (tag in _EDGE_TAGS and not self.main)
            )
            else 0
        )
        if not hidden and (tag == "main" or tag == "article" or flags & _MAIN_CONTENT):
            kind |= _K_MAIN
            if self.main == 0 and self.outside and self.hidden == self.outside and tag != "article":
                hidden = -1  # the main content: what is inside shows
                self.saw_main = True
            self.main += 1
        if flags & _INDEX and not self.hidden and kind & _K_BLOCK:
            self.index_marker = True
        if flags & _ADMONITION and not hidden:
            kind |= _K_ADMONITION
            self.admonition += 1
        self.stack.append((tag, hidden, kind))
        open_count[tag] = open_count.get(tag, 0) + 1
        self.hidden += hidden
        if self.hidden:
            return
        if kind & _K_HEADING and self.heading is None and not self.admonition:
            self._flush_block()
            self.heading = []
        elif kind & _K_CELL and self.line_has_text:
            self.line.append(" | ")
        if kind & _K_BLOCK:
            self._break(blank=bool(kind & _K_PARAGRAPH))
            if kind & _K_PRE:
                self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title_parts is not None:
            self.title = " ".join("".join(self.title_parts).split())
            self.title_parts = None
        open_count = self.open
        if not open_count.get(tag):
            return  # stray end tag
        stack = self.stack
        while stack:
            open_tag, hidden, kind = stack.pop()
            open_count[open_tag] -= 1
            if kind & _K_MAIN:
                self.main -= 1
            if kind & _K_ADMONITION:
                self.admonition -= 1
            if kind & _K_TOC:
                self.in_toc -= 1
            if kind and not self.hidden:  # closing a visible element that is not inline
                if kind & _K_BLOCK:
                    self._break(blank=bool(kind & _K_PARAGRAPH))
                    if kind & _K_PRE:
                        self.pre -= 1
                if kind & _K_HEADING and self.heading is not None:
                    level, text = int(open_tag[1]), " ".join("".join(self.heading).split())
                    path = self.path
                    while path and path[-1][0] >= level:
                        path.pop()
                    path.append((level, text))
                    self.heading = None
            self.hidden -= hidden
            if open_tag == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.title_parts is not None:
            self.title_parts.append(data)
            return
        if self.hidden:
            return
        if data and not data.isspace():
            words = len(data.split())
            self.text_words += words
            if self.open.get("a"):
                self.link_words += words
            self.line_has_text = True
            if self.heading is None:
                self.has_body = True
        if self.heading is not None:
            self.heading.append(data)
        if not self.pre:
            self.line.append(data)
            return
        first, *rest = normalise_newlines(data).split("\n")
        self.line.append(first)
        for piece in rest:
            self._break()
            self.line.append(piece)


def _parse(text: str, has_main: bool, show_toc: bool = False) -> _HtmlText:
    parser = _HtmlText(has_main=has_main, show_toc=show_toc)
    try:
        parser.feed(text)
        parser.close()
    except Exception as exc:  # noqa: BLE001 - html.parser is lenient; a last resort that names the cause
        raise ExtractionError(f"HTML could not be parsed ({exc})") from None
    parser._flush_block()
    return parser


def extract_html(text: str, *, title: bool = True, links_are_content: bool = False) -> list[Section]:
    """Sections of an HTML page; ``title=False`` leaves the page's <title> out (EPUB
    chapters, whose title is the book's on every page); ``links_are_content``: the text
    is a page's main content already chosen, so a page of links is read as such, not
    reduced to its title."""
    # The source is looked at for "<main" or role=main only to know whether a second
    # reading may be needed: a page is read as having main content when a real <main>
    # or role="main" element opened (not a mention in a code sample, a script or a
    # comment); otherwise it is read again as a whole.
    has_main = _MAIN.search(text) is not None
    parser = _parse(text, has_main=has_main)
    if parser.outside and not parser.saw_main:
        has_main = False
        parser = _parse(text, has_main=False)
    if (
        parser.saw_toc
        and 2 * sum(bool(t) and t in parser.ids for t in parser.toc_targets) < len(parser.toc_targets)
        and sum(len(t.split()) for _, t, _ in parser.blocks) < TOC_PAGE_WORDS
    ):
        # a chapter's page: its table of contents is what it holds (its links' texts kept)
        parser = _parse(text, has_main=has_main, show_toc=True)
        parser.blocks = [
            (path, _BLANK_LINES.sub("\n\n", "\n".join(x for x in body.split("\n") if x not in _TOC_LABELS)).strip(), b)
            for path, body, b in parser.blocks
        ]
    if not title:
        parser.title = None
    extra = {"title": parser.title} if parser.title else {}
    kind = _page_kind(parser, links_are_content)
    if kind:
        heading = parser.title or next((t for _, t, _ in parser.blocks if t), "").split("\n")[0]
        if not heading:
            raise ExtractionError("HTML has no visible text")
        return [Section(heading, {"headings": [], **extra, "page_kind": kind})]
    sections = sections_from_blocks(parser.blocks, extra)
    if parser.title:
        if sections:
            sections[0].text = f"{parser.title}\n\n{sections[0].text}"
        else:
            sections = [Section(parser.title, {"headings": [], **extra})]
    if not sections:
        raise ExtractionError("HTML has no visible text")
    return sections


def _page_kind(parser: _HtmlText, links_are_content: bool = False) -> str | None:
    """ "index" for a page of links (a generated index, a page of links that is not a
    chapter's table of contents), "search" for a search form with almost no text, else
    None (a page of content)."""
    if parser.index_marker or (
        not parser.show_toc
        and not links_are_content
        and parser.links >= INDEX_MIN_LINKS
        and parser.link_words >= INDEX_LINK_SHARE * parser.text_words
    ):
        return "index"
    if parser.search_form and sum(len(t.split()) for _, t, _ in parser.blocks) <= SEARCH_PAGE_MAX_WORDS:
        return "search"
    return None
