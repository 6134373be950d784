r"""RTF → text per heading block: a small reader of the RTF 1.9 specification.

One pass over the control words with a regular expression, groups on a stack (no
recursion; nesting past :data:`MAX_GROUPS` fails the file). What it keeps:

- text, with ``\par``/``\line`` as line breaks, ``\tab``, table cells joined with " | ",
  one line per row, and the typographic symbols (``\emdash``, ``\lquote``, ``\bullet``…);
- characters by ``\uN`` (skipping the ``\ucN`` fallback characters that follow) and by
  ``\'hh`` in the document's code page (``\ansicpg``) or the current font's charset
  (``\fcharset``: Shift_JIS, GBK, Big5, Cyrillic, Greek… each decoded as a whole run);
- headings: a paragraph with ``\outlinelevelN`` or a paragraph style named "heading N"
  (from the stylesheet) starts a heading block, as in Word;
- field results (a hyperlink's text), footnotes; not field instructions, pictures,
  objects' data, fonts, colours, styles, revision tables or any ``\*`` destination it
  does not know;
- ``\title`` and ``\author`` of the info group into the metadata.
"""

from __future__ import annotations

import re

from kbdesk.ingest.limits import Budget, check_time
from kbdesk.ingest.sections import ExtractionError, Outline, Section

MAX_GROUPS = 1000  # Word writes ~20 levels; nothing real comes near this
_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'([0-9a-fA-F]{2})|\\([^a-zA-Z])|([{}])|([^\\{}\r\n]+)|[\r\n]+"
)
_SKIP = frozenset(
    b"fonttbl colortbl stylesheet listtable listoverridetable revtbl rsidtbl pict object objdata "
    b"fldinst themedata colorschememapping datastore latentstyles xmlnstbl generator mmathPr "
    b"pntxta pntxtb filetbl "
    b"bkmkstart bkmkend protusertbl wgrffmtfilter pgdsctbl passwordhash docvar userprops "
    b"listpicture background shppict nonshppict blipuid sp sn sv".split()
)
_INFO = frozenset(b"title author subject keywords operator company".split())
_CHARS = {
    b"par": "\n",
    b"line": "\n",
    b"sect": "\n",
    b"page": "\n",
    b"tab": "\t",
    b"emdash": "\u2014",
    b"endash": "\u2013",
    b"emspace": " ",
    b"enspace": " ",
    b"qmspace": " ",
    b"bullet": "\u2022",
    b"lquote": "\u2018",
    b"rquote": "\u2019",
    b"ldblquote": "\u201c",
    b"rdblquote": "\u201d",
    b"cell": " | ",
    b"nestcell": " | ",
    b"row": "\n",
    b"nestrow": "\n",
}
_SYMBOLS = {b"~": "\u00a0", b"-": "", b"_": "\u2011", b"\\": "\\", b"{": "{", b"}": "}", b"\n": "\n", b"\r": "\n"}
_CHARSET_CODEPAGES = {
    0: "cp1252",
    77: "mac_roman",
    128: "cp932",
    129: "cp949",
    130: "johab",
    134: "gbk",
    136: "big5",
    161: "cp1253",
    162: "cp1254",
    163: "cp1258",
    177: "cp1255",
    178: "cp1256",
    186: "cp1257",
    204: "cp1251",
    222: "cp874",
    238: "cp1250",
}
_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)


class _State:
    __slots__ = ("dest", "font", "info", "skip", "style", "uc")

    def __init__(self) -> None:
        self.skip = False
        self.uc = 1
        self.font = -1
        self.dest = b""  # the destination this group opened
        self.info = b""  # an info field being read (title, author)
        self.style = -1


def _codepage(number: int) -> str:
    name = (
        f"cp{number}"
        if number not in (10000, 65001, 932, 936, 949, 950)
        else {
            10000: "mac_roman",
            65001: "utf-8",
            932: "cp932",
            936: "gbk",
            949: "cp949",
            950: "big5",
        }[number]
    )
    try:
        "".encode(name)
    except LookupError:
        return "cp1252"
    return name


