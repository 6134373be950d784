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

import random
import subprocess
import sys
import time
import types
from collections.abc import Callable

from harness import ROOT, best_of, command_line, machine_info, machine_line, markdown_table, parser
from kbdesk.ingest import extract as current

KB = 1000
MB = 1_000_000
# The last commit with the single-file extract.py (before the split / speed-up).
DEFAULT_BASELINE = "a9a303a"

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "that",
    "on",
    "with",
    "as",
    "by",
    "this",
    "be",
    "are",
    "from",
    "or",
    "at",
    "an",
    "it",
    "not",
    "configure",
    "server",
    "client",
    "request",
    "response",
    "cache",
    "index",
    "query",
    "token",
    "vector",
    "document",
    "section",
    "heading",
    "table",
    "column",
    "row",
    "value",
    "field",
    "file",
    "folder",
    "import",
    "export",
    "backup",
    "restore",
    "schedule",
    "worker",
    "thread",
    "process",
    "memory",
    "limit",
    "timeout",
    "error",
    "warning",
    "retry",
    "network",
    "proxy",
    "certificate",
    "password",
    "account",
    "user",
    "group",
    "permission",
    "policy",
    "report",
    "invoice",
    "customer",
    "order",
    "shipment",
    "warehouse",
    "price",
    "Zürich",
    "café",
    "naïve",
    "résumé",
    "Ångström",
]


def sentence(rng: random.Random, lo: int = 6, hi: int = 18) -> str:
    words = rng.choices(WORDS, k=rng.randint(lo, hi))
    return " ".join(words).capitalize() + rng.choice(".!?.")


def wrap_word(rng: random.Random, s: str, before: str, after: str) -> str:
    words = s.split(" ")
    i = rng.randrange(len(words))
    words[i] = f"{before}{words[i]}{after}"
    return " ".join(words)


# ── Markdown ────────────────────────────────────────────────────────────────────────


Decoration = tuple[float, Callable[[random.Random, str], str]]


def decorated(
    rng: random.Random, first: Callable[[random.Random], str], decorations: list[Decoration], sep: str
) -> str:
    """2-5 sentences, each changed by the first decoration whose cut-off is above a random draw."""
    out = []
    for _ in range(rng.randint(2, 5)):
        s = first(rng)
        k = rng.random()
        for cut, decorate in decorations:
            if k < cut:
                s = decorate(rng, s)
                break
        out.append(s)
    return sep.join(out)


MD_INLINE: list[Decoration] = [
    (0.15, lambda rng, s: wrap_word(rng, s, "**", "**")),
    (0.3, lambda rng, s: s + f" See [the {rng.choice(WORDS)} guide](https://example.com/{rng.choice(WORDS)})."),
    (0.4, lambda rng, s: s + f" Run `kbdesk {rng.choice(WORDS)} --{rng.choice(WORDS)}`."),
    (0.45, lambda rng, s: s + " *Note:* " + sentence(rng, 3, 6)),
]


def md_inline(rng: random.Random) -> str:
    return decorated(rng, sentence, MD_INLINE, " ")


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
            text = "\n".join([*lines, " ".join(line)])
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
            body.append(
                f"{indent}{rng.choice(WORDS)}_{i} = call({rng.choice(WORDS)!r}, "
                f"{rng.randint(0, 999)})  # {rng.choice(WORDS)}"
            )
        if rng.random() < 0.2:
            body.append("# a comment, not a heading")
        body = "\n".join(body)
        return f"```{lang}\n{body}\n```"
    if k < 0.80:
        cols = rng.randint(2, 5)
        head = "| " + " | ".join(rng.choice(WORDS).title() for _ in range(cols)) + " |"
        sep = "|" + "|".join("---" for _ in range(cols)) + "|"
        rows = [
            "| "
            + " | ".join(
                rng.choice([rng.choice(WORDS), str(rng.randint(0, 9999)), f"`{rng.choice(WORDS)}`", "**yes**"])
                for _ in range(cols)
            )
            + " |"
            for _ in range(rng.randint(3, 12))
        ]
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
    parts = [f"---\ntitle: {sentence(rng)}\ntags: [{', '.join(rng.sample(WORDS, 3))}]\n---", md_inline(rng)]
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


HTML_INLINE: list[Decoration] = [
    (0.2, lambda rng, s: wrap_word(rng, s, "<b>", "</b>")),
    (0.35, lambda rng, s: s + f' See <a href="/doc/{rng.choice(WORDS)}?a=1&amp;b=2" class="link">the guide</a>.'),
    (0.45, lambda rng, s: s + f" Run <code>kbdesk {rng.choice(WORDS)}</code>&nbsp;now."),
    (
        0.5,
        lambda rng, s: (
            s + f' <span class="note" data-x="{rng.randint(0, 99)}"><em>Note</em> &ndash; {sentence(rng, 3, 6)}</span>'
        ),
    ),
    (0.55, lambda rng, s: s + ' <span style="display:none">hidden-inline</span>'),
]


