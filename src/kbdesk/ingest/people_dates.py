"""Dates as people write them in notes → ISO 8601, the form date filters compare.

Read: ISO days and times (``2024-01-05``, ``2024-01-05 14:30``, ``2024-01-05T14:30:00Z``),
``2024/01/05`` and ``2024.01.05``, month names in English either way round (``January 5,
2024``, ``Jan 5 2024``, ``5 Jan 2024``, ``5 January, 2024``, with or without a weekday
before), and org-mode timestamps (``<2024-01-05 Fri>``, ``[2024-01-05 Fri 14:30]``).
``01/05/2024`` is not read: it is the 5th of January to some people and the 1st of May to
others. Anything unread is kept as written (a filter then leaves the document out, never
an error).
"""

from __future__ import annotations

import re
from datetime import date, datetime

_MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_TIME = r"(?:[ T,]+(\d{1,2}):(\d{2})(?::(\d{2}))?)?"
_YMD = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:\s+[A-Za-z]{2,9}\.?)?" + _TIME + r"\s*$")
_MDY = re.compile(r"([A-Za-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})" + _TIME + r"\s*$")
_DMY = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]{3,9})\.?,?\s+(\d{4})" + _TIME + r"\s*$")
_WEEKDAY = re.compile(r"^(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+", re.IGNORECASE)


def _build(y: int, m: int, d: int, hh: str | None, mm: str | None, ss: str | None) -> str | None:
    try:
        if hh is None:
            return date(y, m, d).isoformat()
        moment = datetime(y, m, d, int(hh), int(mm or 0), int(ss or 0))
        return moment.isoformat(timespec="seconds" if ss else "minutes")
    except ValueError:
        return None


def iso_date(value: object) -> str | None:
    """``value`` (a date as a person wrote it, or a ``date``/``datetime``) in ISO 8601, or
    None when it is not a date read here."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        return None
    text = value.strip().strip("<>[]").strip()
    try:
        datetime.fromisoformat(text)
        return text
    except ValueError:
        pass
    text = _WEEKDAY.sub("", text)
    if (m := _YMD.match(text)) is not None:
        return _build(int(m[1]), int(m[2]), int(m[3]), m[4], m[5], m[6])
    if (m := _MDY.match(text)) is not None and m[1].lower() in _MONTHS:
        return _build(int(m[3]), _MONTHS[m[1].lower()], int(m[2]), m[4], m[5], m[6])
    if (m := _DMY.match(text)) is not None and m[2].lower() in _MONTHS:
        return _build(int(m[3]), _MONTHS[m[2].lower()], int(m[1]), m[4], m[5], m[6])
    return None


def as_written_or_iso(value: object) -> str:
    """The ISO form of a date when it is one read here, else the value as text."""
    return iso_date(value) or ("" if value is None else str(value))
