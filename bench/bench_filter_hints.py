#!/usr/bin/env python
"""What the TUI's filter line completes from: ``desk.filter_hints`` on a KB of many documents.

Run from the repository root::

    .venv/bin/python bench/bench_filter_hints.py                  # 20,000 documents
    .venv/bin/python bench/bench_filter_hints.py --docs 50000 --rounds 7

Data (cached in ``bench/results/hints-<n>.db``): ``n`` one-chunk documents written through
``desk.add_document`` (keyword only: no vectors), each with about 2 KB of extracted text, in
200 folders two deep, with two tags each out of 500 (half of them nested, ``area/topic``),
five file types. Timed, in ``rounds`` rounds (median, and the slowest):

- **rows**: the hints read through ``list_documents`` (every document row, its extracted
  text included) — how ``filter_hints`` read them before;
- **facts, first**: ``filter_hints`` after the store's kept facts were dropped (it reads
  the facts through the covering index, as a KB's first filtered search does);
- **facts, again**: ``filter_hints`` with the facts kept (the KB unchanged since).

Both ways give the same tags, folders and types (checked: the rows' tags with the parents of
nested ones).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kbdesk import open_desk  # noqa: E402
from kbdesk.filters import with_parents  # noqa: E402

TYPES = ("md", "pdf", "txt", "docx", "html")


def build(path: Path, n: int) -> None:
    os.environ["KBDESK_HOME"] = str(path.parent / "hints-home")
    with open_desk(path) as desk:
        if any(kb.name == "hints" for kb in desk.store.list_kbs()):
            if desk.kb("hints").document_count == n:
                return
            desk.delete_kb("hints")
        desk.create_kb("hints", keyword_only=True)
        filler = "words of a document body that nobody completes from " * 40
        for i in range(n):
            folder = f"area-{i % 20}/project-{i % 200}"
            tags = [f"area-{i % 25}/topic-{i % 250}", f"tag-{(i * 7) % 250}"]
            desk.add_document(
                "hints", f"{folder}/note-{i}.{TYPES[i % 5]}", [f"Note {i}. {filler}"], properties={"tags": tags}
            )
            if i and i % 5000 == 0:
                print(f"  {i:,} documents written", flush=True)


def from_rows(desk, kb_id: str) -> tuple[tuple[str, ...], ...]:
    tags, folders, types = set(), set(), set()
    for doc in desk.store.list_documents(kb_id, None):
        tags |= with_parents(doc.tags)
        if doc.file_type:
            types.add(doc.file_type)
        parts = doc.path.split("/")[:-1]
        folders.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return tuple(sorted(tags)), tuple(sorted(folders)), tuple(sorted(types))


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1000, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    path = ROOT / "bench" / "results" / f"hints-{args.docs}.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"building {path} ({args.docs:,} documents) unless cached …", flush=True)
    build(path, args.docs)
    times: dict[str, list[float]] = {"rows": [], "facts, first": [], "facts, again": []}
    with open_desk(path) as desk:
        kb_id = desk.kb("hints").id
        for _ in range(args.rounds):
            ms, rows = timed(lambda: from_rows(desk, kb_id))
            times["rows"].append(ms)
            desk.store.facts.cache.clear()
            ms, hints = timed(lambda: desk.filter_hints(["hints"]))
            times["facts, first"].append(ms)
            ms, again = timed(lambda: desk.filter_hints(["hints"]))
            times["facts, again"].append(ms)
            assert (hints.tags, hints.folders, hints.types) == rows == (again.tags, again.folders, again.types)
        print(f"{len(hints.tags)} tags, {len(hints.folders)} folders, {len(hints.types)} types")
    print(f"\n{args.docs:,} documents, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}\n")
    print("| read | median ms | slowest ms |\n|---|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.1f} | {max(values):.1f} |")


if __name__ == "__main__":
    main()
