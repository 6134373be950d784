"""Recursive character chunker (seed 000 §2, PRODUCT.md item 4).

Chunks are cut one after another. For a chunk starting at ``start`` the *window* is
``text[start:start + chunk_size]``:

1. **End.** Separators are tried in order — paragraph, line, sentence, word. The chunk
   ends after the *last* occurrence of the first separator found in the second half of
   the window: as many whole paragraphs as fit, else as many whole lines, then
   sentences, then words (greedy merging, coarsest level first). Requiring the second
   half keeps a short heading or a one-line paragraph from becoming a chunk of its own.
   With no separator in the second half, the chunk ends at the last separator anywhere
   in the window, so that the long word after it starts the next chunk whole — unless
   that word would not fit there either. Such words (a URL, a base64 blob, CJK text
   without punctuation) are cut hard at ``chunk_size`` characters: **no chunk is ever
   longer than chunk_size**.
2. **Overlap.** The next chunk starts inside this one, at most ``chunk_overlap``
   characters before its end, at a separator boundary: the coarsest separator that
   leaves at least half of that overlap, else the earliest separator of any kind. With
   no separator in reach it starts at a plain character (only if that keeps at least
   half the overlap: this is what CJK text and hard-cut words get).
3. **Strip.** Chunks are stripped of surrounding whitespace; blank chunks, and chunks
   that add nothing after the previous one, are dropped. ``metadata["start"]`` and
   ``["end"]`` are offsets of the stripped content: ``content == text[start:end]``.

Only ``str.find``/``rfind`` within a window and one slice per chunk touch the text, so
time is linear in ``len(text)``; the text is never split into intermediate strings.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.ingest.sections import SECTION_GAP

# Paragraph → line → sentence → word (seed 000 §2). The sentence level also knows
# "? " and "! " (a run of questions is sentences too, not just words) and the CJK full
# stop "。" (CJK text has no spaces: without it, CJK would only ever be cut hard).
DEFAULT_SEPARATORS = ("\n\n", "\n", ". ", "? ", "! ", "。", " ")


@dataclass
class Chunk:
    content: str
    index: int  # ordinal within the document, 0-based, contiguous
    token_count: int  # estimate_tokens(content)
    metadata: dict[str, Any] = field(default_factory=dict)  # start/end + section metadata


_ASCII_WHITESPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"  # what str.split() splits ASCII at
_NOT_WIDE_LEAD = bytes(range(0xE0))  # deleting these leaves one lead byte per wide character


def estimate_tokens(text: str) -> int:
    """Estimate the token count of *text* without a tokenizer.

    *Wide* characters — those taking 3 or 4 bytes in UTF-8: CJK ideographs, kana,
    Hangul, CJK punctuation, Indic and Thai scripts, most symbols, emoji — count one
    token each (BPE tokenizers spend about that on them). For the rest the estimate is
    the larger of ``characters / 4`` and ``words * 4 / 3``, the usual rules of thumb for
    English; taking the larger errs towards over-counting (the safe side for token
    budgets) and still counts text made of short words or numbers sensibly. Words are
    whitespace-separated runs (a run of wide characters between spaces counts as a word
    too). Blank text is 0 tokens; anything else at least 1.
    """
    if not text or text.isspace():
        return 0
    if text.isascii():
        data, wide, other_spaces = text.encode("ascii"), 0, 0
    else:
        data = text.encode("utf-8", "surrogatepass")  # lone surrogates: 3 bytes, wide
        wide = len(data.translate(None, _NOT_WIDE_LEAD))
        # every non-ASCII whitespace character is U+0085, U+00A0 or wide
        other_spaces = data.count(b"\xc2\x85") + data.count(b"\xc2\xa0") + wide
    narrow = len(text) - wide
    # words <= whitespace characters + 1: skip counting them when they cannot win (prose)
    spaces = len(data) - len(data.translate(None, _ASCII_WHITESPACE)) + other_spaces
    if (spaces + 1) * 16 <= narrow * 3:
        return max(1, round(wide + narrow / 4))
    if not narrow:
        return wide
    return max(1, round(wide + max(narrow / 4, len(text.split()) * 4 / 3)))


def split_text(
    text: str,
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
    separators: Sequence[str] = DEFAULT_SEPARATORS,
) -> list[Chunk]:
    """Split *text* into chunks of at most *chunk_size* characters (see module doc).

    Each chunk's metadata is ``{"start": int, "end": int}``. Empty strings in
    *separators* are ignored: cutting between characters is always the last resort.
    Raises ValueError for a chunk size below 1 or an overlap outside [0, chunk_size).
    """
    seps = _check(chunk_size, chunk_overlap, separators)
    return [
        Chunk(content, i, estimate_tokens(content), {"start": start, "end": end})
        for i, (start, end, content) in enumerate(_chunk_spans(text, chunk_size, chunk_overlap, seps))
    ]


def chunk_sections(
    sections: Iterable[Any],
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
    separators: Sequence[str] = DEFAULT_SEPARATORS,
    merge: bool = False,
) -> list[Chunk]:
    """Chunk a document given as sections (objects with ``.text`` and ``.metadata``):
    kbdesk's one chunking entry point.

    Every section is chunked on its own: chunks never straddle two sections. With
    *merge*, small neighbouring sections whose metadata differ in their ``headings``
    alone (a Markdown or HTML document's sections; never two PDF pages) become one chunk
    when together they fit in one; a longer section is still split on its own. (Off by
    default: on Markdown package docs merging gave 23% fewer chunks but ranked a little
    worse by meaning — docs/BENCHMARKS.md, *Chunking Markdown*.) Each chunk gets a deep
    copy of its (first) section's metadata
    plus ``start``/``end`` offsets into the document's whole text — the sections joined
    with ``"\n\n"`` (:data:`kbdesk.ingest.sections.SECTION_GAP`), as extraction stores
    it — overriding any such keys the section carried; a chunk made of several sections
    also gets ``"sections"``: the heading path, start and end of each of them, in order.
    Indexes run across all sections.
    """
    seps = _check(chunk_size, chunk_overlap, separators)
    chunks: list[Chunk] = []
    for offset, group in _groups(sections, chunk_size if merge else 0):
        filled = [piece for piece in group if not piece[2].isspace() and piece[2]]
        if len(filled) > 1:
            chunks.append(_merged_chunk(offset, group, filled, len(chunks)))
            continue
        for start, _end, text, base in filled:
            for first, last, content in _chunk_spans(text, chunk_size, chunk_overlap, seps):
                metadata = _copy(base)
                metadata["start"], metadata["end"] = start + first, start + last
                chunks.append(Chunk(content, len(chunks), estimate_tokens(content), metadata))
    return chunks


_Piece = tuple[int, int, str, dict]  # a section: start and end in the document, text, metadata


def _groups(sections: Iterable[Any], limit: int) -> list[tuple[int, list[_Piece]]]:
    """Runs of neighbouring sections that fit together in *limit* characters (0: none
    merge), each as ``(offset, pieces)``."""
    groups: list[tuple[int, list[_Piece]]] = []
    offset = 0
    for section in sections:
        text = section.text
        piece = (offset, offset + len(text), text, getattr(section, "metadata", None) or {})
        if groups and piece[1] - groups[-1][0] <= limit and _same_but_headings(groups[-1][1][0][3], piece[3]):
            groups[-1][1].append(piece)
        else:
            groups.append((offset, [piece]))
        offset = piece[1] + len(SECTION_GAP)
    return groups


def _same_but_headings(a: dict, b: dict) -> bool:
    """Whether two sections' metadata differ in their ``headings`` alone."""
    return a.keys() == b.keys() and all(key == "headings" or a[key] == b[key] for key in a)


def _bounds(piece: _Piece) -> tuple[int, int]:
    """Start and end of a section's stripped text in the document."""
    start, _, text, _ = piece
    return start + len(text) - len(text.lstrip()), start + len(text.rstrip())


def _merged_chunk(offset: int, group: list[_Piece], filled: list[_Piece], index: int) -> Chunk:
    """One chunk of whole sections that fit together: the document's text from the first
    section with text to the last, metadata of the first plus ``sections``."""
    start, end = _bounds(filled[0])[0], _bounds(filled[-1])[1]
    content = SECTION_GAP.join(piece[2] for piece in group)[start - offset : end - offset]
    metadata = _copy(filled[0][3])
    metadata["start"], metadata["end"] = start, end
    metadata["sections"] = [
        {"headings": _copy(piece[3].get("headings") or []), "start": _bounds(piece)[0], "end": _bounds(piece)[1]}
        for piece in filled
    ]
    return Chunk(content, index, estimate_tokens(content), metadata)


# --------------------------------------------------------------------------- helpers


def _copy(value: Any) -> Any:
    """A deep copy of JSON-like metadata (dicts, lists, text, numbers), several times
    cheaper than ``copy.deepcopy``; anything else is deep-copied the usual way."""
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    return copy.deepcopy(value)


def _check(chunk_size: Any, chunk_overlap: Any, separators: Sequence[str]) -> tuple[str, ...]:
    """Validate the arguments; return the separators without empty strings."""
    for name, value in (("chunk_size", chunk_size), ("chunk_overlap", chunk_overlap)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(
            f"chunk_overlap must be at least 0 and smaller than chunk_size ({chunk_size}), got {chunk_overlap}"
        )
    if separators is DEFAULT_SEPARATORS:
        return DEFAULT_SEPARATORS
    if isinstance(separators, str):
        raise ValueError("separators must be a sequence of strings, not a single string")
    seps = tuple(separators)
    if not all(isinstance(sep, str) for sep in seps):
        raise ValueError(f"separators must all be strings, got {seps!r}")
    return tuple(sep for sep in seps if sep)


def _chunk_spans(text: str, size: int, overlap: int, seps: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """``(start, end, content)`` of each chunk of *text*, in order."""
    n = len(text)
    out: list[tuple[int, int, str]] = []
    start = done = 0  # raw start of the next chunk; raw end of the previous one
    while done < n:
        end = n if start + size >= n else _chunk_end(text, start, done, size, overlap, seps)
        raw = text[start:end]
        left = raw.lstrip()
        first = end - len(left)
        content = left.rstrip()
        if content and (not out or first + len(content) > out[-1][1]):
            out.append((first, first + len(content), content))
            if end < n:
                start = _overlap_start(text, first, first + len(content), end, overlap, seps)
        else:
            start = end  # blank, or nothing new: no overlap to carry
        done = end
    return out


def _chunk_end(text: str, start: int, done: int, size: int, overlap: int, seps: tuple[str, ...]) -> int:
    """Where the chunk starting at *start* ends, in ``(done, start + size]``."""
    limit = start + size
    floor = max(start + size // 2, done + 1)
    for sep in seps:  # the coarsest separator in the second half: its last occurrence
        pos = text.rfind(sep, max(start, floor - len(sep)), limit)
        if pos != -1:
            return pos + len(sep)
    latest = done  # else the last separator anywhere that still adds text ...
    for sep in seps:
        pos = text.rfind(sep, start, limit)
        if pos != -1 and pos + len(sep) > latest:
            latest = pos + len(sep)
    # ... if the word after it fits in the next chunk; if not, cutting it now is as good
    reach = latest + size - overlap
    if latest > done and any(text.find(sep, max(start, limit - len(sep) + 1), reach) != -1 for sep in seps):
        return latest
    return limit


def _overlap_start(
    text: str, prev_start: int, prev_end: int, fallback: int, overlap: int, seps: tuple[str, ...]
) -> int:
    """Where the chunk after ``text[prev_start:prev_end]`` starts (*fallback*: no overlap).

    The start lies after *prev_start* and at most *overlap* characters before *prev_end*.
    """
    lo = max(prev_end - overlap, prev_start)
    if overlap == 0 or lo >= prev_end:
        return fallback
    half = lo + (prev_end - lo) // 2
    earliest = prev_end
    for sep in seps:
        # the separator must end before prev_end so that the overlap is not empty
        pos = text.find(sep, lo, prev_end - 1)
        if pos != -1:
            boundary = pos + len(sep)
            if boundary <= half:
                return boundary
            if boundary < earliest:
                earliest = boundary
    if earliest < prev_end:
        return earliest
    if lo > prev_start and 2 * (prev_end - lo) >= overlap:
        return lo
    return fallback
