"""The comments (notes) on a sheet's cells: Excel's ``xl/commentsN.xml`` parts and
OpenDocument's ``office:annotation`` elements, each one line ``Comment B2: text`` after
the sheet's rows, so a word written only in a comment is found in its sheet."""

from __future__ import annotations

from kbdesk.ingest.office_props import relationships
from kbdesk.ingest.sections import ExtractionError, ResourceLimit
from kbdesk.ingest.xml_tree import Node, parse
from kbdesk.ingest.zip_parts import ZipParts


def _line(ref: str, text: str) -> str:
    text = " ".join(text.split())
    return f"Comment {ref}: {text}" if ref else f"Comment: {text}"


def xlsx_comments(parts: ZipParts, sheet: str) -> list[str]:
    """The comments on the cells of the worksheet part ``sheet`` (none when it has none,
    or its comments part cannot be read: they cost the comments, not the sheet)."""
    lines: list[str] = []
    for target, kind in relationships(parts, sheet).values():
        if kind != "comments":
            continue
        try:
            data = parts.read(target)
            if not data:
                continue
            root = parse(data, target)
        except ResourceLimit:
            raise
        except ExtractionError:
            continue
        for comment in root.iter("comment"):
            body = comment.child("text")
            text = "".join(t.text_content() for t in body.iter("t")) if body is not None else ""
            if text.strip():
                lines.append(_line(comment.get("ref"), text))
    return lines


def annotation_text(annotation: Node) -> str:
    """An OpenDocument ``office:annotation``'s text (its paragraphs; not its author or date)."""
    paragraphs = [p.text_content() for p in annotation.children if p.tag in ("p", "list")]
    return " ".join(" ".join(p.split()) for p in paragraphs if p.strip())


def _letters(column: int) -> str:
    out = ""
    column += 1
    while column:
        column, rest = divmod(column - 1, 26)
        out = chr(65 + rest) + out
    return out


COMMENTS_PER_SHEET = 10_000


def ods_comments(table: Node, limit: int = COMMENTS_PER_SHEET) -> list[str]:
    """The comments on an OpenDocument sheet's cells (``office:annotation`` in a cell),
    with the cell's reference (repeated rows and columns counted), at most ``limit``."""
    lines: list[str] = []
    row_number = 0
    for row in table.iter("table-row"):
        lines += row_comments(row, row_number, limit - len(lines))
        row_number += rows_repeated(row)
    return lines


def row_comments(row: Node, row_number: int, limit: int) -> list[str]:
    """The comments on the cells of one sheet row (``row_number`` counted from 0), at most
    ``limit`` (a sheet read a row at a time gives its rows one by one)."""
    lines: list[str] = []
    column = 0
    for cell in row.children:
        if cell.tag not in ("table-cell", "covered-table-cell"):
            continue
        for note in cell.children:
            if note.tag == "annotation" and len(lines) < limit:
                text = annotation_text(note)
                if text:
                    lines.append(_line(f"{_letters(column)}{row_number + 1}", text))
        column += _count(cell.get("number-columns-repeated"))
    return lines


def rows_repeated(row: Node) -> int:
    """How many sheet rows a ``table-row`` stands for (``number-rows-repeated``)."""
    return _count(row.get("number-rows-repeated"))


def _count(value: str) -> int:
    return int(value) if value.isdigit() and int(value) > 0 else 1
