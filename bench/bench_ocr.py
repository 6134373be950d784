"""OCR of real scans: word accuracy against ground truth, and time per page, on this machine.

    .venv/bin/python bench/bench_ocr.py run --corpus DIR                # kbdesk's OCR path
    .venv/bin/python bench/bench_ocr.py run --corpus DIR --bindings PY  # and the Python bindings, timed
    .venv/bin/python bench/bench_ocr.py pdfs --dir DIR                  # a parser's test PDFs, scanned or not

``DIR`` holds pages with their ground truth, gathered from two public repositories (never
committed): scribeocr/ocr-benchmark (``img/NAME.png|jpg`` with ``ground_truth/NAME*.hocr``:
screenshots, scans and photos of filings, depositions, tables, multi-column pages, a
receipt, a slide, charts) and tesseract-ocr/test (``testing/NAME.tif`` with
``NAME.txt``/``NAME.gold.txt``: phototest and two UNLV business-letter scans), e.g.::

    git -C MIRROR archive HEAD img ground_truth | tar -x -C DIR/scribe
    git -C MIRROR archive HEAD testing/phototest.tif testing/phototest.gold.txt ... | tar -x -C DIR/tess

Each page goes through kbdesk's own extraction (:func:`kbdesk.ingest.extract.extract_bytes`:
a child process, tesseract called directly, TSV parsed; no cache), one page at a time.
Word accuracy is the share of the ground truth's words (a multiset, case kept, punctuation at
a word's ends stripped) found in the OCR text — order is not scored (multi-column layouts
are read in different orders by different engines); "extra" is the share of OCR words not
in the truth. ``--large`` enlarges one page (singlecol_01, 2550×3300) to a 60-megapixel JPEG, a phone
photo's size, and reads it scaled to kbdesk's 16-megapixel cap (Pillow) and at full size.
``--bindings PY`` times the same pages with pytesseract (which calls the same
binary) and tesserocr (which links the library) in the Python environment ``PY`` (they are
not kbdesk dependencies; a venv with ``pip install pytesseract tesserocr pillow``).
"""

from __future__ import annotations

import argparse
import collections
import html
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kbdesk.ingest.extract import extract_bytes
from kbdesk.ingest.ocr import setup_for

_WORD = re.compile(r"\S+")
_STRIP = "\"'\u201c\u201d\u2018\u2019.,;:!?()[]{}\u00ab\u00bb*"  # quotes, punctuation


def words(text: str) -> list[str]:
    out = []
    for raw in _WORD.findall(text):
        word = raw.strip(_STRIP)
        if word:
            out.append(word)
    return out


