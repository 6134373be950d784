"""Chinese, Japanese and Korean words in keyword search: characters and pairs of characters.

Both keyword indexes (SQLite's FTS5 ``unicode61``, Postgres's default parser) take a run
of CJK characters as one token, so 検索 is never found inside 東京の会議で新しい検索機能 —
only the whole run matches. kbdesk indexes such a run as its single characters and its
overlapping pairs (``東 京 の … 東京 京の の会 …``), the scheme of Lucene's CJK analyzer, and
searches a CJK word as its pairs (a one-character word as itself), OR-ed like every other
query word and ranked by the same BM25. Text without CJK characters is indexed exactly
as before: English ranking does not move (docs/BENCHMARKS-search.md).

Measured against FTS5's ``trigram`` tokenizer (docs/BENCHMARKS-search.md): trigrams find
no word of one or two characters (most Chinese and Japanese words), and ranking English
by trigrams changes BM25 for every query.
"""

from __future__ import annotations

import re

# Han (with extensions and compatibility ideographs), Hiragana, Katakana, Hangul, 々 〆
CJK_CLASS = (
    "\u3005\u3006\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\U00020000-\U0002fa1f"
)
_RUN = re.compile(f"[{CJK_CLASS}]+")


def has_cjk(text: str) -> bool:
    return _RUN.search(text) is not None


def grams(run: str) -> list[str]:
    """The characters of a CJK run, then its overlapping pairs."""
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def keyword_text(text: str) -> str | None:
    """The text the keyword index reads in place of ``text``: each CJK run as its
    characters and pairs (space-separated); None when ``text`` has no CJK character
    (then the text itself is indexed)."""
    if not has_cjk(text):
        return None
    return _RUN.sub(lambda m: " " + " ".join(grams(m.group(0))) + " ", text)


def query_pieces(token: str) -> list[str]:
    """A query word as the terms to look up: CJK runs as their pairs (a lone character
    as itself), the rest as it is."""
    if not has_cjk(token):
        return [token]
    out: list[str] = []
    last = 0
    for m in _RUN.finditer(token):
        if m.start() > last:
            out.append(token[last : m.start()])
        run = m.group(0)
        out += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        last = m.end()
    if last < len(token):
        out.append(token[last:])
    return [p for p in out if p]
