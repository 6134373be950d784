"""Benchmark: what a re-run of ``kbdesk add`` costs on a folder with many broken files.

Not part of the test run. A folder holds ``--good`` text files and ``--broken`` PDFs
that cannot be read (truncated, encrypted without a password, image-only). The first
``add`` indexes the good ones and records each failure with its reason; a second
``add`` over the unchanged folder should cost only ``stat`` calls, because failures of
a file's own are remembered until the file changes; ``--retry-failed`` pays the full
price again (what every re-run cost before failures were remembered).

    .venv/bin/python bench/bench_rerun.py
    .venv/bin/python bench/bench_rerun.py --good 500 --broken 300
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import ROOT, kbdesk_cli, parser, save_result, timed

sys.path.insert(0, str(ROOT / "tests"))

from pdf_builders import encrypt, make_pdf, text_page


def build(folder: Path, good: int, broken: int) -> None:
    folder.mkdir(parents=True)
    for i in range(good):
        (folder / f"note{i:04d}.md").write_text(f"# Note {i}\n\nThe ferry {i} leaves pier {i % 17}. " * 20)
    whole = make_pdf([text_page(f"page about tides {i}") for i in range(3)])
    for i in range(broken):
        kind = i % 3
        if kind == 0:
            data = whole[: len(whole) // 2]  # truncated
        elif kind == 1:
            data = encrypt(make_pdf([text_page(f"secret {i}")]), "pw")  # needs a password
        else:
            data = b"%PDF-1.4\n" + os.urandom(2048)  # garbage after a header
        (folder / f"broken{i:04d}.pdf").write_bytes(data)


def timed_add(env: dict[str, str], folder: Path, *extra: str) -> tuple[float, dict]:
    """One ``kbdesk add`` in a fresh process: its wall time and its JSON report."""
    elapsed, run = timed(
        lambda: subprocess.run(
            kbdesk_cli("add", "bench", folder, "--json", "-q", *extra), env=env, capture_output=True, text=True
        )
    )
    if run.returncode not in (0, 3):
        raise SystemExit(run.stderr)
    return elapsed, json.loads(run.stdout)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--good", type=int, default=300)
    ap.add_argument("--broken", type=int, default=150)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbdesk-rerun-") as tmp:
        folder = Path(tmp) / "corpus"
        build(folder, args.good, args.broken)
        env = {**os.environ, "KBDESK_HOME": str(Path(tmp) / "home")}
        subprocess.run(kbdesk_cli("kb", "create", "bench"), env=env, check=True, stdout=subprocess.DEVNULL)
        first, r1 = timed_add(env, folder)
        again, r2 = timed_add(env, folder)
        forced, r3 = timed_add(env, folder, "--retry-failed")
    result = {
        "files": {"good": args.good, "broken": args.broken},
        "first_add_s": round(first, 2),
        "first_failed": len(r1["failed"]),
        "rerun_s": round(again, 2),
        "rerun_known_failures": len(r2["known_failures"]),
        "rerun_failed": len(r2["failed"]),
        "rerun_unchanged": len(r2["unchanged"]),
        "retry_failed_s": round(forced, 2),
        "retry_failed_failed": len(r3["failed"]),
        "rerun_vs_retry": round(again / forced, 3),
    }
    save_result("rerun", result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
