"""Word (.docx) → text per heading block, read with :mod:`zipfile` and :mod:`.xml_tree`.

``word/document.xml`` in order: paragraphs (runs' text, tabs and line breaks; deleted
text of tracked changes and field codes left out), tables (one line per row, cells
joined with " | "), content controls and text boxes. A paragraph is a heading when its
outline level or its style says so (``Heading 1``…``Heading 9``, ``Title``, whatever the
style's id in the document's language: ``word/styles.xml``); headings give the heading
path as in Markdown. Footnotes, endnotes, comments, headers and footers follow the body,
each under its own heading. Metadata: ``{"headings": [...]}`` and the document's
properties (:mod:`.office_props`).

Measured against python-docx, markitdown (mammoth) and docx2txt in docs/FORMATS.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kbdesk.ingest.html_text import extract_html
from kbdesk.ingest.limits import Budget
from kbdesk.ingest.office_props import ooxml_properties, relationships
from kbdesk.ingest.ooxml_charts import graphics_text
from kbdesk.ingest.rtf_text import extract_rtf
from kbdesk.ingest.sections import ExtractionError, Outline, ResourceLimit, Section
from kbdesk.ingest.text_decode import decode_markup, decode_text
from kbdesk.ingest.xml_tree import Node, elements, parse, stream
from kbdesk.ingest.zip_parts import ZipParts

_HEADING_NAME = re.compile(r"heading\s*([1-9])$", re.IGNORECASE)
# "rt": a ruby (furigana) reading, which would split the word it annotates (価格かかく設定)
_SKIP = frozenset(
    {"delText", "instrText", "delInstrText", "Fallback", "rPr", "pPr", "sectPr", "tblPr", "trPr", "tcPr", "rt"}
)
_BREAKS = {"tab": "\t", "br": "\n", "cr": "\n", "noBreakHyphen": "-", "softHyphen": ""}
# read a row, a control's content at a time when they sit in the body (their children
# come one by one); a table's rows are made into text every ROWS_HELD rows
_STREAM_SPLIT = frozenset({"tbl", "sdt", "sdtContent", "customXml", "smartTag", "ins", "AlternateContent", "Choice"})
ROWS_HELD = 256
# the parts that follow the body, in this order, with the heading each gets
_EXTRA_PARTS = (("footnotes", "Footnotes"), ("endnotes", "Endnotes"), ("comments", "Comments"))


def _style_levels(parts: ZipParts) -> dict[str, int]:
    """Style id → heading level, from each style's name or outline level (and what it is based on)."""
    data = parts.read("word/styles.xml")
    if not data:
        return {}
    # streamed: a styles part is mostly latent styles and formatting nobody reads here
    styles: dict[str, tuple[str, int | None, str]] = {}
    current: list[str] = ["", "", ""]  # id, name, based on
    level: list[int | None] = [None]

    def start(tag: str, attrs: dict[str, str]) -> None:
        if tag == "style":
            current[:] = [attrs.get("styleId", ""), "", ""]
            level[0] = None
        elif tag == "name":
            current[1] = attrs.get("val", "")
        elif tag == "basedOn":
            current[2] = attrs.get("val", "")
        elif tag == "outlineLvl" and attrs.get("val", "").isdigit() and int(attrs["val"]) < 9:
            level[0] = int(attrs["val"]) + 1

    def end(tag: str) -> None:
        if tag == "style" and current[0]:
            styles[current[0]] = (current[1], level[0], current[2])

    try:
        stream(data, "word/styles.xml", start, end, lambda _text: None)
    except ExtractionError:
        if not styles:
            return {}  # broken styles cost the heading levels they name, not the document
    out: dict[str, int] = {}
    for sid in styles:
        seen, here = set(), sid
        while here in styles and here not in seen:
            seen.add(here)
            name, found, based = styles[here]
            match = _HEADING_NAME.match(name.strip())
            if found is None and match:
                found = int(match[1])
            elif found is None and name.strip().lower() == "title":
                found = 1
            if found is not None:
                out[sid] = found
                break
            here = based
    return out


