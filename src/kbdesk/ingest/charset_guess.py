"""Which legacy encoding a text file that declares none is written in.

Asked only after UTF-8 failed (:mod:`.text_decode`: a BOM, UTF-16, a declared charset and
UTF-8 come first). The answer, measured on short and long Japanese, Chinese, Korean,
Russian and Western European texts (docs/FORMATS.md, "Text in legacy encodings"):

1. **Cyrillic single-byte text** (cp1251, KOI8-R) is recognised by its bytes: nearly every
   byte above 0x7F lies in 0xC0-0xFF and such bytes make up a large share of the letters
   (whole words of them, unlike the accents of French or German). Lower-case letters are
   0xE0-0xFF in cp1251 and 0xC0-0xDF in KOI8-R, and running text is mostly lower case.
   (charset-normalizer reads a short KOI8-R text as Shift_JIS.)
2. Otherwise charset-normalizer (the detector ``requests`` uses, pure Python) on the first
   256 KB. Its answer is taken when it is a multi-byte East Asian encoding (Shift_JIS,
   GBK/GB18030, Big5, EUC-JP, EUC-KR/cp949) that decodes the sample without error (and,
   for Shift_JIS, not into half-width katakana, which is how a short Big5 text reads as
   it), or when it recognised the language of the text (Greek, Hebrew, Arabic, Thai...).
3. Else cp1252 (Latin-1's superset, as browsers read it): charset-normalizer calls a
   French or German Latin-1 text cp1250 (Central European), which garbles a few letters.
"""

from __future__ import annotations

import codecs

SAMPLE = 256 * 1024
_EAST_ASIAN = frozenset(
    {
        "cp932",
        "shift_jis",
        "shift_jis_2004",
        "shift_jisx0213",
        "euc_jp",
        "euc_jis_2004",
        "euc_jisx0213",
        "gb2312",
        "gbk",
        "gb18030",
        "hz",
        "big5",
        "big5hkscs",
        "cp950",
        "euc_kr",
        "cp949",
        "johab",
        "iso2022_jp",
        "iso2022_kr",
    }
)
# What the detector's names are read as: the supersets files are really written in
_SUPERSET = {"shift_jis": "cp932", "euc_kr": "cp949", "gb2312": "gbk", "big5": "cp950"}
# Latin-script single-byte encodings: cp1252 reads their text as well as the detector's guess
_LATIN = frozenset(
    {"cp1250", "cp1252", "cp1254", "cp1257", "latin_1", "iso8859_2", "iso8859_3", "iso8859_4", "iso8859_9"}
    | {"iso8859_10", "iso8859_13", "iso8859_14", "iso8859_15", "iso8859_16", "mac_roman", "mac_latin2"}
    | {"mac_iceland", "mac_turkish", "cp437", "cp850", "cp852", "cp775", "cp858", "cp1258"}
)
_CYRILLIC_EXTRA = frozenset({0xA8, 0xB8, 0xA3, 0xB3})  # Ё/ё in cp1251 and in KOI8-R


def _cyrillic(sample: bytes) -> str | None:
    high = [b for b in sample if b > 0x7F]
    if len(high) < 8:
        return None
    letters = sum(1 for b in sample if 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A)
    in_range = sum(1 for b in high if b >= 0xC0 or b in _CYRILLIC_EXTRA)
    if in_range < 0.97 * len(high) or len(high) < 0.5 * letters:
        return None
    lower_1251 = sum(1 for b in high if b >= 0xE0)
    lower_koi8 = sum(1 for b in high if 0xC0 <= b < 0xE0)
    return "cp1251" if lower_1251 >= lower_koi8 else "koi8_r"


def _halfwidth_kana(text: str) -> bool:
    """Whether a fifth or more of the text's non-ASCII characters are half-width katakana
    (U+FF61-U+FF9F): what Big5 or GBK bytes read as Shift_JIS look like."""
    wide = [ch for ch in text if ord(ch) > 0x7F]
    kana = sum(1 for ch in wide if "\uff61" <= ch <= "\uff9f")
    return bool(wide) and kana >= 0.2 * len(wide)


def _normalised(name: str) -> str:
    try:
        name = codecs.lookup(name).name.replace("-", "_")
    except LookupError:
        return name
    return _SUPERSET.get(name, name)


def guess_encoding(data: bytes) -> str:
    """The Python codec ``data`` (not UTF-8, no BOM, no declared charset) is most likely
    written in; ``cp1252`` when nothing better is known. Never raises."""
    sample = data[:SAMPLE]
    cyrillic = _cyrillic(sample)
    if cyrillic is not None:
        return cyrillic
    try:
        from charset_normalizer import from_bytes

        results = from_bytes(sample)
    except Exception:  # noqa: BLE001 - a detector's failure costs the detection, not the file
        return "cp1252"
    whole = len(sample) == len(data)  # else the sample may end inside a character
    for result in results:
        name = _normalised(result.encoding)
        if name in _EAST_ASIAN:
            try:
                text = codecs.getincrementaldecoder(name)().decode(sample, final=whole)
            except (UnicodeDecodeError, LookupError):
                continue
            if _halfwidth_kana(text):
                continue  # Chinese read as Shift_JIS: Japanese text is not half-width kana
            return name
        if result.coherence > 0 and name not in _LATIN and not name.startswith(("utf", "ascii")):
            return name
        break  # the best answer is a Latin single-byte one (or unsure): cp1252 reads those
    return "cp1252"
