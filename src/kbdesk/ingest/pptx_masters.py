"""Text a PowerPoint file puts on its slide masters and layouts: what every slide built on
them shows (a "Confidential" banner, a product name, a footer line) but no slide holds.

Only shapes that are not placeholders: a master's placeholders hold prompts ("Click to
edit Master title style") and each slide its own text for them. The text of all masters
and the layouts the slides use, each line once, is one section at the end headed "Slide
master", so a word that is on every slide is found once, not on every slide.
"""

from __future__ import annotations

from kbdesk.ingest.office_props import relationships
from kbdesk.ingest.sections import ExtractionError, ResourceLimit, Section
from kbdesk.ingest.xml_tree import Node, parse
from kbdesk.ingest.zip_parts import ZipParts

MAX_MASTER_PARTS = 100


def _lines(root: Node) -> list[str]:
    lines = []
    for shape in root.iter("sp"):
        if shape.find("ph") is not None:
            continue  # a placeholder: a prompt, or a slide's own text
        body = shape.child("txBody")
        for p in body.iter("p") if body is not None else ():
            text = " ".join("".join(t.text for t in p.iter("t")).split())
            if text:
                lines.append(text)
    return lines


def master_section(parts: ZipParts, presentation: str, slides: list[str], extra: dict) -> list[Section]:
    """The "Slide master" section (none when the masters and layouts hold no text of their own)."""
    wanted: list[str] = [t for t, kind in relationships(parts, presentation).values() if kind == "slideMaster"]
    for slide in slides:
        wanted += [t for t, kind in relationships(parts, slide).values() if kind == "slideLayout"]
    seen: dict[str, None] = {}
    for part in list(dict.fromkeys(wanted))[:MAX_MASTER_PARTS]:
        try:
            data = parts.read(part)
            if not data:
                continue
            seen.update(dict.fromkeys(_lines(parse(data, part))))
        except ResourceLimit:
            raise
        except ExtractionError:
            continue  # a damaged master costs its text, not the presentation
    if not seen:
        return []
    return [Section("Slide master\n\n" + "\n".join(seen), {"headings": ["Slide master"], **extra})]
