"""What extraction returns: :class:`Section`, :class:`Extracted`, :class:`ExtractionError`,
and the heading-block merge shared by the Markdown and HTML extractors.

Imported by :mod:`kbdesk.ingest.extract` (which re-exports the three types) and by the
per-format modules; it imports nothing else from :mod:`kbdesk.ingest`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kbdesk.errors import KbdeskError


class ExtractionError(KbdeskError):
    """The document's text could not be extracted; the message says why."""


class ResourceLimit(ExtractionError):
    """Extraction ran out of time: a fault of the moment (a busy machine), not of the file.
    The document is tried again by the next ``add`` (error kind ``resource``)."""


@dataclass
class Section:
    text: str
    metadata: dict = field(default_factory=dict)  # {"page": 3} | {"headings": [...]} | {}


SECTION_GAP = "\n\n"  # what joins the sections of a document into its whole text


def section_spans(sections: list[Section]) -> list[tuple[int, int, dict]]:
    """(start, end, metadata) of each section in the text the sections make when joined
    with :data:`SECTION_GAP` — the offsets every chunk's ``start``/``end`` are given in."""
    spans, base = [], 0
    for section in sections:
        spans.append((base, base + len(section.text), section.metadata or {}))
        base += len(section.text) + len(SECTION_GAP)
    return spans


@dataclass
class Extracted:
    text: str  # all sections joined with SECTION_GAP; stored for re-chunking
    content_type: str  # text/plain, text/markdown, text/csv, text/html, application/pdf
    sections: list[Section]
    # Problems that did not stop the document, one readable line each
    # (e.g. "page 3 could not be read: ..."); empty when all went well.
    warnings: list[str] = field(default_factory=list)

    @property
    def spans(self) -> list[tuple[int, int, dict]]:
        """Where each section lies in :attr:`text` (see :func:`section_spans`)."""
        return section_spans(self.sections)


def sections_from_blocks(blocks: list[tuple[list[str], str, bool]], extra: dict) -> list[Section]:
    """(heading path, text, has body) → Sections; bare headings merge into the next one."""
    sections: list[Section] = []
    carry, carry_path = "", []
    for path, text, has_body in blocks:
        if not text:
            continue
        if carry:
            text = f"{carry}\n\n{text}"
        if has_body:
            sections.append(Section(text, {"headings": path, **extra}))
            carry = ""
        else:
            carry, carry_path = text, path
    if carry:
        sections.append(Section(carry, {"headings": carry_path, **extra}))
    return sections


class Outline:
    """Builds heading blocks from lines and headings as a document is read (Word, OpenDocument,
    RTF): each heading starts a block whose text begins with the heading line, and its
    path is the headings above it (a heading of level n closes those of level >= n)."""

    def __init__(self) -> None:
        self.path: list[tuple[int, str]] = []
        self.lines: list[str] = []
        self.blocks: list[tuple[list[str], str, bool]] = []
        self.has_body = True  # the text before the first heading counts as a body

    def heading(self, level: int, text: str) -> None:
        text = " ".join(text.split())
        if not text:
            return
        self.flush()
        while self.path and self.path[-1][0] >= level:
            self.path.pop()
        self.path.append((level, text))
        self.lines = [text]
        self.has_body = False

    def line(self, text: str) -> None:
        text = text.strip()
        if text:
            self.lines.append(text)
            self.has_body = True

    def flush(self) -> None:
        if self.lines:
            self.blocks.append(([t for _, t in self.path], "\n\n".join(self.lines), self.has_body))
        self.lines = []

    def sections(self, extra: dict) -> list[Section]:
        self.flush()
        return sections_from_blocks(self.blocks, extra)


PATH_SEPARATOR = " › "


def headed(path: list[str], text: str) -> str:
    """``text`` after a first line naming its heading path (``Parser › parse``): how the
    sections of code, LaTeX and org files begin, as a Markdown section begins with its
    heading line. Keyword search then finds a definition or section by its name first
    (measured: docs/FORMATS.md, "Code"), and every chunk's first words say where it is."""
    return f"{PATH_SEPARATOR.join(path)}\n{text}" if path else text


def cut_at(lines: list[str], marks: list[tuple[int, list[str]]], extra: dict) -> list[Section]:
    """Sections of ``lines`` cut at ``marks`` ((line number, heading path), in order),
    each beginning with its path (:func:`headed`); lines before the first mark are a
    section without one. How configuration and LaTeX files are cut at their keys and
    sections."""
    sections: list[Section] = []
    cuts = marks if marks and marks[0][0] == 0 else [(0, []), *marks]
    for k, (start, path) in enumerate(cuts):
        stop = cuts[k + 1][0] if k + 1 < len(cuts) else len(lines)
        body = "\n".join(lines[start:stop]).strip("\n")
        if body.strip():
            sections.append(Section(headed(path, body), {"headings": path, **extra}))
    if not sections:
        raise ExtractionError("file has no text")
    return sections
