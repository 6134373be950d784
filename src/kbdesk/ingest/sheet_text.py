"""Excel (.xlsx) → one section per sheet, metadata ``{"sheet": name}``; rows kept with their header.

Each sheet reads as CSV does (:mod:`.csv_text`): its first row with text is the header,
every later row one line ``header: value; header: value`` (empty cells left out), so a
row found by search says what each value is. Sheets in the workbook's order; shared
strings, inline strings, booleans, numbers as their number format shows them
(:mod:`.number_formats`: percentages, leading zeros, decimals, ISO dates, times). Formulas are read by their
cached value. Sheets are parsed as a stream (no tree), so a large sheet costs its
text, bounded by :class:`~kbdesk.ingest.limits.Budget`. Metadata also carries the file's
properties (:mod:`.office_props`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kbdesk.ingest.limits import Budget
from kbdesk.ingest.number_formats import BUILTIN, formatted, general
from kbdesk.ingest.office_props import ooxml_properties, relationships
from kbdesk.ingest.ooxml_charts import graphics_text, sheet_drawings_text
from kbdesk.ingest.sections import ExtractionError, Section
from kbdesk.ingest.sheet_comments import xlsx_comments
from kbdesk.ingest.xml_tree import Source, parse, stream
from kbdesk.ingest.zip_parts import ZipParts

_COLUMN = re.compile(r"[A-Z]+")


def rows_as_lines(rows: Iterable[list[str]]) -> list[str]:
    """Rows → ``header: value; …`` lines, the first row with text being the header (a header
    whose column holds no value is kept on a line of its own: its text is not lost)."""
    names: list[str] | None = None
    lines: list[str] = []
    used: set[int] = set()
    for row in rows:
        cells = [" ".join(c.split()) for c in row]
        if not any(cells):
            continue
        if names is None:
            names = [c or f"column {i + 1}" for i, c in enumerate(cells)]
            continue
        if len(cells) > len(names):
            names += [f"column {i + 1}" for i in range(len(names), len(cells))]
        line = "; ".join(f"{names[i]}: {c}" for i, c in enumerate(cells) if c)
        used.update(i for i, c in enumerate(cells) if c)
        if line:
            lines.append(line)
    if names is not None:
        unused = [n for i, n in enumerate(names) if i not in used and not n.startswith("column ")]
        if unused:  # a sheet of one row, or headers over empty columns
            lines.insert(0, "; ".join(unused))
    return lines


def _column(ref: str) -> int:
    match = _COLUMN.match(ref)
    if not match:
        return -1
    n = 0
    for ch in match.group(0):
        n = n * 26 + ord(ch) - 64
    return n - 1


def _cell_formats(parts: ZipParts) -> dict[int, str]:
    """Cell format index (``s=`` of a cell) → the number format code it shows numbers in
    (built-in or the workbook's own; General left out): :mod:`.number_formats` draws them."""
    data = parts.read("xl/styles.xml")
    if not data:
        return {}
    root = parse(data, "xl/styles.xml")
    codes = dict(BUILTIN)
    for fmt in root.iter("numFmt"):
        if fmt.get("numFmtId").isdigit():
            codes[int(fmt.get("numFmtId"))] = fmt.get("formatCode")
    xfs = root.find("cellXfs")
    out = {}
    for i, xf in enumerate(x for x in (xfs.children if xfs is not None else []) if x.tag == "xf"):
        fid = xf.get("numFmtId")
        if fid.isdigit() and codes.get(int(fid)):
            out[i] = codes[int(fid)]
    return out


def _shared_strings(parts: ZipParts, part: str | None, budget: Budget) -> list[str]:
    data = parts.pieces(part or "xl/sharedStrings.xml")  # streamed: it can be most of a workbook
    if data is None:
        return []
    strings: list[str] = []
    buf: list[str] = []
    state = {"in_si": False, "in_t": False, "skip": 0}

    def start(tag: str, _attrs: dict[str, str]) -> None:
        if tag == "si":
            state["in_si"], buf[:] = True, []
        elif tag in ("rPh", "phoneticPr"):
            state["skip"] += 1  # phonetic guides repeat the text in kana
        elif tag == "t":
            state["in_t"] = True

    def end(tag: str) -> None:
        if tag == "si":
            text = "".join(buf)
            budget.spend(len(text), "the workbook")
            strings.append(text)
            state["in_si"] = False
        elif tag in ("rPh", "phoneticPr"):
            state["skip"] -= 1
        elif tag == "t":
            state["in_t"] = False

    def text(value: str) -> None:
        if state["in_t"] and not state["skip"]:
            buf.append(value)

    stream(data, "the workbook's shared strings", start, end, text)
    return strings


MAX_COLUMNS = 16_384  # Excel's own limit: a cell past it is a broken reference


def _sheet_rows(
    data: Source, part: str, strings: list[str], formats: dict[int, str], epoch1904: bool, budget: Budget
) -> list[list[str]]:
    rows: list[list[str]] = []
    row: dict[int, str] = {}
    cell: dict[str, str] = {}
    value: list[str] = []
    state = {"in_v": False, "in_t": False, "next_col": 0}

    def start(tag: str, attrs: dict[str, str]) -> None:
        if tag == "row":
            row.clear()
            state["next_col"] = 0
        elif tag == "c":
            cell.clear()
            cell.update(attrs)
            value.clear()
        elif tag == "v":
            state["in_v"] = True
        elif tag == "t":
            state["in_t"] = True

    def end(tag: str) -> None:
        if tag == "v":
            state["in_v"] = False
        elif tag == "t":
            state["in_t"] = False
        elif tag == "c":
            col = _column(cell.get("r", "")) if cell.get("r") else state["next_col"]
            if col < 0:
                col = state["next_col"]
            state["next_col"] = col + 1
            raw = "".join(value)
            kind = cell.get("t", "n")
            if kind == "s":
                try:
                    shown = strings[int(raw)]
                except (ValueError, IndexError):
                    shown = ""
            elif kind == "b":
                shown = "TRUE" if raw.strip() == "1" else "FALSE"
            elif kind in ("str", "inlineStr", "e"):
                shown = raw
            elif raw and cell.get("s", "").isdigit() and int(cell["s"]) in formats:
                shown = formatted(raw, formats[int(cell["s"])], epoch1904)  # 25.6%, 00123, 14:30
            else:
                shown = general(raw) if raw else ""
            if shown.strip() and col < MAX_COLUMNS:
                budget.spend(len(shown), "the workbook")
                row[col] = shown
        elif tag == "row" and row:
            rows.append([row.get(i, "") for i in range(max(row) + 1)])

    def text(chunk: str) -> None:
        if state["in_v"] or state["in_t"]:
            value.append(chunk)

    stream(data, part, start, end, text)
    return rows


def extract_xlsx(data: bytes, budget: Budget) -> list[Section]:
    parts = ZipParts(data, "Excel workbook")
    main = next((t for t, kind in relationships(parts, "").values() if kind == "officeDocument"), "xl/workbook.xml")
    book = parse(parts.read(main, required=True) or b"", main)
    rels = relationships(parts, main)
    pr = book.find("workbookPr")
    epoch1904 = pr is not None and pr.get("date1904") in ("1", "true")
    shared = next((t for t, kind in rels.values() if kind == "sharedStrings"), None)
    strings = _shared_strings(parts, shared, budget)
    formats = _cell_formats(parts)
    props = ooxml_properties(parts)
    sections = []
    for number, sheet in enumerate(book.iter("sheet"), start=1):
        name = sheet.get("name") or "Sheet"
        target = rels.get(sheet.get("id"))
        if target is None and not rels and parts.find(f"xl/worksheets/sheet{number}.xml"):
            target = (f"xl/worksheets/sheet{number}.xml", "worksheet")  # broken relationships: the usual name
        if target is not None and target[1] == "chartsheet":
            charts = [
                t for drawing in relationships(parts, target[0]).values() for t in graphics_text(parts, drawing[0])
            ]
            if charts:
                sections.append(Section(f"Sheet {name}\n" + "\n".join(charts), {"sheet": name, **props}))
            continue
        if target is None or target[1] != "worksheet":
            continue  # a dialog sheet: no cells
        xml = parts.pieces(target[0])
        if xml is None:
            continue
        lines = rows_as_lines(_sheet_rows(xml, target[0], strings, formats, epoch1904, budget))
        lines += sheet_drawings_text(parts, target[0])  # text boxes, charts and diagrams drawn on it
        lines += xlsx_comments(parts, target[0])  # comments (notes) on its cells
        if lines:
            sections.append(Section(f"Sheet {name}\n" + "\n".join(lines), {"sheet": name, **props}))
    if not sections:
        raise ExtractionError("Excel workbook has no cells with text")
    return sections
