"""OpenDocument (.odt, .odp, .ods) → text, read with :mod:`zipfile` and :mod:`.xml_tree`.

``content.xml`` in order, the way the document's kind lays it out:

- **text** (.odt): headings (``text:h`` and its outline level) give the heading path;
  paragraphs, lists, sections, frames and text boxes in order; tables one line per row,
  cells joined with " | "; footnotes where they are cited;
- **presentation** (.odp): one section per slide, ``{"slide": n, "headings": [title]}``,
  speaker notes as "Notes: …";
- **spreadsheet** (.ods): one section per sheet, ``{"sheet": name}``, rows with their
  header as for Excel (:func:`.sheet_text.rows_as_lines`). Repeated rows and cells are
  expanded only while they hold text (a sheet "filled" to its last row by one repeated
  empty row costs nothing).

Spaces (``text:s``), tabs and line breaks are kept. Metadata also carries the file's
properties from ``meta.xml``.
"""

from __future__ import annotations

import re

from kbdesk.ingest.limits import Budget
from kbdesk.ingest.office_props import properties_from
from kbdesk.ingest.sections import ExtractionError, Outline, Section
from kbdesk.ingest.sheet_comments import COMMENTS_PER_SHEET, row_comments, rows_repeated
from kbdesk.ingest.sheet_text import rows_as_lines
from kbdesk.ingest.xml_tree import Node, elements, parse
from kbdesk.ingest.zip_parts import ZipParts

ODF_FIELDS = {
    "title": ("title",),
    "author": ("initial-creator", "creator"),
    "created": ("creation-date",),
    "modified": ("date",),
}
MAX_REPEAT = 1000  # a repeated row or cell with text is written out at most this often
_BLOCKS = frozenset({"p", "h", "list", "list-item", "list-header", "table", "section", "index-body", "frame"})
# "ruby-text": a ruby (furigana) reading, which would split the word it annotates
_SKIP = frozenset({"note-citation", "annotation-end", "tracked-changes", "forms", "sequence-decls", "ruby-text"})


def text_of(node: Node) -> str:
    """A paragraph's text: spaces, tabs and line breaks as written."""
    parts: list[str] = [node.text]
    stack: list[Node | str] = []
    for c in reversed(node.children):
        stack.append(c.tail)
        stack.append(c)
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        tag = item.tag
        if tag == "s":
            count = item.get("c", "1")
            parts.append(" " * min(int(count) if count.isdigit() else 1, 100))
        elif tag == "tab":
            parts.append("\t")
        elif tag == "line-break":
            parts.append("\n")
        elif tag in _SKIP:
            continue
        else:
            if tag in ("p", "h"):
                parts.append(" ")
            parts.append(item.text)
            for c in reversed(item.children):
                stack.append(c.tail)
                stack.append(c)
    return "".join(parts)


def _repeat(node: Node, name: str) -> int:
    value = node.get(name, "1")
    return int(value) if value.isdigit() else 1


def table_rows(table: Node) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.iter("table-row"):
        cells: list[str] = []
        for cell in row.children:
            if cell.tag not in ("table-cell", "covered-table-cell"):
                continue
            text = "\n".join(text_of(p) for p in cell.children if p.tag in ("p", "h", "list")).strip()
            cells.extend([text] * (min(_repeat(cell, "number-columns-repeated"), MAX_REPEAT) if text else 1))
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            rows.extend([cells] * min(_repeat(row, "number-rows-repeated"), MAX_REPEAT))
    return rows


