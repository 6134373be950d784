"""Benchmark: what honouring .gitignore files costs a folder walk.

Not part of the test run. Builds a scratch tree of ``--files`` small files in nested
folders (10 per folder, 3 levels), with a .gitignore of ``--patterns`` lines at the root
and a small one in every folder of the first level (a repository's usual shape: GitHub's
Python, Node and Go templates hold 100-200 lines), and times ``scan`` of the tree with the
ignore files honoured and with ``no_ignore`` (CPU time, best of ``--rounds``), at two
sizes, to show the cost grows with the files, not faster.

    .venv/bin/python bench/bench_ignore.py [--files 20000] [--patterns 150] [--rounds 3]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from harness import command_line, markdown_table, parser
from kbdesk.ingest.folders import scan


def build(root: Path, files: int, patterns: int) -> None:
    lines = [f"*.tmp{i}" for i in range(patterns // 2)] + [f"build{i}/" for i in range(patterns // 2)]
    (root / ".gitignore").write_text("\n".join(["*.log", "dist/", "!keep.log", *lines]) + "\n")
    for n in range(files):
        folder = root / f"a{n // 1000}" / f"b{(n // 100) % 10}" / f"c{(n // 10) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / (f"f{n}.log" if n % 7 == 0 else f"f{n}.txt")).write_text("x")
        if n % 1000 == 0:
            (root / f"a{n // 1000}" / ".gitignore").write_text("secret*.txt\n!keep.log\n")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--patterns", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for files in (args.files // 4, args.files):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            build(root, files, args.patterns)
            times = {}
            for label, no_ignore in (("ignore files honoured", False), ("--no-ignore", True)):
                best = float("inf")
                for _ in range(args.rounds):
                    start = time.thread_time()
                    found = scan([root], no_ignore=no_ignore)
                    best = min(best, time.thread_time() - start)
                times[label] = (best, len(found.files))
            honoured, plain = times["ignore files honoured"], times["--no-ignore"]
            rows.append(
                {
                    "files": files,
                    "patterns": args.patterns + 3,
                    "taken / left out": f"{honoured[1]:,} / {plain[1] - honoured[1]:,}",
                    "honoured ms": round(honoured[0] * 1000, 1),
                    "--no-ignore ms": round(plain[0] * 1000, 1),
                    "× --no-ignore": round(honoured[0] / plain[0], 2),
                    "µs per file": round(honoured[0] * 1e6 / files, 1),
                }
            )
    print(command_line())
    print(markdown_table(rows))


if __name__ == "__main__":
    main()
