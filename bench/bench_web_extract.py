"""Main-content extraction on the open web: news and blog pages with their published article text.

    git clone https://github.com/scrapinghub/article-extraction-benchmark /tmp/aeb   # once, outside the repo
    .venv/bin/python bench/bench_web_extract.py --data /tmp/aeb

The data is ScrapingHub's article-extraction-benchmark: 181 real news and blog pages
(``html/*.html.gz``) with the article body a person marked on each (``ground-truth.json``,
``articleBody``). Nothing of it is committed, and nothing kbdesk wrote is used as a
reference.

Each extractor turns a page's HTML into text; the text is scored against the article
body the way the benchmark's own ``evaluate.py`` does (its published method, written
again here): words (``\\w+``) in shingles of 4, true positives / false positives /
false negatives per page normalised to sum to 1 (a long article weighs no more than a
short one), precision and recall averaged over the pages, F1 from those averages.
*Token* P/R/F1 are the same with single words (a bag of words per page).

Speed is the CPU time of extraction alone (decoding excluded), pages/s and MB/s over
all 181 pages, best of one run (the machine is shared: read it as a ratio between the
rows, not an absolute).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

_TOKEN = re.compile(r"\w+")


def _shingles(text: str, n: int) -> Counter:
    tokens = _TOKEN.findall(text or "")
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i : i + n])


def _tp_fp_fn(true: str, pred: str, n: int) -> tuple[float, float, float]:
    t, p = _shingles(true, n), _shingles(pred, n)
    tp = sum((t & p).values())
    fp = sum((p - t).values())
    fn = sum((t - p).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def _precision(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fp == 0 else tp / (tp + fp)


def _recall(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fn == 0 else tp / (tp + fn)


def score(pairs: list[tuple[str, str]], n: int) -> dict[str, float]:
    """The benchmark's metric over (article body, extracted text) pairs."""
    counts = [_tp_fp_fn(true, pred, n) for true, pred in pairs]
    p = statistics.mean(_precision(*c) for c in counts if c[0] + c[1] > 0)
    r = statistics.mean(_recall(*c) for c in counts if c[0] + c[2] > 0)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


# ── extractors: HTML text → plain text ────────────────────────────────────────
def _body(sections: list) -> str:
    """kbdesk's text without the page title it puts first (kept as the document's title
    too): the benchmark's article bodies have no title, and the other extractors give none."""
    text = "\n\n".join(s.text for s in sections)
    title = sections[0].metadata.get("title") if sections else None
    return text[len(title) :].lstrip() if title and text.startswith(title) else text


def kbdesk_docs(html: str) -> str:
    """kbdesk's documentation-site reader alone (what a saved page got before)."""
    from kbdesk.ingest.html_text import extract_html

    return _body(extract_html(html))


def kbdesk(html: str) -> str:
    """kbdesk's HTML reader as it is now (documentation rules, open-web main content otherwise)."""
    from kbdesk.ingest.html_main import extract_page

    return _body(extract_page(html))


def kbdesk_titled(html: str) -> str:
    """The same with the title line kbdesk puts first (as indexed)."""
    from kbdesk.ingest.html_main import extract_page

    return "\n\n".join(s.text for s in extract_page(html))


def trafilatura_text(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, include_tables=True, include_comments=False) or ""


def trafilatura_precision(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, include_tables=True, include_comments=False, favor_precision=True) or ""


def readability_text(html: str) -> str:
    from readability import Document

    from kbdesk.ingest.html_text import extract_html

    return _body(extract_html(Document(html).summary(html_partial=True)))


def resiliparse_text(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True)


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "kbdesk documentation rules alone (before)": kbdesk_docs,
    "kbdesk (trafilatura main content → kbdesk sections)": kbdesk,
    "kbdesk, with the title line": kbdesk_titled,
    "trafilatura": trafilatura_text,
    "trafilatura favor_precision": trafilatura_precision,
    "readability-lxml → kbdesk": readability_text,
    "resiliparse main_content": resiliparse_text,
}


def load(data: Path) -> list[tuple[str, str, str, int]]:
    """(page id, html, article body, size in bytes) for every page of the benchmark."""
    from kbdesk.ingest.text_decode import decode_markup

    truth = json.loads((data / "ground-truth.json").read_text("utf-8"))
    out = []
    for key, item in sorted(truth.items()):
        raw = gzip.decompress((data / "html" / f"{key}.html.gz").read_bytes())
        out.append((key, decode_markup(raw), item.get("articleBody") or "", len(raw)))
    return out


def documentation(folders: list[Path], only: list[str] | None) -> None:
    """bench_realdocs's chrome share and main content kept, for kbdesk's reader now and before."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_realdocs

    bench_realdocs.EXTRACTORS["kbdesk now (documentation rules, trafilatura elsewhere)"] = kbdesk_titled
    names = only or ["kbdesk (html.parser + rules)", "kbdesk now (documentation rules, trafilatura elsewhere)"]
    for folder in folders:
        for row in bench_realdocs.extract_folder(folder, [n for n in names if n in bench_realdocs.EXTRACTORS]):
            print(json.dumps({"folder": folder.name, **row}, ensure_ascii=False), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, help="a checkout of scrapinghub/article-extraction-benchmark")
    ap.add_argument(
        "--docs",
        type=Path,
        action="append",
        help="a documentation folder (Debian's postgresql-doc-15 or python3-doc html): chrome share of kbdesk's reader",
    )
    ap.add_argument("--only", action="append", help="extractor names to run (default all installed)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--worst", type=int, default=0, help="list the N pages of lowest precision for the first extractor")
    args = ap.parse_args()
    if args.docs:
        documentation(args.docs, args.only)
    if args.data is None:
        return
    pages = load(args.data)
    size = sum(p[3] for p in pages)
    rows = []
    for name, fn in EXTRACTORS.items():
        if args.only and name not in args.only:
            continue
        texts, seconds = [], 0.0
        try:
            for _key, html, _true, _ in pages:
                start = time.process_time()
                try:
                    texts.append(fn(html))
                except ImportError:
                    raise
                except Exception:  # noqa: BLE001 - a page a library cannot read counts as empty
                    texts.append("")
                seconds += time.process_time() - start
        except ImportError as exc:
            print(f"{name}: not installed ({exc})", file=sys.stderr)
            continue
        pairs = [(true, text) for (_, _, true, _), text in zip(pages, texts, strict=True)]
        shingles, tokens = score(pairs, 4), score(pairs, 1)
        row = {
            "extractor": name,
            "F1": round(shingles["f1"], 3),
            "precision": round(shingles["precision"], 3),
            "recall": round(shingles["recall"], 3),
            "token F1": round(tokens["f1"], 3),
            "token P": round(tokens["precision"], 3),
            "token R": round(tokens["recall"], 3),
            "pages/s": round(len(pages) / seconds, 1),
            "MB/s": round(size / 2**20 / seconds, 2),
        }
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
        if args.worst and len(rows) == 1:
            counts = sorted(
                (
                    (_precision(*_tp_fp_fn(t, x, 4)), _recall(*_tp_fp_fn(t, x, 4)), k)
                    for (k, _, t, _), x in zip(pages, texts, strict=True)
                ),
            )
            for p, r, k in counts[: args.worst]:
                print(f"  P {p:.3f} R {r:.3f} {k}", file=sys.stderr)
    print(f"{len(pages)} pages, {size / 2**20:.1f} MB", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