class _TextReader:
    def __init__(self, budget: Budget) -> None:
        self.outline = Outline()
        self.budget = budget

    def read(self, node: Node) -> None:
        self.read_items(node.children)

    def read_items(self, nodes: list[Node]) -> None:
        work = list(reversed(nodes))
        while work:
            n = work.pop()
            if n.tag == "h":
                text = text_of(n)
                level = n.get("outline-level", "1")
                self.budget.spend(len(text), "the document")
                self.outline.heading(int(level) if level.isdigit() else 1, text)
            elif n.tag == "p":
                frames = list(n.iter("text-box"))
                text = text_of(n) if not frames else _without_frames(n)
                self.budget.spend(len(text), "the document")
                self.outline.line(text)
                for frame in frames:
                    work.extend(reversed(frame.children))
            elif n.tag == "table":
                text = "\n".join(" | ".join(c for c in row if c) for row in table_rows(n))
                self.budget.spend(len(text), "the document")
                self.outline.line(text)
            elif n.tag in _SKIP:
                continue
            else:
                work.extend(reversed(n.children))


def _without_frames(p: Node) -> str:
    """A paragraph's own text, its text boxes left out (they are read as paragraphs of their own)."""
    shallow = Node(p.tag, p.attrs)
    shallow.text = p.text
    for c in p.children:
        if c.tag == "frame" or c.find("text-box") is not None:
            tail = Node("span", {})
            tail.text = c.tail
            shallow.children.append(tail)
        else:
            shallow.children.append(c)
    return text_of(shallow)


def _slide(page: Node, number: int, props: dict[str, str], budget: Budget) -> Section | None:
    title, lines = "", []
    for frame in page.children:
        if frame.tag == "notes":
            notes = [" ".join(text_of(p).split()) for p in frame.iter("p")]
            notes = [n for n in notes if n]
            if notes:
                lines.append("Notes: " + "\n".join(notes))
            continue
        texts = [" ".join(text_of(p).split()) for p in frame.iter("p")]
        texts = [t for t in texts if t]
        for table in frame.iter("table"):
            texts.append("\n".join(" | ".join(c for c in row if c) for row in table_rows(table)))
        if frame.get("class") == "title" and not title:
            title = " ".join(texts)
        else:
            lines.extend(texts)
    text = "\n\n".join([title, *lines] if title else lines).strip()
    budget.spend(len(text), "the presentation")
    return Section(text, {"slide": number, "headings": [title] if title else [], **props}) if text else None


def _row_cells(row: Node) -> list[list[str]]:
    """A row as :func:`table_rows` reads it (its repeats, and the rows of tables in its cells)."""
    holder = Node("table", {})
    holder.children.append(row)
    return table_rows(holder)


# read a row (a block) at a time: a table's rows, and the groups rows sit in, come one by one
_SPLIT = frozenset({"table", "table-rows", "table-row-group", "table-header-rows", "section"})


class _Content:
    """``content.xml`` read a block at a time (:func:`~.xml_tree.elements`), by its kind."""

    def __init__(self, budget: Budget, props: dict[str, str]) -> None:
        self.budget = budget
        self.props = props
        self.kind = ""
        self.text = _TextReader(budget)
        self.sections: list[Section] = []
        self.rows: list[list[str]] = []  # the rows of the table being read
        self.spent = 0  # … and the characters counted for them so far
        self.comments: list[str] = []  # … the comments on its cells (a sheet's)
        self.row_number = 0  # … and the sheet row the next one is
        self.slides = 0
        self.declared: list[str] = []  # a presentation's header and footer declarations

    def block(self, node: Node, kind: str) -> None:
        self.kind = self.kind or kind
        tag = node.tag
        if tag == "table-row":
            rows = _row_cells(node)
            chars = sum(len(c) for row in rows for c in row)
            self.budget.spend(chars, "the document")
            self.spent += chars
            self.rows.extend(rows)
            if kind == "spreadsheet":
                self.comments += row_comments(node, self.row_number, COMMENTS_PER_SHEET - len(self.comments))
                self.row_number += rows_repeated(node)
        elif tag == "table" and not node.children:  # a table ended: its rows came before it
            self.table_done(node)
        elif tag in _SPLIT:
            return  # a group's (or a section's) children came before it
        elif kind == "presentation":
            if tag == "page":
                self.slides += 1
                slide = _slide(node, self.slides, self.props, self.budget)
                if slide is not None:
                    self.sections.append(slide)
            elif tag in ("header-decl", "footer-decl"):
                text = " ".join(node.text_content().split())
                if text:
                    self.declared.append(text)
        elif kind == "text":
            self.text.read_items([node])

    def table_done(self, table: Node) -> None:
        rows, self.rows = self.rows, []
        spent, self.spent = self.spent, 0
        comments, self.comments, self.row_number = self.comments, [], 0
        if self.kind == "spreadsheet":
            name = table.get("name") or "Sheet"
            lines = rows_as_lines(rows) + comments  # comments on its cells last
            text = f"Sheet {name}\n" + "\n".join(lines)
            self.budget.spend(max(len(text) - spent, 0), "the spreadsheet")
            if lines:
                self.sections.append(Section(text, {"sheet": name, **self.props}))
        elif self.kind == "text":
            text = "\n".join(" | ".join(c for c in row if c) for row in rows)
            self.budget.spend(max(len(text) - spent, 0), "the document")
            self.text.outline.line(text)