def hocr_text(path: Path) -> str:
    """The words of an hOCR file (``ocrx_word`` spans), in document order."""
    data = path.read_text("utf-8")
    spans = re.findall(r"<span class=['\"]ocrx_word['\"][^>]*>(.*?)</span>", data, re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", s)) for s in spans)


def pages(corpus: Path) -> list[tuple[str, Path, str]]:
    """(name, image, ground truth text) for every page with its truth."""
    out = []
    for img in sorted((corpus / "scribe" / "img").glob("*")):
        truth = sorted((corpus / "scribe" / "ground_truth").glob(img.stem + "*.hocr"))
        if truth:
            out.append((img.stem, img, hocr_text(truth[0])))
    for img in sorted((corpus / "tess" / "testing").glob("*.tif")):
        for name in (img.stem + ".gold.txt", img.stem + ".txt"):
            truth_path = img.with_name(name)
            if truth_path.exists():
                out.append((img.stem, img, truth_path.read_text("utf-8", "replace")))
                break
    return out


def score(truth: str, found: str) -> tuple[int, int, int]:
    """(truth words, of them found, OCR words)."""
    want, got = collections.Counter(words(truth)), collections.Counter(words(found))
    return sum(want.values()), sum((want & got).values()), sum(got.values())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_kbdesk(items: list[tuple[str, Path, str]]) -> list[dict]:
    """Wall seconds and CPU seconds (the child and its tesseract) per page."""
    setup = setup_for()  # no cache: every page is read
    assert setup.available, setup.problem
    rows = []
    for name, img, truth in items:
        data = img.read_bytes()
        cpu, start = _children_cpu(), time.perf_counter()
        try:
            text = extract_bytes(data, img.name, pdf_timeout=600, pdf_memory_mb=1024, ocr=setup).text
            error = None
        except Exception as exc:  # noqa: BLE001 - a bench reports it and goes on
            text, error = "", str(exc)
        seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
        total, hit, ocr_words = score(truth, text)
        row = {"page": name, "seconds": seconds, "cpu": cpu, "truth": total, "found": hit, "ocr_words": ocr_words}
        if error:
            row["error"] = error
        print(f"{name}: {hit}/{total} words, {seconds:.1f} s, cpu {cpu:.1f} s {error or ''}", file=sys.stderr)
        rows.append(row)
    return rows


BINDINGS = r"""
import json, resource, sys, time
from PIL import Image
paths = json.loads(sys.argv[1]); tessdata = sys.argv[2]
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
out = {}
import pytesseract
t, c = time.perf_counter(), cpu()
texts = [pytesseract.image_to_data(Image.open(p), lang="eng", config="--psm 3") for p in paths]
out["pytesseract"] = [time.perf_counter() - t, cpu() - c]
import tesserocr
t, c = time.perf_counter(), cpu()
with tesserocr.PyTessBaseAPI(path=tessdata, lang="eng") as api:
    for p in paths:
        api.SetImage(Image.open(p)); api.GetUTF8Text(); api.AllWordConfidences()
out["tesserocr (one API object)"] = [time.perf_counter() - t, cpu() - c]
print(json.dumps(out))
"""


def run_binary(paths: list[Path]) -> list[float]:
    """The tesseract binary, called directly on each file (what kbdesk's child does):
    [wall seconds, CPU seconds]."""
    start, cpu = time.perf_counter(), _children_cpu()
    for p in paths:
        subprocess.run(
            ["tesseract", str(p), "stdout", "-l", "eng", "--psm", "3", "tsv"],
            capture_output=True,
            check=True,
            env=dict(os.environ, OMP_THREAD_LIMIT="1"),
        )
    return [time.perf_counter() - start, _children_cpu() - cpu]


def run_large(corpus: Path) -> dict:
    """The same page at 60 megapixels: scaled to 16 MP first (Pillow) against read as it is."""
    import io

    from PIL import Image

    source = corpus / "scribe" / "img" / "singlecol_01.png"
    truth = hocr_text(corpus / "scribe" / "ground_truth" / "singlecol_01.hocr")
    with Image.open(source) as img:
        page = img.convert("L")
    big = page.resize((page.width * 8 // 3, page.height * 8 // 3), Image.Resampling.BICUBIC)
    buf = io.BytesIO()
    big.save(buf, "JPEG", quality=85)
    out = {}
    for label, cap in (("scaled to 16 MP", 16_000_000), ("full size", 10**9)):
        setup = setup_for()
        setup.max_pixels = cap
        cpu, start = _children_cpu(), time.perf_counter()
        text = extract_bytes(buf.getvalue(), "big.jpg", pdf_timeout=900, ocr=setup).text
        total, hit, _ = score(truth, text)
        out[label] = {"pixels": big.width * big.height, "found": hit, "truth": total,
                      "seconds": time.perf_counter() - start, "cpu": _children_cpu() - cpu}  # fmt: skip
    return out


def run_pdfs(folder: Path) -> None:
    """Every PDF of ``folder`` (e.g. OCRmyPDF's tests/resources) through kbdesk's extraction:
    which are read from their text layer, which by OCR (and which pages), which fail and why."""
    setup = setup_for()
    counts = collections.Counter()
    ocr_pages, ocr_cpu = 0, 0.0
    for path in sorted(folder.glob("*.pdf")):
        cpu, start = _children_cpu(), time.perf_counter()
        try:
            extracted = extract_bytes(path.read_bytes(), path.name, pdf_timeout=60, ocr=setup)
            read = [s.metadata["page"] for s in extracted.sections if s.metadata.get("ocr")]
            what = f"OCR pages {read}" if read else "text layer"
            what += f", {len(extracted.text.split())} words"
            what += f"; {extracted.warnings[0]}" if extracted.warnings else ""
            counts["ocr" if read else "text layer"] += 1
        except Exception as exc:  # noqa: BLE001 - a bench reports it and goes on
            read, what = [], f"FAILED: {exc}"
            counts["failed"] += 1
        cpu = _children_cpu() - cpu
        if read:
            ocr_pages, ocr_cpu = ocr_pages + len(read), ocr_cpu + cpu
        print(f"{path.name:30} {time.perf_counter() - start:6.1f} s  CPU {cpu:5.1f} s  {what[:150]}")
    print(f"\n{dict(counts)}; {ocr_pages} pages read by OCR, {ocr_cpu / max(ocr_pages, 1):.2f} CPU s per page")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--corpus", type=Path, required=True)
    run.add_argument("--bindings", help="a Python with pytesseract and tesserocr installed")
    run.add_argument("--binding-pages", type=int, default=8, help="pages the bindings are timed on")
    run.add_argument("--large", action="store_true", help="also a 60-megapixel photo, scaled and not")
    run.add_argument("--json", action="store_true")
    pdfs = sub.add_parser("pdfs")
    pdfs.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args()
    if args.cmd == "pdfs":
        run_pdfs(args.dir)
        return
    items = pages(args.corpus)
    rows = run_kbdesk(items)
    total = sum(r["truth"] for r in rows)
    found = sum(r["found"] for r in rows)
    ocr_words = sum(r["ocr_words"] for r in rows)
    seconds = [r["seconds"] for r in rows]
    cpus = [r["cpu"] for r in rows]
    report: dict = {
        "load_average": os.getloadavg(),
        "pages": len(rows),
        "truth_words": total,
        "word_accuracy": found / total,
        "extra_words": (ocr_words - found) / max(ocr_words, 1),
        "seconds_per_page_mean": sum(seconds) / len(seconds),
        "seconds_per_page_median": sorted(seconds)[len(seconds) // 2],
        "cpu_per_page_mean": sum(cpus) / len(cpus),
        "cpu_per_page_median": sorted(cpus)[len(cpus) // 2],
        "failed": [r["page"] for r in rows if "error" in r],
        "rows": rows,
    }
    if args.bindings:
        subset = [img for _, img, _ in items][: args.binding_pages]
        found_tessdata = "/usr/share/tesseract-ocr/5/tessdata"
        timings = {"tesseract binary (subprocess, TSV)": run_binary(subset)}
        proc = subprocess.run(
            [args.bindings, "-c", BINDINGS, json.dumps([str(p) for p in subset]), found_tessdata],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ, OMP_THREAD_LIMIT="1"),
        )
        timings.update(json.loads(proc.stdout))
        report["bindings"] = {k: [v / len(subset) for v in pair] for k, pair in timings.items()}
    if args.large:
        report["large"] = run_large(args.corpus)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{'page':<22} {'truth':>6} {'found':>6} {'acc':>6} {'s':>6} {'cpu s':>6}")
    for r in rows:
        acc = r["found"] / max(r["truth"], 1)
        print(f"{r['page']:<22} {r['truth']:>6} {r['found']:>6} {acc:>6.1%} {r['seconds']:>6.2f} {r['cpu']:>6.2f}")
    print(
        f"\n{report['pages']} pages, {total} truth words: word accuracy {report['word_accuracy']:.1%}, "
        f"extra {report['extra_words']:.1%}; s/page mean {report['seconds_per_page_mean']:.2f}, "
        f"median {report['seconds_per_page_median']:.2f}; CPU s/page mean {report['cpu_per_page_mean']:.2f}, "
        f"median {report['cpu_per_page_median']:.2f}; load {report['load_average'][0]:.1f}"
    )
    for label, r in report.get("large", {}).items():
        print(f"60 MP photo, {label}: {r['found']}/{r['truth']} words, {r['seconds']:.1f} s, CPU {r['cpu']:.1f} s")
    for name, (wall, cpu) in report.get("bindings", {}).items():
        print(f"{name}: {wall:.2f} s/page, CPU {cpu:.2f} s/page")


if __name__ == "__main__":
    main()
