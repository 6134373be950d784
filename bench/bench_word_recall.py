"""Word recall against markitdown (odfpy for OpenDocument files, which markitdown does not
read), file by file: of the distinct words (3+ letters, NFKC,
lower-cased — as ``bench_formats.py --compare`` counts them) markitdown finds in a file,
the share kbdesk's text holds; the median and the mean per format, and the files named
with ``--named`` one by one. With ``--before SRC`` the same for another kbdesk tree (its
``src`` folder, e.g. ``git archive`` of an older commit), beside this one.

Each reader runs in a process of its own, so markitdown (and its converters: mammoth,
python-pptx, pandas, openpyxl) stays out of kbdesk's environment: give the Python of a
separate environment where it is installed. A file either reader fails on, or takes
more than a minute over, is left out of that reader's figures and counted.

    python -m venv /tmp/md-venv && /tmp/md-venv/bin/pip install 'markitdown[docx,pptx,xlsx]' odfpy
    .venv/bin/python bench/bench_word_recall.py FOLDER [FOLDER ...] --markitdown /tmp/md-venv/bin/python \\
        [--before /tmp/kbdesk-old/src] [--named tika-3816.docx,WithMaster.pptx] [--letters] [--texts T.json]

``--texts`` keeps what the readers gave in a JSON file (and reads it back when it
exists: a second run with ``--letters`` reads nothing again).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = (".docx", ".pptx", ".xlsx", ".odt", ".odp", ".ods", ".eml", ".epub", ".rtf")

# The reader's side: read the paths in a JSON list, write {path: text or null} as JSON.
CHILD = r"""
import json, signal, sys
paths, out, reader = json.load(open(sys.argv[1])), {}, sys.argv[2]
def alarm(*_):
    raise TimeoutError("over a minute")
signal.signal(signal.SIGALRM, alarm)
if reader == "markitdown":
    from markitdown import MarkItDown
    md = MarkItDown()
    def read(p):
        if p.lower().endswith((".odt", ".odp", ".ods")):  # markitdown has no OpenDocument reader
            from odf import opendocument, teletype, text
            doc = opendocument.load(p)
            parts = doc.getElementsByType(text.P) + doc.getElementsByType(text.H)
            return "\n".join(teletype.extractText(e) for e in parts)
        return md.convert(p).text_content
else:
    from kbdesk.ingest.extract import extract_file
    read = lambda p: extract_file(p).text
for p in paths:
    signal.alarm(60)
    try:
        out[p] = read(p)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        out[p] = None
    finally:
        signal.alarm(0)
json.dump(out, open(sys.argv[3], "w"))
"""


def read_all(python: str, reader: str, paths: list[str], src: str | None = None) -> dict[str, str | None]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    with tempfile.TemporaryDirectory() as tmp:
        listing, result = Path(tmp) / "in.json", Path(tmp) / "out.json"
        listing.write_text(json.dumps(paths))
        subprocess.run([python, "-c", CHILD, str(listing), reader, str(result)], env=env, check=True)
        return json.loads(result.read_text())


LETTERS = False  # --letters: words without digits only (numbers are drawn as each reader formats them)


def words(text: str) -> set[str]:
    sys.path.insert(0, str(ROOT / "src"))
    from kbdesk.textnorm import nfkc

    found = {w for w in re.findall(r"\w+", nfkc(text).lower()) if len(w) >= 3}
    return {w for w in found if not any(c.isdigit() for c in w)} if LETTERS else found


def unmarked(text: str) -> str:
    """markitdown's Markdown as the text it stands for: images (``![](data:image/x-emf;
    base64...)``) and comments (``<!-- Slide number: 1 -->``) out, escapes (``Outer\\_haystack``)
    undone — else their words count as words kbdesk lacks."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!|])", r"\1", text)


def recall(theirs: str, ours: str) -> float:
    want = words(unmarked(theirs))
    return len(want & words(ours)) / len(want) if want else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--markitdown", required=True, help="the Python of an environment with markitdown installed")
    ap.add_argument("--before", help="the src folder of another kbdesk tree, measured beside this one")
    ap.add_argument("--named", default="", help="file names (comma-separated) to report one by one")
    ap.add_argument("--letters", action="store_true", help="count words without digits only")
    ap.add_argument("--texts", help="a JSON file: the texts read are kept there, and read from it when it exists")
    args = ap.parse_args()
    global LETTERS
    LETTERS = args.letters
    paths = sorted(str(p) for f in args.folders for p in Path(f).rglob("*") if p.suffix.lower() in SUFFIXES)
    if args.texts and Path(args.texts).exists():
        theirs, sides = json.loads(Path(args.texts).read_text())
    else:
        theirs = read_all(args.markitdown, "markitdown", paths)
        sides = {"now": read_all(sys.executable, "kbdesk", paths, str(ROOT / "src"))}
        if args.before:
            sides = {"before": read_all(sys.executable, "kbdesk", paths, args.before), **sides}
        if args.texts:
            Path(args.texts).write_text(json.dumps([theirs, sides]))
    named = {n.strip() for n in args.named.split(",") if n.strip()}
    print(f"{len(paths)} files; markitdown read {sum(t is not None for t in theirs.values())}")
    head = "| format | files both read (markitdown words > 0) |"
    head += "".join(f" median {s} | mean {s} |" for s in sides)
    print(head)
    print("|---|---:|" + "---:|---:|" * len(sides))
    per_file: dict[str, dict[str, float]] = {}
    for suffix in SUFFIXES:
        group = [p for p in paths if p.lower().endswith(suffix) and words(unmarked(theirs.get(p) or ""))]
        both = [p for p in group if all(texts.get(p) for texts in sides.values())]
        if not both:
            continue
        for p in both:
            per_file[p] = {s: recall(theirs[p] or "", texts[p] or "") for s, texts in sides.items()}
        values = {s: [per_file[p][s] for p in both] for s in sides}
        cells = "".join(f" {statistics.median(v):.3f} | {statistics.mean(v):.3f} |" for v in values.values())
        print(f"| {suffix} | {len(both)} |{cells}")
    if named:
        print()
        print(
            "| file | markitdown words |"
            + "".join(f" recall {s} |" for s in sides)
            + "".join(f" words only kbdesk has, {s} |" for s in sides)
        )
        print("|---|---:|" + "---:|" * 2 * len(sides))
        for p in paths:
            if Path(p).name in named:
                got = per_file.get(p) or {s: float("nan") for s in sides}
                want = words(unmarked(theirs.get(p) or ""))
                extra = "".join(f" {len(words(texts.get(p) or '') - want)} |" for texts in sides.values())
                cells = "".join(f" {got.get(s, float('nan')):.3f} |" for s in sides)
                print(f"| {Path(p).name} | {len(want)} |{cells}{extra}")
    if args.before:
        better = [p for p, r in per_file.items() if r["now"] > r["before"] + 1e-9]
        worse = [p for p, r in per_file.items() if r["now"] < r["before"] - 1e-9]
        print(f"\nfiles whose recall rose: {len(better)}; fell: {len(worse)}")
        for p in worse[:15]:
            print(f"  fell: {Path(p).name} {per_file[p]['before']:.3f} -> {per_file[p]['now']:.3f}")


if __name__ == "__main__":
    main()