_FIELDS = frozenset({"page-number", "page-count", "sheet-name", "date", "time", "file-name", "chapter", "title"})
_FURNITURE = frozenset({"header", "footer", "header-left", "footer-left", "header-first", "footer-first"})


def _headers_and_footers(parts: ZipParts) -> list[str]:
    """The text of the master pages' headers and footers (``styles.xml``), each once; fields
    (page numbers, sheet names, dates) left out, and what is then under two words too
    ("Page ???" is a default, not something the author wrote)."""
    data = parts.read("styles.xml")
    if not data:
        return []
    try:
        root = parse(data, "styles.xml")
    except ExtractionError:
        return []
    out: list[str] = []
    for node in root.iter():
        if node.tag not in _FURNITURE and not (node.tag == "frame" and node.get("class") in ("header", "footer")):
            continue  # (a presentation's master page holds its footer in a frame)
        for p in node.iter("p"):
            for field in [c for c in p.iter() if c.tag in _FIELDS]:
                field.text, field.children = "", []
            text = " ".join(text_of(p).split())
            if len(re.findall(r"[^\W\d_]+", text)) >= 2 and text not in out:
                out.append(text)
    return out


KINDS = {
    "text": "OpenDocument text",
    "presentation": "OpenDocument presentation",
    "spreadsheet": "OpenDocument spreadsheet",
}


def extract_opendocument(data: bytes, budget: Budget) -> list[Section]:
    parts = ZipParts(data, "OpenDocument file")
    manifest = parts.read("META-INF/manifest.xml") or b""
    if b"encryption-data" in manifest:  # saved with a password: content.xml is ciphertext
        raise ExtractionError("OpenDocument file is password-protected; kbdesk cannot read it")
    meta = parts.read("meta.xml")
    try:
        props = properties_from(parse(meta, "meta.xml"), ODF_FIELDS) if meta else {}
    except ExtractionError:
        props = {}
    # document-content > body > text | presentation | spreadsheet > blocks, a block at a
    # time (a table a row at a time): memory is a block's, whatever the size of the part
    content = _Content(budget, props)
    pieces = parts.pieces("content.xml", required=True)
    assert pieces is not None
    elements(pieces, "content.xml", 4, content.block, _SPLIT, within=frozenset(KINDS))
    if not content.kind:
        raise ExtractionError("OpenDocument file has no text, slides or sheets kbdesk can read")
    sections = content.sections
    if content.kind == "text":
        sections = content.text.outline.sections(props)
    furniture = _headers_and_footers(parts)
    for text in content.declared:  # a presentation's
        if text not in furniture:
            furniture.append(text)
    if furniture:  # what the author wrote on every page (a presentation's footer may be all it says)
        sections.append(Section("Headers and footers\n\n" + "\n".join(furniture), {"headings": [], **props}))
    if not sections:
        raise ExtractionError(f"{KINDS[content.kind]} has no text")
    return sections
