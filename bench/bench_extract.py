"""Benchmark: text extraction speed (MB/s) for Markdown, HTML and CSV.

Not part of the test run. Documents are generated here (deterministic, seeded) at
100 KB, 1 MB and 5 MB of UTF-8 each:

- Markdown: front matter, nested headings (h1-h4, ATX and setext), paragraphs with
  inline markup, nested bullet and ordered lists, fenced and indented code, tables,
  block quotes, HTML comments;
- HTML: whole pages with <head> (title, style, script), navigation, nested
  <section>/<article>/<div> blocks, headings, paragraphs with inline markup and
  entities, nested lists, tables with implied end tags, <pre>, and hidden content
  (``hidden``, ``aria-hidden``, ``display:none``, <template>, <svg>);
- CSV: a header and rows with quoted fields (commas, doubled quotes, newlines),
  numbers, dates and empty cells.

Each timing is ``extract_bytes(data, name)`` end to end (binary check, decoding, line
endings, parsing, sections), the best of at least ``--rounds`` runs. The same run also
times the implementation as it was before the split and speed-up ("before"): the file
``src/kbdesk/ingest/extract.py`` at git revision ``--baseline`` is loaded as a
throw-away module, and the two take turns, so both see the same documents and the same
machine load. Their outputs are compared too (section texts and metadata must be equal).

Times are CPU time of the benchmark thread by default (``--clock cpu``): on a shared
machine elapsed time mostly measures the neighbours; ``--clock wall`` is there too.

    .venv/bin/python bench/bench_extract.py                 # 100 KB, 1 MB, 5 MB
    .venv/bin/python bench/bench_extract.py --quick         # 100 KB, 1 MB
    .venv/bin/python bench/bench_extract.py --baseline none # "after" only
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from kbdesk.ingest import extract as current  # noqa: E402

KB = 1000
MB = 1_000_000
# The last commit with the single-file extract.py (before the split / speed-up).
DEFAULT_BASELINE = "a9a303a"

WORDS = ("the of and to in is for that on with as by this be are from or at an it not "
         "configure server client request response cache index query token vector "
         "document section heading table column row value field file folder import "
         "export backup restore schedule worker thread process memory limit timeout "
         "error warning retry network proxy certificate password account user group "
         "permission policy report invoice customer order shipment warehouse price "
         "Zürich café naïve résumé Ångström").split()


def sentence(rng: random.Random, lo: int = 6, hi: int = 18) -> str:
    words = rng.choices(WORDS, k=rng.randint(lo, hi))
    return " ".join(words).capitalize() + rng.choice(".!?.")


def wrap_word(rng: random.Random, s: str, before: str, after: str) -> str:
    words = s.split(" ")
    i = rng.randrange(len(words))
    words[i] = f"{before}{words[i]}{after}"
    return " ".join(words)


# ── Markdown ────────────────────────────────────────────────────────────────────────


def md_inline(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(2, 5)):
        s = sentence(rng)
        k = rng.random()
        if k < 0.15:
            s = wrap_word(rng, s, "**", "**")
        elif k < 0.3:
            s += f" See [the {rng.choice(WORDS)} guide](https://example.com/{rng.choice(WORDS)})."
        elif k < 0.4:
            s += f" Run `kbdesk {rng.choice(WORDS)} --{rng.choice(WORDS)}`."
        elif k < 0.45:
            s += " *Note:* " + sentence(rng, 3, 6)
        out.append(s)
    return " ".join(out)


def md_block(rng: random.Random) -> str:
    k = rng.random()
    if k < 0.40:
        text = md_inline(rng)
        if rng.random() < 0.3:  # hard-wrapped paragraph
            words, lines, line = text.split(" "), [], []
            for w in words:
                line.append(w)
                if sum(map(len, line)) > 70:
                    lines.append(" ".join(line))
                    line = []
            text = "\n".join(lines + [" ".join(line)])
        return text
    if k < 0.55:
        items = []
        for i in range(rng.randint(3, 8)):
            marker = f"{i + 1}." if k < 0.47 else "-"
            items.append(f"{marker} {sentence(rng)}")
            if rng.random() < 0.3:
                items += [f"   - {sentence(rng, 3, 8)}" for _ in range(rng.randint(1, 3))]
        return "\n".join(items)
    if k < 0.67:
        lang = rng.choice(["python", "bash", "json", ""])
        body = []
        for i in range(rng.randint(3, 15)):
            indent = "    " * rng.randint(0, 2)
            if not indent and body and rng.random() < 0.4:
                body.append("")  # a blank line, then code in column 0: still inside the fence
            body.append(f"{indent}{rng.choice(WORDS)}_{i} = call({rng.choice(WORDS)!r}, "
                        f"{rng.randint(0, 999)})  # {rng.choice(WORDS)}")
        if rng.random() < 0.2:
            body.append("# a comment, not a heading")
        body = "\n".join(body)
        return f"```{lang}\n{body}\n```"
    if k < 0.80:
        cols = rng.randint(2, 5)
        head = "| " + " | ".join(rng.choice(WORDS).title() for _ in range(cols)) + " |"
        sep = "|" + "|".join("---" for _ in range(cols)) + "|"
        rows = ["| " + " | ".join(rng.choice([rng.choice(WORDS), str(rng.randint(0, 9999)),
                                              f"`{rng.choice(WORDS)}`", "**yes**"])
                                  for _ in range(cols)) + " |"
                for _ in range(rng.randint(3, 12))]
        return "\n".join([head, sep, *rows])
    if k < 0.88:
        return "\n".join(f"> {sentence(rng)}" for _ in range(rng.randint(1, 4)))
    if k < 0.93:
        return "\n".join(f"    {rng.choice(WORDS)}({i})" for i in range(rng.randint(2, 6)))
    if k < 0.96:
        return f"<!-- {sentence(rng)} -->"
    return "---"


def make_markdown(size: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    parts = [f"---\ntitle: {sentence(rng)}\ntags: [{', '.join(rng.sample(WORDS, 3))}]\n---",
             md_inline(rng)]
    total = sum(len(p) + 2 for p in parts)
    while total < size:
        level = rng.choices([1, 2, 3, 4], weights=[1, 4, 6, 2])[0]
        title = sentence(rng, 2, 6).rstrip(".!?")
        if level <= 2 and rng.random() < 0.15:
            block = f"{title}\n{('=' if level == 1 else '-') * len(title)}"
        else:
            block = f"{'#' * level} {title}" + (" `code`" if rng.random() < 0.1 else "")
        parts.append(block)
        total += len(block) + 2
        for _ in range(rng.randint(0, 6)):
            block = md_block(rng)
            parts.append(block)
            total += len(block) + 2
    return "\n\n".join(parts).encode("utf-8")[:size].rsplit(b"\n", 1)[0] + b"\n"


# ── HTML ────────────────────────────────────────────────────────────────────────────


def html_inline(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(2, 5)):
        s = sentence(rng).replace("&", "&amp;")
        k = rng.random()
        if k < 0.2:
            s = wrap_word(rng, s, "<b>", "</b>")
        elif k < 0.35:
            s += f' See <a href="/doc/{rng.choice(WORDS)}?a=1&amp;b=2" class="link">the guide</a>.'
        elif k < 0.45:
            s += f" Run <code>kbdesk {rng.choice(WORDS)}</code>&nbsp;now."
        elif k < 0.5:
            s += f' <span class="note" data-x="{rng.randint(0, 99)}"><em>Note</em> &ndash; {sentence(rng, 3, 6)}</span>'
        elif k < 0.55:
            s += ' <span style="display:none">hidden-inline</span>'
        out.append(s)
    return "\n  ".join(out)


def html_block(rng: random.Random, depth: int = 0) -> str:
    k = rng.random()
    if k < 0.4:
        return f"<p>{html_inline(rng)}</p>"
    if k < 0.55:
        tag = rng.choice(["ul", "ol"])
        items = []
        for _ in range(rng.randint(3, 8)):
            item = f"<li>{sentence(rng)}"
            if rng.random() < 0.25:
                item += "<ul>" + "".join(f"<li>{sentence(rng, 3, 8)}</li>" for _ in range(2)) + "</ul>"
            items.append(item + ("</li>" if rng.random() < 0.7 else ""))  # implied ends too
        return f"<{tag}>\n" + "\n".join(items) + f"\n</{tag}>"
    if k < 0.67:
        cols = rng.randint(2, 5)
        head = "<tr>" + "".join(f"<th>{rng.choice(WORDS).title()}</th>" for _ in range(cols)) + "</tr>"
        rows = "\n".join("<tr>" + "".join(f"<td>{rng.choice([rng.choice(WORDS), str(rng.randint(0, 9999))])}"
                                          for _ in range(cols)) for _ in range(rng.randint(3, 10)))
        return f'<table class="data">\n<thead>{head}</thead>\n<tbody>\n{rows}\n</tbody></table>'
    if k < 0.75:
        body = "\n".join(f"  {rng.choice(WORDS)}_{i} = f({i}) &lt; {i * 7}" for i in range(rng.randint(3, 10)))
        return f"<pre><code>{body}\n</code></pre>"
    if k < 0.82 and depth < 4:
        tag = rng.choice(["div", "section", "article", "aside"])
        inner = "\n".join(html_block(rng, depth + 1) for _ in range(rng.randint(1, 4)))
        return f'<{tag} class="c{rng.randint(0, 9)}" id="b{rng.randint(0, 99999)}">\n{inner}\n</{tag}>'
    if k < 0.86:
        hide = rng.choice(['<div hidden>{}</div>', '<div aria-hidden="true">{}</div>',
                           '<div style="color: red; display: none">{}</div>',
                           '<template><p>{}</p></template>',
                           '<svg viewBox="0 0 10 10"><title>{}</title><path d="M0 0L10 10"/></svg>',
                           '<script>var x = "{}"; if (a < b) {{ run(); }}</script>'])
        return hide.format(sentence(rng))
    if k < 0.92:
        return f"<blockquote><p>{html_inline(rng)}</p></blockquote>"
    if k < 0.96:
        return f'<img src="/i/{rng.randint(0, 999)}.png" alt="{rng.choice(WORDS)}"><br>{sentence(rng)}<hr>'
    return f"<div>{sentence(rng)}<br>\n{sentence(rng)}</div>"


def make_html(size: int, seed: int = 2) -> bytes:
    rng = random.Random(seed)
    head = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f"<title>{sentence(rng)} &amp; more</title>\n"
            "<style>body { font: 14px sans-serif } .c1 > p { margin: 0 }</style>\n"
            "<script>window.dataLayer = [{'a': 1}]; function f(a, b) { return a < b; }</script>\n"
            "</head><body>\n<nav aria-hidden=\"true\"><ul><li><a href=\"/\">Home</a><li>Docs</ul></nav>\n"
            "<main>\n")
    tail = "\n</main>\n<footer><p>&copy; 2026 Example</p></footer>\n</body></html>\n"
    parts = [head, f"<p>{html_inline(rng)}</p>"]
    total = len(head) + len(tail)
    while total < size:
        level = rng.choices([1, 2, 3, 4], weights=[1, 4, 6, 2])[0]
        block = f'<h{level} id="h{rng.randint(0, 99999)}">{sentence(rng, 2, 6).rstrip(".!?")}</h{level}>'
        parts.append(block)
        total += len(block) + 1
        for _ in range(rng.randint(0, 6)):
            block = html_block(rng)
            parts.append(block)
            total += len(block.encode()) + 1
    return ("\n".join(parts) + tail).encode("utf-8")


# ── CSV ─────────────────────────────────────────────────────────────────────────────


def make_csv(size: int, seed: int = 3) -> bytes:
    rng = random.Random(seed)
    header = 'id,name,city,"unit price",quantity,date,status,notes\n'
    rows, total = [header], len(header)
    i = 0
    while total < size:
        i += 1
        name = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}"
        if rng.random() < 0.3:
            name = f'"{name}, {rng.choice(["Jr.", "Ltd", "GmbH"])}"'
        notes = rng.random()
        if notes < 0.3:
            note = ""
        elif notes < 0.6:
            note = sentence(rng, 3, 10)
        elif notes < 0.85:
            note = '"' + sentence(rng).replace(" ", ", ", 1) + ' He said ""ok"".' + '"'
        else:
            note = f'"{sentence(rng)}\n{sentence(rng)}"'
        row = ",".join([str(i), name, rng.choice(["Zürich", "Montréal", "Oslo", "Paris", ""]),
                        f"{rng.randint(0, 9999) / 100:.2f}", str(rng.randint(0, 500)),
                        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                        rng.choice(["open", "shipped", "closed", ""]), note]) + "\r\n"
        rows.append(row)
        total += len(row.encode())
    return "".join(rows).encode("utf-8")


FORMATS = {  # name → (filename, generator)
    "Markdown": ("doc.md", make_markdown),
    "HTML": ("page.html", make_html),
    "CSV": ("table.csv", make_csv),
}


# ── timing ──────────────────────────────────────────────────────────────────────────


def load_baseline(rev: str):
    """extract.py at git revision ``rev``, imported as a stand-alone module."""
    path = "src/kbdesk/ingest/extract.py"
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"],
                            check=True, capture_output=True).stdout
    module = types.ModuleType("kbdesk_extract_baseline")
    module.__file__ = f"{rev}:{path}"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


CLOCKS = {"cpu": time.thread_time, "wall": time.perf_counter}


def timings(fns: list, rounds: int, budget: float, clock) -> list[float]:
    """Best time of each function; the functions take turns, so that both sides of a
    comparison see the same machine load. At least ``rounds`` turns, more (up to 50)
    until each function has run for ``budget`` seconds in all."""
    best = [float("inf")] * len(fns)
    spent = [0.0] * len(fns)
    turn = 0
    while turn < rounds or (min(spent) < budget and turn < 50):
        for k, fn in enumerate(fns):
            gc.collect()
            started = clock()
            fn()
            took = clock() - started
            best[k] = min(best[k], took)
            spent[k] += took
        turn += 1
    return best


def same_output(a, b) -> bool:
    return a.text == b.text and [(s.text, s.metadata) for s in a.sections] == \
        [(s.text, s.metadata) for s in b.sections]


def human(n: int) -> str:
    return f"{n // MB} MB" if n >= MB else f"{n // KB} KB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="100 KB and 1 MB only")
    ap.add_argument("--rounds", type=int, default=5, help="at least N timed runs each (default 5)")
    ap.add_argument("--budget", type=float, default=1.0,
                    help="more runs (up to 50) until each side has run this many seconds (default 1)")
    ap.add_argument("--clock", choices=CLOCKS, default="cpu",
                    help="cpu: CPU time of this thread (default; steady on a busy machine), wall: elapsed")
    ap.add_argument("--baseline", default=DEFAULT_BASELINE,
                    help=f"git revision of the 'before' extract.py (default {DEFAULT_BASELINE}; 'none' to skip)")
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated subset")
    args = ap.parse_args()

    sizes = [100 * KB, 1 * MB] + ([] if args.quick else [5 * MB])
    old = None if args.baseline == "none" else load_baseline(args.baseline)
    max_bytes = 10 * 1024 * 1024
    clock = CLOCKS[args.clock]

    command = " ".join(["python bench/bench_extract.py", *sys.argv[1:]])
    print(f"Command: `{command}` (from the repository root, with `.venv/bin/python`)\n")
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; {args.clock} time, best of >= {args.rounds} "
          f"alternating runs; 1 MB = 10^6 bytes; 'before' = extract.py at git {args.baseline}\n")
    if old:
        print("| format | size | before (s) | before MB/s | after (s) | after MB/s | speed-up | same output |")
        print("|---|---|---:|---:|---:|---:|---:|---|")
    else:
        print("| format | size | after (s) | after MB/s |")
        print("|---|---|---:|---:|")
    for fmt in args.formats.split(","):
        filename, make = FORMATS[fmt]
        for size in sizes:
            data = make(size)
            mb = len(data) / MB
            sides = [current] + ([old] if old else [])
            results = [side.extract_bytes(data, filename, max_bytes=max_bytes) for side in sides]
            times = timings([lambda side=side: side.extract_bytes(data, filename, max_bytes=max_bytes)
                             for side in sides], args.rounds, args.budget, clock)
            t_new = times[0]
            if old:
                t_old = times[1]
                same = "yes" if same_output(results[1], results[0]) else "NO"
                print(f"| {fmt} | {human(size)} | {t_old:.3f} | {mb / t_old:.1f} | {t_new:.3f} | "
                      f"{mb / t_new:.1f} | {t_old / t_new:.1f}x | {same} |", flush=True)
            else:
                print(f"| {fmt} | {human(size)} | {t_new:.3f} | {mb / t_new:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
