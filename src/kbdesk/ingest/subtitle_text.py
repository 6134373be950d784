"""Subtitles and transcripts (SubRip ``.srt``, WebVTT ``.vtt``) → a section per cue.

A cue's words are its text; its timing line (``00:04:46,070 --> 00:04:49,000``) is not,
but its start is the section's heading (``00:04:46``), so a search result says where in
the recording the words are said (the chunker joins neighbouring cues into one chunk and
keeps each cue's start in the chunk's ``sections``). What is not words is left out:
cue numbers and identifiers, cue settings (``align:start``), WebVTT's header, ``NOTE``,
``STYLE`` and ``REGION`` blocks, markup (``<i>``, ``<c.yellow>``, ``<00:05:04.199>``,
``<font color=…>``, ``{\\an8}``); a voice tag ``<v Roger>`` is the line's ``Roger:``.
Entities (``&amp;``) are read as characters. A line that repeats the last line of the cue
before (YouTube's rolling captions show every line twice) is kept once.

Read leniently, as players do: a ``.vtt`` without its ``WEBVTT`` line, timings with ``.``
or ``,``, without hours or milliseconds, cues with no blank line between them, a SubRip
cue's text broken by a blank line. A file without any timing line is not subtitles and
fails saying so; a cue of more than :data:`MAX_CUE_CHARS` characters fails the file
(subtitles are a few lines at a time: that is a broken or hostile file). Every pattern
runs in time linear in its line.
"""

from __future__ import annotations

import html
import re

from kbdesk.ingest.limits import check_time
from kbdesk.ingest.sections import ExtractionError, Section

MAX_CUE_CHARS = 20_000  # the text of one cue; a real one is one to three lines

_STAMP = r"((?:\d{1,6}:)?\d{1,2}:\d{2})(?:[.,:]\d{1,3})?"
_TIMING = re.compile(rf"[ \t]*{_STAMP}[ \t]*-->[ \t]*{_STAMP}")
_VOICE = re.compile(r"<v(?:\.[\w.-]{1,100})?[ \t]+([^<>\n]{1,200})>")
_TAG = re.compile(r"</?[A-Za-z][\w.-]{0,100}(?:[ \t][^<>\n]{0,500})?>|<\d{1,6}:[\d:.]{1,20}>|\{\\[^{}\n]{0,200}\}")
_VTT_BLOCKS = ("NOTE", "STYLE", "REGION", "WEBVTT")


def extract_srt(text: str) -> list[Section]:
    """A SubRip file's cues, a section each (see the module's docs)."""
    return _cues(text, vtt=False)


def extract_vtt(text: str) -> list[Section]:
    """A WebVTT file's cues, a section each (see the module's docs)."""
    return _cues(text, vtt=True)


def _blocks(text: str) -> list[list[str]]:
    """The file's lines in blocks, at blank lines."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for number, line in enumerate(text.split("\n")):
        if number & 4095 == 0:
            check_time()
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _cues(text: str, *, vtt: bool) -> list[Section]:
    cues: list[tuple[str, list[str]]] = []  # (start as heading, raw text lines)
    timings = 0
    for block in _blocks(text):
        at = [i for i, line in enumerate(block) if _TIMING.match(line)]
        if not at:
            first = block[0].strip()
            if vtt and first.split(maxsplit=1)[0] in _VTT_BLOCKS:
                continue  # the header, a comment, a style sheet, a region's settings
            if cues:  # a cue's text broken by a blank line (a lost timing line's cue number left out)
                cues[-1][1].extend(block[1:] if first.isdigit() else block)
            continue
        timings += len(at)
        for k, i in enumerate(at):  # lines before the first timing line: the cue's identifier
            end = at[k + 1] if k + 1 < len(at) else len(block)
            lines = block[i + 1 : end]
            if end < len(block) and lines and lines[-1].strip().isdigit():
                lines = lines[:-1]  # the next cue's number, no blank line between them
            found = _TIMING.match(block[i])
            assert found is not None
            cues.append((_heading(found.group(1)), lines))
    if not timings:
        raise ExtractionError("no subtitle cues: the file has no 'start --> end' timing line")
    sections: list[Section] = []
    last = ""
    for start, raw in cues:
        if sum(len(line) for line in raw) > MAX_CUE_CHARS:
            raise ExtractionError(
                f"the cue at {start} holds more than {MAX_CUE_CHARS:,} characters: not subtitles (a broken file?)"
            )
        lines = [cleaned for line in raw if (cleaned := _words(line))]
        while lines and lines[0] == last:
            lines = lines[1:]  # rolling captions repeat the line before
        if lines:
            sections.append(Section("\n".join(lines), {"headings": [start]}))
            last = lines[-1]
    if not sections:
        raise ExtractionError("the subtitles have no text (only timings)")
    return sections


def _heading(stamp: str) -> str:
    """``1:02:03`` / ``02:03`` → ``01:02:03`` / ``00:02:03``: where the cue starts."""
    parts = [int(p) for p in stamp.split(":")]
    hours, minutes, seconds = ([0] * (3 - len(parts)) + parts)[-3:]
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}"


def _words(line: str) -> str:
    """A cue line without its markup: the words as they are shown."""
    line = _VOICE.sub(lambda m: m.group(1).strip() + ": ", line)
    return " ".join(html.unescape(_TAG.sub("", line)).split())