def extract_rtf(data: bytes, budget: Budget) -> list[Section]:
    head = data.lstrip()[:5]
    if not head.startswith(b"{\\rtf"):
        raise ExtractionError("not an RTF file (no {\\rtf header)")
    state = _State()
    stack: list[_State] = []
    codepage = "cp1252"
    fonts: dict[int, str] = {}  # font number → codec, from \fcharset in the font table
    styles: dict[int, int] = {}  # paragraph style number → heading level
    style_names: dict[int, str] = {}
    info: dict[str, str] = {}
    outline = Outline()
    line: list[str] = []
    raw: list[int] = []  # \'hh bytes waiting to be decoded together (a DBCS character is two)
    skip_chars = 0  # fallback characters still to skip after a \uN
    level: int | None = None  # the paragraph's heading level
    font_number = -1  # the font being defined in the font table
    style_number = -1
    style_text: list[str] = []
    group_start = False  # the token before was "{" (where \* marks an ignorable destination)

    def flush_bytes() -> None:
        if raw:
            codec = fonts.get(state.font, codepage) if state.font >= 0 else codepage
            put(bytes(raw).decode(codec, errors="replace"))
            raw.clear()

    def put(text: str) -> None:
        if state.info:
            key = state.info.decode()
            info[key] = info.get(key, "") + text
        elif state.dest == b"stylesheet" or (stack and stack[-1].dest == b"stylesheet"):
            style_text.append(text)
        elif not state.skip:
            line.append(text)

    def end_paragraph() -> None:
        nonlocal level
        text = "".join(line)
        line.clear()
        budget.spend(len(text), "the RTF file")
        if level is not None and text.strip():
            outline.heading(level, text)
        else:
            outline.line(text)

    pos, size = 0, len(data)
    tokens = 0
    while pos < size:
        tokens += 1
        if not tokens & 8191:
            check_time()
        match = _TOKEN.match(data, pos)
        if match is None:  # a lone backslash at the end, a control word too long: one byte on
            pos += 1
            continue
        pos = match.end()
        word, arg, hexbyte, symbol, brace, text = match.groups()
        opening, group_start = group_start, brace == b"{"
        if hexbyte is not None:
            if skip_chars:
                skip_chars -= 1
                continue
            raw.append(int(hexbyte, 16))
            continue
        if raw:
            flush_bytes()
        if text is not None:
            if skip_chars:
                skipped = min(skip_chars, len(text))
                skip_chars -= skipped
                text = text[skipped:]
            if text:
                if state.dest == b"fonttbl" or (stack and stack[-1].dest == b"fonttbl"):
                    continue
                put(text.decode("latin-1"))
            continue
        if brace == b"{":
            if len(stack) >= MAX_GROUPS:
                raise ExtractionError(f"RTF file nests groups more than {MAX_GROUPS} deep")
            stack.append(state)
            inner = _State()
            inner.skip, inner.uc, inner.font, inner.info, inner.style = (
                state.skip,
                state.uc,
                state.font,
                state.info,
                state.style,
            )
            inner.dest = b""
            state = inner
            skip_chars = 0
            continue
        if brace == b"}":
            if state.dest == b"stylesheet" or (stack and stack[-1].dest == b"stylesheet" and style_number >= 0):
                name = "".join(style_text).strip().rstrip(";").strip()
                if style_number >= 0 and name:
                    style_names[style_number] = name
                    found = _HEADING_STYLE.match(name)
                    if found:
                        styles[style_number] = int(found[1])
                style_text.clear()
                style_number = -1
            if not stack:
                break  # the document's closing brace
            state = stack.pop()
            continue
        if symbol is not None:
            if symbol == b"*":
                if not opening:
                    continue  # \* anywhere but at a group's start means nothing
                state.skip = True  # an ignorable destination: kept only if a known word follows
                state.dest = b"*"
                continue
            if symbol == b"'":
                continue
            if symbol in (b"\n", b"\r"):
                end_paragraph()
                continue
            put(_SYMBOLS.get(symbol, ""))
            continue
        if word is None:
            continue  # a line break in the source: not text
        n = int(arg) if arg is not None else None
        if word == b"u" and n is not None:
            code = n + 65536 if n < 0 else n
            put(chr(code) if 0 <= code < 0x110000 else "\ufffd")
            skip_chars = state.uc
            continue
        if skip_chars:
            skip_chars = 0
        if word == b"uc" and n is not None:
            state.uc = max(0, min(n, 10))
        elif word in _SKIP:
            state.skip = True
            state.dest = word
            if word == b"stylesheet" or word == b"fonttbl":
                state.skip = True
        elif word in _INFO and (stack and stack[-1].dest == b"info"):
            state.info = word
            state.skip = True
        elif word == b"info":
            state.dest = b"info"
            state.skip = True
        elif state.dest == b"*":
            if word in (b"shpinst", b"shptxt", b"fldrslt", b"footnote", b"pnseclvl", b"atnid", b"annotation"):
                state.skip = word not in (b"shptxt", b"fldrslt", b"footnote", b"annotation")
                state.dest = word
            # any other starred word: skipped with its group
        elif word == b"fldrslt" or word == b"shptxt" or word == b"footnote":
            state.skip = stack[-1].skip if stack else False
            state.dest = word
        elif word == b"ansicpg" and n is not None:
            codepage = _codepage(n)
        elif word == b"f" and n is not None:
            if stack and (state.dest == b"fonttbl" or stack[-1].dest == b"fonttbl"):
                font_number = n
            state.font = n
        elif word == b"fcharset" and n is not None and font_number >= 0:
            fonts[font_number] = _CHARSET_CODEPAGES.get(n, codepage)
        elif word == b"s" and n is not None:
            if stack and stack[-1].dest == b"stylesheet":
                style_number = n
            else:
                state.style = n
                if n in styles:
                    level = styles[n]
        elif word == b"outlinelevel" and n is not None:
            level = n + 1 if 0 <= n < 9 else level
        elif word == b"pard":
            level = None
        elif word in _CHARS:
            if state.skip or state.info:
                continue
            if word in (b"par", b"row", b"sect", b"page"):
                if word == b"row":
                    line.append("")
                end_paragraph()
            else:
                put(_CHARS[word])
        elif word == b"bin" and n is not None:
            pos += max(n, 0)  # n bytes of binary data (a picture's): never read as RTF
    if raw:
        flush_bytes()
    end_paragraph()
    props = {
        k: " ".join(v.split())
        for k, v in (("title", info.get("title", "")), ("author", info.get("author", "")))
        if v.strip()
    }
    sections = outline.sections(props)
    for section in sections:  # a table row's trailing " | " (the last \cell of a row)
        section.text = re.sub(r"(?: \| )+(?=\n|$)", "", section.text)
    if not sections:
        raise ExtractionError("RTF file has no text")
    return sections
