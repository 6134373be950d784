"""Text normalisation shared by indexing and queries, so both engines match alike.

- :func:`nfkc` — Unicode NFKC: ligatures ("ﬁ" → "fi"), full-width forms (U+FF21
  FULLWIDTH LATIN CAPITAL LETTER A → "A"), compatibility digits and the like become their plain spelling. Applied to
  extracted text before it is chunked (so chunk spans are offsets into the normalised
  text) and to every query before it reaches a store. Case and accents stay, so what a
  user reads is what the document says.
- :func:`fold` — NFKC, then case folding and diacritics removed: the form two words
  are compared in ("Café" and "cafe" are both "cafe"). Both keyword engines fold case in
  their tokenizers (FTS5's ``unicode61``, Postgres's dictionaries) and diacritics
  (FTS5's ``remove_diacritics 2``; on Postgres :data:`DIACRITIC_PAIRS` through
  ``translate`` in the indexed text and :func:`fold_diacritics` in the query).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache


def nfkc(text: str) -> str:
    """``text`` in Unicode NFKC (a no-op, and no copy, for text already in it)."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    return unicodedata.normalize("NFKC", text)


def _base_letter(ch: str) -> str | None:
    """The letter ``ch`` is with its combining marks removed, when that is one other
    character ("é" → "e", "Å" → "A"); None otherwise."""
    decomposed = unicodedata.normalize("NFD", ch)
    if len(decomposed) < 2 or not all(unicodedata.combining(c) for c in decomposed[1:]):
        return None
    base = decomposed[0]
    return base if base != ch and base.isalpha() else None


@lru_cache(maxsize=1)
def diacritic_pairs() -> tuple[str, str]:
    """(accented, plain): every precomposed letter of the Basic Multilingual Plane's
    Latin, Greek and Cyrillic blocks with its diacritics removed, as two strings of equal
    length for ``str.maketrans`` and SQL ``translate``."""
    accented, plain = [], []
    for code in range(0x00C0, 0x2000):  # Latin-1 Supplement … Greek Extended
        ch = chr(code)
        base = _base_letter(ch)
        if base is not None:
            accented.append(ch)
            plain.append(base)
    return "".join(accented), "".join(plain)


@lru_cache(maxsize=1)
def _diacritic_table() -> dict[int, int]:
    accented, plain = diacritic_pairs()
    return str.maketrans(accented, plain)


def fold_diacritics(text: str) -> str:
    """``text`` with the precomposed letters of :func:`diacritic_pairs` replaced by their
    base letter, and combining marks dropped."""
    if text.isascii():
        return text
    text = text.translate(_diacritic_table())
    if any(unicodedata.combining(c) for c in text):
        text = "".join(c for c in text if not unicodedata.combining(c))
    return text


def fold(text: str) -> str:
    """NFKC, case folded, diacritics removed: the form words are compared in."""
    return fold_diacritics(nfkc(text).casefold())
