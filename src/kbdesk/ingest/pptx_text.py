"""PowerPoint (.pptx) → one section per slide, metadata ``{"slide": n, "headings": [title]}``.

Slides in the presentation's order (``ppt/presentation.xml``'s slide list, not the part
names), each slide's shapes in their order: the title placeholder's text is the slide's
heading, every other text frame one paragraph per line, tables one line per row (cells
joined with " | "), grouped shapes included; the speaker notes follow as "Notes: …".
Hidden slides are read too (they are part of the file). Text the slide masters and
layouts add to every slide comes last, once (:mod:`.pptx_masters`). Metadata also carries
the file's properties (:mod:`.office_props`).
"""

from __future__ import annotations

from kbdesk.ingest.limits import Budget
from kbdesk.ingest.office_props import ooxml_properties, relationships
from kbdesk.ingest.ooxml_charts import graphics_text
from kbdesk.ingest.pptx_masters import master_section
from kbdesk.ingest.sections import ExtractionError, Section
from kbdesk.ingest.xml_tree import Node, parse
from kbdesk.ingest.zip_parts import ZipParts

_TITLES = frozenset({"title", "ctrTitle"})


def _paragraphs(body: Node) -> list[str]:
    lines = []
    for p in body.iter("p"):
        parts = []
        for n in p.iter():
            if n.tag == "t":
                parts.append(n.text)
            elif n.tag == "br":
                parts.append("\n")
        text = "".join(parts).strip()
        if text:
            lines.append(text)
    return lines


def _table(tbl: Node) -> str:
    rows = []
    for tr in tbl.iter("tr"):
        cells = [" ".join(" ".join(_paragraphs(tc)).split()) for tc in tr.children if tc.tag == "tc"]
        cells = [c for c in cells if c]
        if cells:
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def _slide_text(tree: Node) -> tuple[str, list[str]]:
    """(title, other lines) of a slide, shapes in order."""
    title, lines = "", []
    tree_root = tree.find("spTree") or tree
    work = list(reversed(tree_root.children))
    while work:
        shape = work.pop()
        if shape.tag == "grpSp":
            work.extend(reversed(shape.children))
        elif shape.tag == "sp":
            ph = shape.find("ph")
            body = shape.child("txBody")
            if body is None:
                continue
            texts = _paragraphs(body)
            if ph is not None and ph.get("type") in _TITLES and not title:
                title = " ".join(" ".join(texts).split())
            else:
                lines.extend(texts)
        elif shape.tag == "graphicFrame":
            for tbl in shape.iter("tbl"):
                text = _table(tbl)
                if text:
                    lines.append(text)
        elif shape.tag == "AlternateContent":
            choice = shape.child("Choice")
            if choice is not None:
                work.extend(reversed(choice.children))
    return title, lines


def extract_pptx(data: bytes, budget: Budget) -> list[Section]:
    parts = ZipParts(data, "PowerPoint file")
    main = next(
        (t for t, kind in relationships(parts, "").values() if kind == "officeDocument"), "ppt/presentation.xml"
    )
    pres = parse(parts.read(main, required=True) or b"", main)
    rels = relationships(parts, main)
    slides = [rels[s.get("id")][0] for s in pres.iter("sldId") if s.get("id") in rels]
    if not slides:  # no slide list: the slide parts in their numeric order
        named = [n for n in parts.names() if n.startswith("ppt/slides/slide") and n.endswith(".xml")]
        slides = sorted(named, key=lambda n: (len(n), n))
    props = ooxml_properties(parts)
    sections = []
    for number, part in enumerate(slides, start=1):
        xml = parts.pieces(part)
        if xml is None:
            continue
        title, lines = _slide_text(parse(xml, part))
        lines += graphics_text(parts, part)  # charts and SmartArt diagrams on the slide
        for target, kind in relationships(parts, part).values():
            if kind == "notesSlide":
                notes_xml = parts.pieces(target)
                if notes_xml is not None:
                    notes = [
                        line
                        for sp in parse(notes_xml, target).iter("sp")
                        if (ph := sp.find("ph")) is None
                        or ph.get("type") not in ("sldImg", "sldNum", "hdr", "ftr", "dt")
                        for body in [sp.child("txBody")]
                        if body is not None
                        for line in _paragraphs(body)
                    ]
                    if notes:
                        lines.append("Notes: " + "\n".join(notes))
        text = "\n\n".join([title, *lines] if title else lines).strip()
        budget.spend(len(text), "the PowerPoint file")
        if text:
            sections.append(Section(text, {"slide": number, "headings": [title] if title else [], **props}))
    sections += master_section(parts, main, slides, props)  # text on its masters and layouts
    if not sections:
        raise ExtractionError("PowerPoint file has no text")
    return sections
