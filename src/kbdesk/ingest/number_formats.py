"""A spreadsheet cell's number as its number format shows it: ``25.6%`` not ``0.256``,
``00123`` not ``123``, ``14:30`` not ``1899-12-30 14:30``, ``10.520`` for ``0.000``.

Read from a format code's first section (the one for positive numbers), its quoted text
and ``[…]`` parts set aside: dates and times (``y``, ``d``, ``h``, ``s``; ``m`` with them)
as ISO dates, ``HH:MM`` or ``HH:MM:SS`` times, or both; ``%`` as a percentage with the
code's decimals; a code of zeros only (``00000``) as a zero-padded whole number; ``0.00``
as that many decimals. Thousands separators, currency symbols, fractions, exponents and
elapsed times (``[h]:mm``) are not drawn: such a number reads as Excel's General format
does (at most 15 significant digits).
"""

from __future__ import annotations

import datetime as dt
import re

BUILTIN = {
    1: "0",
    2: "0.00",
    3: "#,##0",
    4: "#,##0.00",
    9: "0%",
    10: "0.00%",
    14: "yyyy-mm-dd",
    15: "d-mmm-yy",
    16: "d-mmm",
    17: "mmm-yy",
    18: "h:mm AM/PM",
    19: "h:mm:ss AM/PM",
    20: "h:mm",
    21: "h:mm:ss",
    22: "yyyy-mm-dd h:mm",
    45: "mm:ss",
    46: "[h]:mm:ss",
    47: "mm:ss.0",
}
_LITERAL = re.compile(r'"[^"]*"|\\.|_.|\*.')
_BRACKET = re.compile(r"\[[^\]]*\]")
_SECTION = re.compile(r'(?:"[^"]*"|\\.|[^;])*')
_DECIMALS = re.compile(r"\.([0#?]+)")


def general(text: str) -> str:
    """A number as Excel's General format shows it: whole numbers without ``.0``, at most
    15 significant digits (no float noise)."""
    try:
        value = float(text)
    except ValueError:
        return text
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.15g}"


def _moment(value: float, epoch1904: bool) -> dt.datetime | None:
    base = dt.datetime(1904, 1, 1) if epoch1904 else dt.datetime(1899, 12, 30)
    try:  # to the nearest second: 14:30 is stored as 0.604166…, a hair under
        return base + dt.timedelta(seconds=round(value * 86400))
    except OverflowError:
        return None


def formatted(raw: str, code: str, epoch1904: bool = False) -> str:
    """``raw`` (a cell's stored number) as the format ``code`` shows it."""
    try:
        value = float(raw)
    except ValueError:
        return raw
    section = (_SECTION.match(code) or _SECTION.match("")).group(0)  # type: ignore[union-attr]
    elapsed = any(ch in b.lower() for b in _BRACKET.findall(section) for ch in "hms")
    bare = _BRACKET.sub("", _LITERAL.sub("", section)).lower()
    if not bare.strip() or "general" in bare or "@" in bare:
        return general(raw)
    has_date = "y" in bare or "d" in bare
    has_time = "h" in bare or "s" in bare
    if (has_date or has_time or "m" in bare) and "0" not in bare.replace(".0", "") and "#" not in bare:
        if elapsed or value < 0:
            return general(raw)
        moment = _moment(value, epoch1904)
        if moment is None:
            return general(raw)
        seconds = "s" in bare
        clock = moment.strftime("%H:%M:%S" if seconds else "%H:%M")
        if has_time and not has_date:
            return clock
        if has_date and not has_time:
            return moment.date().isoformat()
        return f"{moment.date().isoformat()} {clock}"
    decimals = _DECIMALS.search(bare)
    places = len(decimals.group(1).replace("#", "").replace("?", "")) if decimals else 0
    if "%" in bare:
        return f"{value * 100:.{places}f}%"
    if "e+" in bare or "e-" in bare or "/" in bare:
        return general(raw)
    digits = bare.strip()
    if re.fullmatch(r"0{2,}", digits) and value.is_integer() and value >= 0:
        return str(int(value)).zfill(len(digits))
    if places and abs(value) < 1e15:
        return f"{value:.{places}f}"
    return general(raw)
