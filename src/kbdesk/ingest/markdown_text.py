"""Markdown → sections: the *Markdown source* of each heading block (heading line
included), so tables, lists and code stay readable; metadata ``{"headings": [...]}``.

Which lines are headings is markdown-it-py's (CommonMark + tables) decision: only
top-level headings count, not a ``#`` line in a code block, a list or a block quote.
YAML front matter is not part of the text: its ``title``, ``tags``, ``date``, ``author``
and ``created`` go into every section's metadata, with the note's inline ``#tags``
(:mod:`.front_matter`), so they are the document's own (search filters read them) without
their lines being indexed as prose.

Speed. markdown-it-py's block parser costs about 10 µs a line, and nearly all of that
would be spent on paragraphs, lists and tables that cannot hold a top-level heading.
So the parser only sees the parts of the document that matter (:func:`_headings`):

- The document is cut at *restart points*: a line that starts in column 0 right after a
  blank line. At such a line every CommonMark block has ended — paragraphs, tables,
  block quotes, HTML blocks of kinds 6-7 end at a blank line, indented code and list
  items at a line that is not indented — except a fenced code block or an HTML block of
  kinds 1-5 (``<script>``, ``<pre>``, ``<style>``, ``<textarea>``, comments,
  ``<?``, ``<!X``, CDATA). (A list whose next item starts there goes on in the
  whole-document parse but restarts here; no top-level block changes.)
- A piece between two restart points is parsed only if one of its lines could be a
  heading (``#`` or a setext underline, after any indentation) or could start one of
  those spanning blocks (a line starting with ``` ``` ```, ``~~~``, ``<`` + s/p/t/!/?),
  or has a deep container prefix (see below). Any other piece has no heading and
  leaves no block open, so it is skipped.
- When a parsed stretch ends inside a fenced code or HTML block (the block reaches the
  stretch's last line), the stretch is parsed again from that block's first line,
  further on, until the block ends.
- A stretch that is a single ATX heading line (``## Title``, the usual heading of a
  note) is read directly, as markdown-it's heading rule reads it (:func:`_atx`), since
  starting the parser costs more than such a line.
- markdown-it stops parsing the rest of the *document* once containers nest deeper
  than its ``maxNesting``; if any parsed stretch gets near that depth, the whole
  document is parsed the ordinary way instead.

The result is the same as parsing the whole document (the tests compare the two on
generated documents). On the documents of ``bench/bench_extract.py`` a quarter of the
text reaches the parser (the code blocks, mostly) and extraction is 4-6 times faster.
The reasoning holds for the CommonMark block rules plus tables; a block plugin added to
the parser (``:::`` containers, footnotes, ...) has to be checked against it again.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from typing import TYPE_CHECKING

from kbdesk.ingest.front_matter import clean_tags, inline_tags, split_front_matter
from kbdesk.ingest.sections import ExtractionError, Section, sections_from_blocks

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

# A line that could be a top-level heading: "#" to "######" then a space or the line end,
# or a setext underline ("===" / "---"); any indentation (the parser decides).
_MAYBE_HEADING = re.compile(r"^[ \t]*(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$)", re.M)
# A line that could open a block that goes on past a blank line: a code fence, or an
# HTML block of kinds 1-5 (<script <pre <style <textarea, <!-- <? <!X <![CDATA[).
_MAYBE_SPANNING = re.compile(r"^[ \t]*(?:```|~~~|<[sSpPtT!?])", re.M)
# A longish run of indentation and container markers (> - + * 1. 1)): maybe deep nesting.
# Nesting 20 deep takes 20 levels: a block quote is one level and one ">" column, a list
# two levels and at least two columns (marker and space, or indentation under its
# parent), so the line that opens the deepest container starts with ~19 columns of these
# characters. Lines with 16 or more (a tab counting 4) are parsed.
_CONTAINER_PREFIX = re.compile(r"^[ \t>*+\-0-9.)]{6,}", re.M)
# The start of a line that follows a blank line and does not start with a space or tab.
_RESTART = re.compile(r"^[ \t]*\n(?=[^ \t\n])", re.M)
_NON_SPACE = re.compile(r"\S")
# An ATX heading's opening sequence at the start of a line (no indentation: see _atx).
_ATX_OPEN = re.compile(r"#{1,6}(?=[ \t]|$)")
# Heading text with none of these needs no inline parsing: it reads as it is written.
_INLINE_SYNTAX = re.compile(r"[\\`*_\[\]!<&]")


@functools.cache
def _parsers() -> tuple[MarkdownIt, MarkdownIt]:
    from markdown_it import MarkdownIt

    # Only block structure is needed to find headings; inline parsing runs for heading
    # text only, and only when it has inline syntax.
    blocks = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    return blocks, MarkdownIt("commonmark")


def _md_inline_text(token: Token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_md_inline_text(child))
    return " ".join("".join(parts).split())


def _heading_title(content: str) -> str:
    if _INLINE_SYNTAX.search(content) is None:
        return " ".join(content.split())
    return _md_inline_text(_parsers()[1].parseInline(content)[0])


def _line_starts(text: str) -> list[int]:
    starts = [0]
    find, pos = text.find, text.find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts


# A heading: (offset of its first line, offset of the line after it, level, raw content)
_Heading = tuple[int, int, int, str]


def _headings_in(tokens: list[Token], chunk: str, base: int, before_line: int | None = None) -> list[_Heading]:
    """Top-level headings among ``tokens`` (parsed from ``chunk``, which starts at
    offset ``base``), those starting before line ``before_line`` if given."""
    found = [
        (i, tok)
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open"
        and tok.level == 0
        and tok.map
        and (before_line is None or tok.map[0] < before_line)
    ]
    if not found:
        return []
    starts = _line_starts(chunk)
    starts.append(len(chunk))
    return [
        (
            base + starts[span[0]],
            base + starts[min(span[1], len(starts) - 1)],
            int(tok.tag[1]),
            tokens[i + 1].content,
        )
        for i, tok in found
        if (span := tok.map)
    ]


def _atx(line: str) -> tuple[int, str] | None:
    """``line`` (one line at the start of a top-level block) as an ATX heading — (level,
    raw content) as markdown-it reads it — or None when it is not one, or is a case
    left to the parser."""
    m = _ATX_OPEN.match(line)
    if m is None:
        return None
    pos, end = m.end(), len(line.rstrip(" \t"))
    closing = len(line[:end].rstrip("#"))  # a closing run of "#"s counts only after a space or tab
    if closing > pos and line[closing - 1] in " \t":
        end = closing
    content = line[pos:end].strip(" \t")
    if content != content.strip():  # other white space at an edge: the parser's call
        return None
    return len(m.group()), content


def _headings_whole(src: str) -> list[_Heading]:
    """The headings of ``src`` from one parse of the whole text (the reference)."""
    return _headings_in(_parsers()[0].parse(src), src, 0)


def _headings(src: str) -> list[_Heading]:
    """The headings of ``src``, parsing only the stretches that can hold one."""
    parser = _parsers()[0]
    deep = parser.options.maxNesting - 1  # a token this deep: nesting may have cut the parse
    end = len(src)
    restarts = [0] + [m.end() for m in _RESTART.finditer(src)]
    wanted = {
        bisect_right(restarts, m.start()) - 1
        for pattern in (_MAYBE_HEADING, _MAYBE_SPANNING)
        for m in pattern.finditer(src)
    }
    for m in _CONTAINER_PREFIX.finditer(src):
        prefix = m.group()
        if len(prefix) + 3 * prefix.count("\t") >= deep - 3:  # columns, a tab counting 4
            wanted.add(bisect_right(restarts, m.start()) - 1)

    headings: list[_Heading] = []
    done = 0  # src[:done] has been parsed or skipped
    pieces = sorted(wanted)
    i = 0
    while i < len(pieces):
        first = last = pieces[i]
        while i + 1 < len(pieces) and pieces[i + 1] == last + 1:  # adjacent pieces: one stretch
            i += 1
            last = pieces[i]
        i += 1
        start = max(restarts[first], done)
        stop = restarts[last + 1] if last + 1 < len(restarts) else end
        if start >= stop:
            continue
        while True:
            chunk = src[start:stop]
            if start == restarts[first]:
                line, _, rest = chunk.partition("\n")
                found = _atx(line) if not rest.strip() else None
                if found is not None:  # the stretch is one ATX heading line: no parse needed
                    headings.append((start, start + min(len(line) + 1, len(chunk)), found[0], found[1]))
                    done = stop
                    break
            tokens = parser.parse(chunk)
            if any(tok.level >= deep for tok in tokens):
                return _headings_whole(src)
            # the last top-level block: did it run into the end of the stretch?
            last_block = next((tok for tok in reversed(tokens) if tok.level == 0 and tok.nesting != -1), None)
            if (
                stop < end
                and last_block is not None
                and last_block.map
                and last_block.type in ("fence", "html_block")
                and last_block.map[1] >= chunk.count("\n")
            ):
                # Unclosed at the cut: keep what came before it, parse again from the
                # block's first line (a top-level block start), twice as far.
                headings += _headings_in(tokens, chunk, start, before_line=last_block.map[0])
                start += _line_starts(chunk)[last_block.map[0]]
                k = bisect_right(restarts, stop + (stop - start))
                stop = restarts[k] if k < len(restarts) else end
                continue
            headings += _headings_in(tokens, chunk, start)
            done = stop
            break
    return headings


def extract_markdown(text: str) -> list[Section]:
    fields, body = split_front_matter(text)
    tags = clean_tags([*fields.get("tags", ()), *inline_tags(body)])
    extra = {**fields, "tags": tags} if tags else {k: v for k, v in fields.items() if k != "tags"}
    if not body.strip() and body != text:  # nothing but front matter: its title, else its lines
        body = str(fields.get("title") or "") or text.strip().strip("-.").strip()
    sections = _sections(body)  # the front matter is the document's metadata, not its text
    for section in sections:
        section.metadata = {**section.metadata, **extra}
    return sections


def _sections(text: str) -> list[Section]:
    headings = _headings(text)
    first = headings[0][0] if headings else len(text)
    blocks: list[tuple[list[str], str, bool]] = [([], text[:first].strip(), True)]
    stack: list[tuple[int, str]] = []
    for i, (start, end, level, content) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, _heading_title(content)))
        stop = headings[i + 1][0] if i + 1 < len(headings) else len(text)
        has_body = end < stop and _NON_SPACE.search(text, end, stop) is not None
        blocks.append(([t for _, t in stack if t], text[start:stop].strip(), has_body))
    sections = sections_from_blocks(blocks, {})
    if not sections:
        raise ExtractionError("file has no text")
    return sections
