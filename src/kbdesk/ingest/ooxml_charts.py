"""The text of charts, diagrams and drawings in Office files: what a reader of the slide or sheet sees.

A chart part (``…/charts/chartN.xml``) keeps its title and, cached, every series' name,
categories and values; it reads as ``Chart: title`` then one line per series, ``name:
category value; category value``. A SmartArt diagram's data part and a sheet's
drawing (text boxes, shapes) read as their text runs, one paragraph per line.
"""

from __future__ import annotations

from kbdesk.ingest.office_props import relationships
from kbdesk.ingest.xml_tree import Node, parse
from kbdesk.ingest.zip_parts import ZipParts

MAX_POINTS = 500  # values of one series written out; a chart of 10,000 points is data, not prose


def _values(node: Node | None) -> list[str]:
    if node is None:
        return []
    out = []
    for pt in node.iter("pt"):
        v = pt.child("v")
        out.append(" ".join(v.text.split()) if v is not None else "")
    if not out:  # a literal or a reference without cached points
        out = [" ".join(v.text.split()) for v in node.iter("v")]
    return out[:MAX_POINTS]


def chart_text(parts: ZipParts, part: str) -> str:
    data = parts.read(part)
    if not data:
        return ""
    root = parse(data, part)
    lines = []
    title = root.find("title")
    if title is not None:
        text = " ".join(" ".join(t.text for t in title.iter("t")).split())
        if text:
            lines.append(f"Chart: {text}")
    for ser in root.iter("ser"):
        tx = ser.child("tx")
        name = " ".join(" ".join(_values(tx) or [t.text for t in tx.iter("t")]).split()) if tx is not None else ""
        cats = _values(ser.child("cat") or ser.child("xVal"))
        vals = _values(ser.child("val") or ser.child("yVal"))
        pairs = [f"{c} {v}".strip() for c, v in zip(cats, vals, strict=False)] if cats else vals
        body = "; ".join(p for p in pairs if p)
        if name or body:
            lines.append(f"{name}: {body}" if name and body else name or body)
    if lines and not lines[0].startswith("Chart:"):
        lines.insert(0, "Chart")
    return "\n".join(lines)


def runs_text(parts: ZipParts, part: str) -> str:
    """A diagram's or drawing's text: its paragraphs (``a:p``), one per line."""
    data = parts.read(part)
    if not data:
        return ""
    lines = []
    for p in parse(data, part).iter("p"):
        text = " ".join("".join(t.text for t in p.iter("t")).split())
        if text:
            lines.append(text)
    return "\n".join(lines)


def graphics_text(parts: ZipParts, owner: str) -> list[str]:
    """The charts and diagrams a part (a slide, the document, a drawing) refers to, in its
    relationships' order, each as text."""
    out = []
    for target, kind in relationships(parts, owner).values():
        if kind == "chart":
            text = chart_text(parts, target)
        elif kind == "diagramData":
            text = runs_text(parts, target)
        else:
            continue
        if text:
            out.append(text)
    return out


def sheet_drawings_text(parts: ZipParts, sheet: str) -> list[str]:
    """Text boxes, shapes, charts and diagrams drawn on a worksheet."""
    out = []
    for target, kind in relationships(parts, sheet).values():
        if kind != "drawing":
            continue
        text = runs_text(parts, target)
        if text:
            out.append(text)
        out += graphics_text(parts, target)
    return out
