"""LaTeX (.tex) and BibTeX (.bib) → sections of the file's own text.

LaTeX: a section per ``\\part``, ``\\chapter``, ``\\section``, ``\\subsection``,
``\\subsubsection``, ``\\paragraph`` (starred or with a short title too), its path the
sectioning commands above it, by their rank (a title's own commands — ``\\emph{x}`` — are
read as their text); ``\\title{…}`` and ``\\author{…}`` are the document's title and author.
Lines that are comments (``%``) do not start sections. Each section's text begins with
a line naming its path (:func:`~.sections.headed`), so its name finds it first.

BibTeX: a section per entry (``@article{key, …}``), its heading the entry's key, so a
citation key finds its entry; ``@string``, ``@preamble`` and ``@comment`` are text.
"""

from __future__ import annotations

import re

from kbdesk.ingest.front_matter import MAX_VALUE
from kbdesk.ingest.sections import Section, cut_at

_RANKS = {"part": 0, "chapter": 1, "section": 2, "subsection": 3, "subsubsection": 4, "paragraph": 5, "subparagraph": 6}
_SECTIONING = re.compile(r"^[ \t]*\\(" + "|".join(_RANKS) + r")\*?[ \t]*(?:\[[^\]]*\])?[ \t]*\{")
_META = re.compile(r"\\(title|author)[ \t]*(?:\[[^\]]*\])?[ \t]*\{")
_COMMAND = re.compile(r"\\[A-Za-z@]+\*?|[{}~]|\\\\")
_ESCAPED = re.compile(r"\\([&%$#_{}])")
_ENTRY = re.compile(r"^[ \t]*@([A-Za-z]+)[ \t]*[{(][ \t]*([^,\s]*)")


def _braced(text: str, open_at: int, limit: int = 2000) -> str:
    """The text inside the ``{`` at ``open_at`` up to its matching ``}`` (bounded)."""
    depth, i, end = 0, open_at, min(len(text), open_at + limit)
    while i < end:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : i]
        i += 1
    return text[open_at + 1 : end]


def _pdf_strings(tex: str) -> str:
    """``\\texorpdfstring{$\\func{Mint}$}{Mint}`` → ``Mint``: the plain form a title gives for PDF."""
    for _ in range(20):
        at = tex.find("\\texorpdfstring")
        first = tex.find("{", at)
        if at < 0 or first < 0:
            break
        rich = _braced(tex, first)
        second = tex.find("{", first + len(rich) + 2)
        if second < 0:
            break
        plain = _braced(tex, second)
        tex = tex[:at] + plain + tex[second + len(plain) + 2 :]
    return tex


def _plain(tex: str) -> str:
    """A title's text: ``\\&`` is "&", ``\\texorpdfstring``'s plain form, math ``$`` and
    other commands and braces left out."""
    kept = _ESCAPED.sub(lambda m: chr(0xE000 + ord(m.group(1))), _pdf_strings(tex))  # escaped characters set aside
    kept = kept.replace("$", " ")  # math delimiters
    plain = _COMMAND.sub(" ", kept)
    plain = re.sub("[\ue000-\ue07f]", lambda m: chr(ord(m.group()) - 0xE000), plain)
    return " ".join(plain.split())[:MAX_VALUE]


def extract_latex(text: str) -> list[Section]:
    lines = text.split("\n")
    marks: list[tuple[int, list[str]]] = []
    stack: list[tuple[int, str]] = []
    offset = 0
    for i, line in enumerate(lines):
        found = _SECTIONING.match(line)
        if found is not None:
            rank = _RANKS[found.group(1)]
            title = _plain(_braced(text, offset + found.end() - 1)) or found.group(1)
            while stack and stack[-1][0] >= rank:
                stack.pop()
            stack.append((rank, title))
            marks.append((i, [t for _, t in stack]))
        offset += len(line) + 1
    extra: dict[str, str] = {}
    for found in _META.finditer(text[:200_000]):
        key = found.group(1)
        start = text.rfind("\n", 0, found.start()) + 1
        if key not in extra and not text[start : found.start()].lstrip().startswith("%"):
            value = _plain(_braced(text, found.end() - 1))
            if value:
                extra[key] = value
    return cut_at(lines, marks, extra)


def extract_bibtex(text: str) -> list[Section]:
    lines = text.split("\n")
    marks = []
    for i, line in enumerate(lines):
        found = _ENTRY.match(line)
        if found is not None:
            kind, key = found.group(1).lower(), found.group(2).strip()
            marks.append((i, [key] if key and kind not in ("string", "preamble", "comment") else []))
    return cut_at(lines, marks, {})
