"""EPUB → its chapters in reading order, each read as HTML (:mod:`.html_text`).

``META-INF/container.xml`` names the package document; its spine gives the reading
order of the content documents, each extracted as an HTML page (headings give the
heading path; navigation and index pages are reduced to their title as for any HTML).
A chapter's ``<title>`` (often the book's title on every page) is not repeated. The
package's ``dc:title``, ``dc:creator`` and ``dc:date`` go into every section's metadata
with ``{"chapter": n}`` (1-based, in spine order). A chapter that cannot be read is a
warning, not a failure, while others can.
"""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

from kbdesk.ingest.html_text import extract_html
from kbdesk.ingest.limits import Budget
from kbdesk.ingest.office_props import properties_from
from kbdesk.ingest.sections import ExtractionError, ResourceLimit, Section
from kbdesk.ingest.text_decode import decode_markup
from kbdesk.ingest.xml_tree import parse
from kbdesk.ingest.zip_parts import ZipParts

# A chapter is parsed whole as HTML (several times its size in memory): past this much
# markup it is not a chapter of a book but a file too large by nature.
MAX_CHAPTER_BYTES = 32 * 1024 * 1024
EPUB_FIELDS = {"title": ("title",), "author": ("creator",), "created": ("date",)}
_CONTENT_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/xml", "text/x-oeb1-document"})


def extract_epub(data: bytes, budget: Budget, warnings: list[str]) -> list[Section]:
    parts = ZipParts(data, "EPUB")
    container = parse(parts.read("META-INF/container.xml", required=True) or b"", "META-INF/container.xml")
    rootfile = container.find("rootfile")
    opf_path = unquote(rootfile.get("full-path")) if rootfile is not None else ""
    if not opf_path or parts.find(opf_path) is None:
        opf_path = next((n for n in parts.names() if n.lower().endswith(".opf")), "")
    if not opf_path:
        raise ExtractionError("EPUB is damaged (it has no package document)")
    opf = parse(parts.read(opf_path, required=True) or b"", opf_path)
    folder = posixpath.dirname(opf_path)
    meta = opf.child("metadata")
    props = properties_from(meta, EPUB_FIELDS) if meta is not None else {}
    manifest = {
        item.get("id"): (posixpath.normpath(posixpath.join(folder, unquote(item.get("href")))), item.get("media-type"))
        for item in opf.iter("item")
    }
    order = [manifest[ref.get("idref")] for ref in opf.iter("itemref") if ref.get("idref") in manifest]
    if not order:  # no spine: the content documents in the manifest's order
        order = list(manifest.values())
    sections: list[Section] = []
    chapter = 0
    for href, media in order:
        if media not in _CONTENT_TYPES and not href.lower().endswith((".xhtml", ".html", ".htm")):
            continue
        raw = _chapter(parts, href)
        if not raw:
            warnings.append(f"chapter {href} is missing from the EPUB")
            continue
        chapter += 1
        try:
            pieces = extract_html(decode_markup(raw), title=False)
        except ExtractionError:
            pieces = svg_text(raw, href)  # a page drawn as inline SVG (comics, fixed layout), else none
        if not pieces:
            continue  # a cover page or an image-only chapter: no text
        for piece in pieces:
            budget.spend(len(piece.text), "the EPUB")
            if piece.metadata.get("page_kind"):
                continue  # its table of contents, an index
            piece.metadata = {**piece.metadata, "chapter": chapter, **props}
            piece.metadata.pop("page_kind", None)
            sections.append(piece)
    if not sections:
        raise ExtractionError("EPUB has no text")
    return sections


def _chapter(parts: ZipParts, href: str) -> bytes | None:
    """A chapter's bytes, inflated only as far as :data:`MAX_CHAPTER_BYTES`."""
    pieces = parts.pieces(href)
    if pieces is None:
        return None
    out, size = [], 0
    for piece in pieces:
        size += len(piece)
        if size > MAX_CHAPTER_BYTES:
            raise ExtractionError(
                f"EPUB is too large to read (chapter {href} holds over {MAX_CHAPTER_BYTES // 2**20} MB of markup)"
            )
        out.append(piece)
    return b"".join(out)


def svg_text(raw: bytes, href: str) -> list[Section]:
    """The text of a chapter's SVG ``<text>`` elements (with their ``<tspan>``s), one line
    each: what a page drawn as SVG says. Empty when it has none or cannot be parsed."""
    try:
        root = parse(raw, href)
    except ResourceLimit:
        raise
    except ExtractionError:
        return []
    lines = [" ".join(node.text_content().split()) for node in root.iter("text")]
    text = "\n".join(line for line in lines if line)
    return [Section(text, {})] if text else []