class _Reader:
    def __init__(self, levels: dict[str, int], budget: Budget) -> None:
        self.levels = levels
        self.budget = budget
        self.outline = Outline()
        self.alt_chunk: Callable[[str], str] | None = None  # text of an imported (HTML) part, by its rId
        self.rows: list[Node] = []  # the rows of the streamed table not read yet
        self.table_lines: list[str] = []  # … and the text of those read

    def paragraph_level(self, p: Node) -> int | None:
        ppr = p.child("pPr")
        if ppr is None:
            return None
        outline = ppr.child("outlineLvl")
        if outline is not None and outline.get("val").isdigit() and int(outline.get("val")) < 9:
            return int(outline.get("val")) + 1
        style = ppr.child("pStyle")
        return self.levels.get(style.get("val")) if style is not None else None

    def text_of(self, node: Node, nested: list[Node]) -> str:
        """The text of a paragraph (or cell); paragraphs inside it (text boxes) go to ``nested``."""
        parts: list[str] = []
        stack = list(reversed(node.children))
        while stack:
            n = stack.pop()
            tag = n.tag
            if tag == "t":
                parts.append(n.text)
            elif tag in _BREAKS:
                parts.append(_BREAKS[tag])
            elif tag == "p" or tag == "tbl":
                nested.append(n)
            elif tag == "sym":
                char = n.get("char")
                if char and len(char) == 4:
                    try:
                        code = int(char, 16)
                        parts.append(chr(code - 0xF000 if code >= 0xF000 else code))
                    except ValueError:
                        pass
            elif tag not in _SKIP:
                stack.extend(reversed(n.children))
        return "".join(parts)

    def block(self, node: Node) -> None:
        """Read the children of a body-like element (body, a cell, a text box, a content control)."""
        self.items(node.children)

    def streamed(self, node: Node, _container: str = "") -> None:
        """One element of the body as :func:`~.xml_tree.elements` hands it over: a block,
        a row of a table (kept until the table ends), or a table that ended."""
        if node.tag == "tr":
            self.rows.append(node)
            if len(self.rows) >= ROWS_HELD:
                self._rows_read()
        elif node.tag == "tbl" and not node.children:
            self.table_done()
        elif node.tag in _STREAM_SPLIT:
            return  # its children came before it
        elif node.tag not in ("tblPr", "tblGrid", "sdtPr", "sdtEndPr"):
            self.items([node])

    def items(self, nodes: list[Node]) -> None:
        work = list(reversed(nodes))
        while work:
            n = work.pop()
            if n.tag == "p":
                nested: list[Node] = []
                text = self.text_of(n, nested)
                self.budget.spend(len(text), "the Word document")
                level = self.paragraph_level(n)
                if level is not None and text.strip():
                    self.outline.heading(level, text)
                else:
                    self.outline.line(text)
                work.extend(reversed(nested))
            elif n.tag == "tbl":
                self.table(n)
            elif n.tag == "altChunk" and self.alt_chunk is not None:
                self.outline.line(self.alt_chunk(n.get("id")))
            elif n.tag in ("sectPr", "Fallback"):
                continue
            else:  # sdt, sdtContent, AlternateContent/Choice, customXml, smartTag, ins, txbxContent
                work.extend(reversed(n.children))

    def table(self, tbl: Node) -> None:
        self.outline.line(self._spent(self.row_text(_rows(tbl))))

    def row_text(self, rows: list[Node]) -> str:
        """Rows as lines, cells joined with " | "."""
        lines: list[str] = []
        for tr in rows:
            cells = []
            for tc in _cells(tr):
                nested: list[Node] = []
                texts = [self.text_of(p, nested) for p in tc.iter("p")]
                cell = " ".join(" ".join(t.split()) for t in texts if t.strip())
                if cell:
                    cells.append(cell)
            if cells:
                lines.append(" | ".join(cells))
        return "\n".join(line for line in lines if line)

    def _rows_read(self) -> None:
        rows, self.rows = self.rows, []
        text = self._spent(self.row_text(rows))
        if text:
            self.table_lines.append(text)

    def table_done(self) -> None:
        """A streamed table ended: its rows become one line of the outline."""
        self._rows_read()
        lines, self.table_lines = self.table_lines, []
        if lines:
            self.outline.line("\n".join(lines))

    def _spent(self, text: str) -> str:
        self.budget.spend(len(text), "the Word document")
        return text


