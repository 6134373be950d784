"""Bytes → text: encoding detection, line endings, and the "is this binary?" check."""

from __future__ import annotations

import codecs
import re

_BOMS = (  # UTF-32 LE before UTF-16 LE: its BOM starts with the same two bytes
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _bom_encoding(data: bytes) -> tuple[str, int] | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    return None


def normalise_newlines(text: str) -> str:
    """Windows ("\\r\\n") and old Mac ("\\r") line endings → "\\n"."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _cp1252_byte(exc: UnicodeError) -> tuple[str, int]:
    """A byte that is not UTF-8, read as cp1252 (what a stray Latin-1 byte in a UTF-8 file
    almost always is): one byte costs at most its own character, never the file."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return bad.decode("cp1252", errors="replace"), exc.end


codecs.register_error("kbdesk-cp1252", _cp1252_byte)

# WHATWG: pages that say Latin-1 or ASCII are decoded as windows-1252, a superset
_SINGLE_BYTE_WESTERN = frozenset({"iso8859-1", "ascii", "cp1252", "iso8859-15"})  # codecs.lookup() names


# WHATWG's readings of East Asian labels: the supersets the pages are really written in
_LABELS = {
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "ms_kanji": "cp932",
    "x-euc-jp": "euc_jp",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "gb2312": "gbk",
    "x-gbk": "gbk",
    "x-mac-roman": "mac_roman",
}


def _codec(name: str) -> str | None:
    """The Python codec for a declared charset name, or None when unknown or not text-safe."""
    name = name.strip().strip("\"'").lower()
    try:
        info = codecs.lookup(_LABELS.get(name, name))
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name.startswith(("utf-16", "utf-32", "utf_16", "utf_32")):
        return None  # a page that says UTF-16 without a BOM is not UTF-16 (the bytes above were ASCII)
    if info.name in _SINGLE_BYTE_WESTERN:
        return "cp1252"
    return "utf-8" if info.name == "utf-8" else info.name


def _utf16_without_bom(data: bytes) -> str | None:
    """ "utf-16-le"/"utf-16-be" when the bytes look like UTF-16 text with no BOM (mostly
    ASCII-range characters: every other byte NUL), else None."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even, odd = sample[0::2], sample[1::2]
    zeros_even, zeros_odd = even.count(0) / len(even), odd.count(0) / len(odd)
    if zeros_odd > 0.4 and zeros_even < 0.05:
        return "utf-16-le"
    if zeros_even > 0.4 and zeros_odd < 0.05:
        return "utf-16-be"
    return None


def decode_text(data: bytes, declared: str | None = None) -> str:
    """Decode by BOM, else UTF-16 recognised without one, else the charset the file
    declares (``declared``: an HTML ``<meta charset>`` or an XML declaration), else UTF-8,
    else the legacy encoding the bytes are most likely in (:mod:`.charset_guess`:
    Shift_JIS, GBK, EUC-KR, cp1251, KOI8-R…, cp1252 when nothing better is known).
    Never raises.

    A file that is mostly UTF-8 keeps it: an invalid byte is read as the cp1252
    character it most likely is (so one stray Latin-1 "é" costs nothing else). NUL
    characters are removed and line endings normalised to "\\n", so a blank line is
    always "\\n\\n" whatever system wrote the file.
    """
    return decode_text_as(data, declared)[0]


def decode_text_as(data: bytes, declared: str | None = None) -> tuple[str, str | None]:
    """:func:`decode_text`, and the encoding *guessed* for a file that declares none and
    is not UTF-8 (a Python codec name: ``cp932``, ``gbk``, ``cp1251``…), else None."""
    found = _bom_encoding(data)
    guessed = None
    if found:
        text = data[found[1] :].decode(found[0], errors="replace")
    elif (wide := _utf16_without_bom(data)) is not None:
        text = data.decode(wide, errors="replace")
    else:
        text, guessed = _decode_8bit(data, _codec(declared) if declared else None)
    return normalise_newlines(text.replace("\x00", "")), guessed


def _decode_8bit(data: bytes, declared: str | None) -> tuple[str, str | None]:
    try:
        if declared not in _SINGLE_BYTE_DECLARED:
            return data.decode(declared or "utf-8"), None
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    if declared is not None and declared not in _SINGLE_BYTE_DECLARED:
        return data.decode(declared, errors="replace"), None  # Shift_JIS, windows-1251…: as declared
    # UTF-8, or a declared Latin-1/cp1252 (often wrong: UTF-8 text sent as "iso-8859-1")
    mixed = data.decode("utf-8", errors="kbdesk-cp1252")
    strict = data.decode("utf-8", errors="ignore")
    multibyte = sum(1 for ch in strict if ord(ch) > 0x7F)  # characters UTF-8 encoded properly
    invalid = len(mixed) - len(strict)  # bytes read as cp1252 instead
    if multibyte and multibyte >= invalid:
        return mixed, None
    if declared is not None:  # a page that says Latin-1 and is not UTF-8: as declared
        return data.decode("cp1252", errors="replace"), None
    from kbdesk.ingest.charset_guess import guess_encoding

    guessed = guess_encoding(data)
    return data.decode(guessed, errors="replace"), guessed


_SINGLE_BYTE_DECLARED = frozenset({None, "cp1252", "utf-8"})  # where the bytes decide


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9_.+-]+)["']""")


def declared_charset(data: bytes) -> str | None:
    """The charset an HTML or XML file declares in its first 4 KB (``<meta charset>``,
    ``<meta http-equiv="Content-Type" content="…; charset=…">``, ``<?xml encoding=…?>``)."""
    head = data[:4096]
    match = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    return match.group(1).decode("ascii") if match else None


def decode_markup(data: bytes) -> str:
    """HTML or XML bytes → text, honouring the charset the file declares (BOMs first)."""
    return decode_text(data, declared_charset(data))


# File signatures that are never text, whatever the file is called.
_MAGIC = (
    b"\x89PNG",
    b"\x7fELF",
    b"GIF87a",
    b"GIF89a",
    b"\xff\xd8\xff",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"%PDF-",
    b"SQLite format 3\x00",
    b"\xfd7zXZ\x00",
    b"7z\xbc\xaf\x27\x1c",
    b"\x28\xb5\x2f\xfd",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
    b"\x00asm",
)
# C0 controls other than \t \n \v \f \r and ESC (ANSI colours in logs), plus DEL.
_CONTROL = frozenset(set(range(32)) - {9, 10, 11, 12, 13, 27}) | {127}
_CONTROL_BYTES = bytes(sorted(_CONTROL))
_CONTROL_CHARS = dict.fromkeys(_CONTROL)  # str.translate: delete them


def is_binary(data: bytes) -> bool:
    """Whether ``data`` is not text: a known binary signature, or more than 5 % control
    characters (NUL apart: a few stray NULs are tolerated, and UTF-16 without a BOM,
    half NULs, is text)."""
    if data.startswith(_MAGIC):
        return True
    found = _bom_encoding(data)
    wide = None if found else _utf16_without_bom(data)
    if found or wide:
        encoding, skip = found or (wide or "utf-16-le", 0)
        text = data[skip : skip + 32768].decode(encoding, "replace")[:8192]
        size, kept = len(text), len(text.translate(_CONTROL_CHARS))
        nuls = text.count("\x00")
    else:
        sample = data[:8192]
        size, kept = len(sample), len(sample.translate(None, _CONTROL_BYTES))
        nuls = sample.count(0)
    controls = size - kept - nuls
    return controls > 0.05 * size or nuls > max(4, 0.1 * size)
