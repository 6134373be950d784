"""What an HTML tag and its attributes make an element, for :mod:`kbdesk.ingest.html_text`:
block, paragraph, heading, hidden, page chrome, admonition, table of contents, index —
as bits, so that the parser's handlers pay one dict look-up per tag; and the limits that
tell a page of links or a search form from a page of content."""

from __future__ import annotations

import re

_SKIP = frozenset({"script", "style", "template", "noscript", "svg", "iframe", "object"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_PARAGRAPH = _HEADINGS | {"p", "pre", "blockquote", "table", "ul", "ol", "dl", "figure", "hr"}
_BLOCK = _PARAGRAPH | {
    "address",
    "article",
    "aside",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dt",
    "fieldset",
    "figcaption",
    "footer",
    "form",
    "header",
    "li",
    "main",
    "nav",
    "section",
    "summary",
    "tr",
}
# start tag → open elements it closes implicitly, and the ancestors that stop the search
_IMPLIED = {
    "li": ({"li"}, {"ul", "ol"}),
    "dt": ({"dt", "dd"}, {"dl"}),
    "dd": ({"dt", "dd"}, {"dl"}),
    "tr": ({"tr", "td", "th"}, {"table"}),
    "td": ({"td", "th"}, {"tr", "table"}),
    "th": ({"td", "th"}, {"tr", "table"}),
    "option": ({"option"}, {"select"}),
    **{h: (_HEADINGS, {"body"}) for h in _HEADINGS},
}
_HIDING_ATTRIBUTES = frozenset({"hidden", "aria-hidden", "style"})
_CHROME_TAGS = frozenset({"nav"})
_EDGE_TAGS = frozenset({"header", "footer", "aside"})  # chrome outside <main>/<article>
_CHROME_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
_CHROME_CLASSES = frozenset(
    {
        "navheader",
        "navfooter",  # DocBook: Prev/Up/Home/Next bars
        "sphinxsidebar",
        "sphinxsidebarwrapper",
        "related",
        "footer",
        "headerlink",  # Sphinx
        "mobile-nav",
        "breadcrumb",
        "breadcrumbs",
        "navbar",
        "skip-link",
        "edit-this-page",
    }
)
_ADMONITION_CLASSES = frozenset(
    {"note", "tip", "warning", "caution", "important", "admonition", "seealso", "hint", "danger", "attention", "error"}
)
# a page's table of contents (DocBook's mini-TOC, Sphinx's toctree): left out, unless it is
# the page's content (a chapter or part page of little text of its own: TOC_PAGE_WORDS)
_TOC_CLASSES = frozenset({"toc", "toctree-wrapper"})
TOC_PAGE_WORDS = 250
_TOC_LABELS = frozenset({"Table of Contents", "Contents"})
_MAIN = re.compile(r"<main[\s>]|role\s*=\s*[\"']?main\b", re.IGNORECASE)
# a generated index: DocBook's <div class="index">, Sphinx's index tables and letter bars
_INDEX_CLASSES = frozenset(
    {"index", "indextable", "genindextable", "modindextable", "genindex-jumpbox", "modindex-jumpbox"}
)
INDEX_LINK_SHARE = 0.8
INDEX_MIN_LINKS = 30
SEARCH_PAGE_MAX_WORDS = 100
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden")
_BLANK_LINES = re.compile(r"\n{3,}")

# What a tag is, as bits, so that each tag costs one dict look-up; ordinary inline
# elements (<a>, <b>, <span>, ...) are 0.
(
    _K_BLOCK,
    _K_PARAGRAPH,
    _K_HEADING,
    _K_VOID,
    _K_SKIP,
    _K_IMPLIED,
    _K_CELL,
    _K_PRE,
    _K_TITLE,
    _K_BREAK,
    _K_MAIN,
    _K_ADMONITION,
    _K_TOC,
) = (1 << n for n in range(13))  # the last three: set per element


def _kinds() -> dict[str, int]:
    kinds: dict[str, int] = {}
    for bit, tags in (
        (_K_BLOCK, _BLOCK),
        (_K_PARAGRAPH, _PARAGRAPH),
        (_K_HEADING, _HEADINGS),
        (_K_VOID, _VOID),
        (_K_SKIP, _SKIP),
        (_K_IMPLIED, _IMPLIED),
        (_K_CELL, ("td", "th")),
        (_K_PRE, ("pre",)),
        (_K_TITLE, ("title",)),
        (_K_BREAK, ("br", "hr")),
    ):
        for tag in tags:
            kinds[tag] = kinds.get(tag, 0) | bit
    return kinds


_KIND = _kinds()


_HIDE, _ADMONITION, _MAIN_CONTENT, _INDEX, _TOC = 1, 2, 4, 8, 16  # what an element's attributes make it


def _attribute_flags(attrs: list[tuple[str, str | None]]) -> int:
    """Whether the attributes hide an element (hidden, aria-hidden, a hiding style, a
    chrome role or class), make it an admonition box or the page's main content."""
    flags = 0
    for name, value in attrs:
        if not value:
            if name == "hidden":
                return _HIDE
            continue
        if name == "class":
            classes = value.split()
            if not _CHROME_CLASSES.isdisjoint(classes):
                return _HIDE
            if not _ADMONITION_CLASSES.isdisjoint(classes):
                flags |= _ADMONITION
            if not _INDEX_CLASSES.isdisjoint(classes):
                flags |= _INDEX
            if not _TOC_CLASSES.isdisjoint(classes):
                flags |= _TOC
        elif name == "role":
            value = value.strip().lower()
            if value in _CHROME_ROLES:
                return _HIDE
            if value == "main":
                flags |= _MAIN_CONTENT
        elif name in _HIDING_ATTRIBUTES:
            value = value.lower()
            if name == "hidden" or (
                value.strip() == "true" if name == "aria-hidden" else _HIDDEN_STYLE.search(value) is not None
            ):
                return _HIDE
    return flags