def _rows(tbl: Node) -> list[Node]:
    """A table's rows, those inside content controls and custom XML too."""
    return _wrapped(tbl, "tr")


def _cells(tr: Node) -> list[Node]:
    """A row's cells, those inside content controls too (not the cells of nested tables)."""
    return _wrapped(tr, "tc")


def _wrapped(parent: Node, tag: str) -> list[Node]:
    """The ``tag`` children of a table or row, those wrapped in content controls
    (``w:sdt``) and custom XML (``w:customXml``) too: a repeating-section row is one."""
    out, work = [], list(reversed(parent.children))
    while work:
        n = work.pop()
        if n.tag == tag:
            out.append(n)
        elif n.tag in ("sdt", "sdtContent", "customXml"):
            work.extend(reversed(n.children))
    return out


def extract_docx(data: bytes, budget: Budget) -> list[Section]:
    parts = ZipParts(data, "Word document")
    main = "word/document.xml"
    for target, kind in relationships(parts, "").values():
        if kind == "officeDocument":
            main = target
    reader = _Reader(_style_levels(parts), budget)
    rels = relationships(parts, main)

    def alt_chunk(rid: str) -> str:  # Word's "altChunk": a part in another format, e.g. HTML
        target = rels.get(rid)
        raw = parts.read(target[0]) if target else None
        name = target[0].lower() if target else ""
        if not raw or not name.endswith((".htm", ".html", ".xhtml", ".txt", ".rtf")):
            return ""
        try:
            if name.endswith(".txt"):  # imported plain text
                return decode_text(raw)
            if name.endswith(".rtf"):  # an imported RTF file (Word's "Insert > Text from File")
                return "\n\n".join(s.text for s in extract_rtf(raw, budget))
            return "\n\n".join(s.text for s in extract_html(decode_markup(raw), title=False))
        except ResourceLimit:
            raise
        except ExtractionError:
            return ""

    reader.alt_chunk = alt_chunk
    # the body one block at a time (document > body > block), tables a row at a time:
    # memory is a block's, whatever the size of the part
    body = parts.pieces(main, required=True)
    assert body is not None
    elements(body, main, 3, reader.streamed, _STREAM_SPLIT, within=frozenset({"body"}))
    reader.table_done()
    for text in graphics_text(parts, main):  # charts and SmartArt diagrams, after the body they sit in
        reader.outline.line(text)
    for part, heading in _EXTRA_PARTS:
        target = next((t for t, kind in rels.values() if kind == part), f"word/{part}.xml")
        extra = parts.pieces(target)
        if extra is not None:
            reader.outline.flush()
            before = len(reader.outline.blocks), list(reader.outline.path)
            reader.outline.heading(1, heading)

            def note(node: Node, _container: str) -> None:
                if node.get("type") not in ("separator", "continuationSeparator", "continuationNotice"):
                    reader.block(node)

            elements(extra, target, 2, note)
            if not any(has_body for _, _, has_body in reader.outline.blocks[before[0] :]) and not (
                reader.outline.has_body and len(reader.outline.lines) > 1
            ):  # nothing but the heading: take it back
                reader.outline.lines = []
                reader.outline.path = before[1]
                reader.outline.has_body = True
                del reader.outline.blocks[before[0] :]
    furniture: list[str] = []
    for target, kind in rels.values():
        if kind in ("header", "footer"):
            data_ = parts.pieces(target)
            if data_ is not None:
                nested: list[Node] = []
                text = "\n".join(
                    " ".join(reader.text_of(p, nested).split()) for p in parse(data_, target).iter("p")
                ).strip()
                if text and text not in furniture:
                    furniture.append(text)
    if furniture:
        reader.outline.heading(1, "Headers and footers")
        for text in furniture:
            reader.outline.line(text)
    sections = reader.outline.sections(ooxml_properties(parts))
    if not sections:
        raise ExtractionError("Word document has no text")
    return sections