def html_inline(rng: random.Random) -> str:
    return decorated(rng, lambda r: sentence(r).replace("&", "&amp;"), HTML_INLINE, "\n  ")


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
        rows = "\n".join(
            "<tr>" + "".join(f"<td>{rng.choice([rng.choice(WORDS), str(rng.randint(0, 9999))])}" for _ in range(cols))
            for _ in range(rng.randint(3, 10))
        )
        return f'<table class="data">\n<thead>{head}</thead>\n<tbody>\n{rows}\n</tbody></table>'
    if k < 0.75:
        body = "\n".join(f"  {rng.choice(WORDS)}_{i} = f({i}) &lt; {i * 7}" for i in range(rng.randint(3, 10)))
        return f"<pre><code>{body}\n</code></pre>"
    if k < 0.82 and depth < 4:
        tag = rng.choice(["div", "section", "article", "aside"])
        inner = "\n".join(html_block(rng, depth + 1) for _ in range(rng.randint(1, 4)))
        return f'<{tag} class="c{rng.randint(0, 9)}" id="b{rng.randint(0, 99999)}">\n{inner}\n</{tag}>'
    if k < 0.86:
        hide = rng.choice(
            [
                "<div hidden>{}</div>",
                '<div aria-hidden="true">{}</div>',
                '<div style="color: red; display: none">{}</div>',
                "<template><p>{}</p></template>",
                '<svg viewBox="0 0 10 10"><title>{}</title><path d="M0 0L10 10"/></svg>',
                '<script>var x = "{}"; if (a < b) {{ run(); }}</script>',
            ]
        )
        return hide.format(sentence(rng))
    if k < 0.92:
        return f"<blockquote><p>{html_inline(rng)}</p></blockquote>"
    if k < 0.96:
        return f'<img src="/i/{rng.randint(0, 999)}.png" alt="{rng.choice(WORDS)}"><br>{sentence(rng)}<hr>'
    return f"<div>{sentence(rng)}<br>\n{sentence(rng)}</div>"


def make_html(size: int, seed: int = 2) -> bytes:
    rng = random.Random(seed)
    head = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f"<title>{sentence(rng)} &amp; more</title>\n"
        "<style>body { font: 14px sans-serif } .c1 > p { margin: 0 }</style>\n"
        "<script>window.dataLayer = [{'a': 1}]; function f(a, b) { return a < b; }</script>\n"
        '</head><body>\n<nav aria-hidden="true"><ul><li><a href="/">Home</a><li>Docs</ul></nav>\n'
        "<main>\n"
    )
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
        row = (
            ",".join(
                [
                    str(i),
                    name,
                    rng.choice(["Zürich", "Montréal", "Oslo", "Paris", ""]),
                    f"{rng.randint(0, 9999) / 100:.2f}",
                    str(rng.randint(0, 500)),
                    f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    rng.choice(["open", "shipped", "closed", ""]),
                    note,
                ]
            )
            + "\r\n"
        )
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
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True, capture_output=True).stdout
    module = types.ModuleType("kbdesk_extract_baseline")
    module.__file__ = f"{rev}:{path}"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


CLOCKS = {"cpu": time.thread_time, "wall": time.perf_counter}


def same_output(a, b) -> bool:
    return a.text == b.text and [(s.text, s.metadata) for s in a.sections] == [(s.text, s.metadata) for s in b.sections]


def human(n: int) -> str:
    return f"{n // MB} MB" if n >= MB else f"{n // KB} KB"


def main() -> int:
    ap = parser(__doc__, quick="100 KB and 1 MB only")
    ap.add_argument("--rounds", type=int, default=5, help="at least N timed runs each (default 5)")
    ap.add_argument(
        "--budget",
        type=float,
        default=1.0,
        help="more runs (up to 50) until each side has run this many seconds (default 1)",
    )
    ap.add_argument(
        "--clock",
        choices=CLOCKS,
        default="cpu",
        help="cpu: CPU time of this thread (default; steady on a busy machine), wall: elapsed",
    )
    ap.add_argument(
        "--baseline",
        default=DEFAULT_BASELINE,
        help=f"git revision of the 'before' extract.py (default {DEFAULT_BASELINE}; 'none' to skip)",
    )
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated subset")
    args = ap.parse_args()

    sizes = [100 * KB, 1 * MB] + ([] if args.quick else [5 * MB])
    old = None if args.baseline == "none" else load_baseline(args.baseline)
    max_bytes = 10 * 1024 * 1024
    print(f"Command: `{command_line()}` (from the repository root)\n")
    print(
        f"Machine: {machine_line(machine_info())}; {args.clock} time, best of >= {args.rounds} alternating runs; "
        f"1 MB = 10^6 bytes; 'before' = extract.py at git {args.baseline}\n"
    )
    rows = []
    for fmt in args.formats.split(","):
        filename, make = FORMATS[fmt]
        for size in sizes:
            data = make(size)
            mb = len(data) / MB
            sides = [current] + ([old] if old else [])
            results = [side.extract_bytes(data, filename, max_bytes=max_bytes) for side in sides]  # also a warm-up
            times, _ = best_of(
                [
                    lambda side=side, data=data, filename=filename: side.extract_bytes(
                        data, filename, max_bytes=max_bytes
                    )
                    for side in sides
                ],
                args.rounds,
                budget=args.budget,
                clock=CLOCKS[args.clock],
                collect=True,
            )
            row = {"format": fmt, "size": human(size)}
            if old:
                row.update({"before (s)": f"{times[1]:.3f}", "before MB/s": f"{mb / times[1]:.1f}"})
            row.update({"after (s)": f"{times[0]:.3f}", "after MB/s": f"{mb / times[0]:.1f}"})
            if old:
                row.update(
                    {
                        "speed-up": f"{times[1] / times[0]:.1f}x",
                        "same output": "yes" if same_output(results[1], results[0]) else "NO",
                    }
                )
            rows.append(row)
            print(f"  {fmt} {human(size)}: {times[0]:.3f} s", file=sys.stderr, flush=True)
    print(markdown_table(rows, align="llrrrrrl" if old else "llrr"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
