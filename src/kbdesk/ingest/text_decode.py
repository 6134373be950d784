"""Bytes → text: encoding detection, line endings, and the "is this binary?" check."""

from __future__ import annotations

import codecs

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


def decode_text(data: bytes) -> str:
    """Decode by BOM, else UTF-8, else cp1252. Never raises.

    NUL characters are removed and line endings normalised to "\\n", so a blank line is
    always "\\n\\n" whatever system wrote the file.
    """
    found = _bom_encoding(data)
    if found:
        text = data[found[1] :].decode(found[0], errors="replace")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("cp1252", errors="replace")
    return normalise_newlines(text.replace("\x00", ""))


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
    if data.startswith(_MAGIC):
        return True
    found = _bom_encoding(data)
    if found:
        text = data[found[1] : found[1] + 32768].decode(found[0], "replace")[:8192]
        size, kept = len(text), len(text.translate(_CONTROL_CHARS))
    else:
        sample = data[:8192]
        size, kept = len(sample), len(sample.translate(None, _CONTROL_BYTES))
    return size - kept > 0.05 * size  # a few stray NULs in real text are fine
