"""Ingest on a busy machine: real PDFs and Word files, ten notes and a Word body of ~180 MB.

    .venv/bin/python bench/busy_ingest.py --files DIR [--loops 4] [--limit 600] [--same-session]

``DIR`` holds real files (PDFs of 60 KB-3 MB from public parsers' test suites — py-pdf's
``sample-files`` and pypdf's ``resources/`` — and .docx files, e.g. python-docx's test
files); they are copied to a scratch folder with ten notes and ``log.docx``, whose
``word/document.xml`` is ~180 MB of ordinary paragraphs (5 MB zipped, built here).

Beside ``--loops`` busy loops (``nice -n -5 python3 -c "while True: pass"``, each ending
itself after ``--limit`` seconds at the latest, killed by pid when the runs are done),
the script runs, one after the other:

1. ``nice -n 15 kbdesk add`` of the folder into a keyword-only KB;
2. ``nice -n 15`` the same files read with each format's usual library: pypdf
   (``PdfReader(...).pages[i].extract_text()``) for PDFs, the plain zip + XML read
   (``zipfile`` + ``xml.etree.ElementTree.fromstring`` of ``word/document.xml``, as
   docx2txt and most scripts do; python-docx is not installed here) for .docx, a plain read for
   notes — each file in its own try, as a batch job would.

For each: wall time, processor time, and the peak resident memory of the whole process
tree (the sum over the process and its children, sampled every 0.1 s with psutil). For
kbdesk: what became of each file (``kbdesk docs --json``).

The loops run in a session of their own (``setsid``) unless ``--same-session``: a
desktop schedules each terminal's session as a group (autogroup), so loops started in
another terminal take their share, not ~99.8 % of a 2-core machine — in one session, a
``nice -n 15`` process beside four ``nice -n -5`` loops on 2 cores gets ~0.2 % of a core
(0.07 s of processor time in 35 s, measured), and nothing finishes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from harness import ROOT, command_line, kbdesk_cli, machine_info, machine_line, markdown_table, parser, save_result

sys.path.insert(0, str(ROOT / "tests"))
from format_builders import big_docx

BASELINE = r"""
import io, json, logging, sys, time, zipfile
import xml.etree.ElementTree as ET
logging.disable(logging.CRITICAL)
import pypdf
out = {}
for path in sys.argv[1:]:
    started = time.monotonic()
    try:
        if path.endswith(".pdf"):
            reader = pypdf.PdfReader(path)
            chars = sum(len(page.extract_text() or "") for page in reader.pages)
        elif path.endswith(".docx"):
            with zipfile.ZipFile(path) as z:
                root = ET.fromstring(z.read("word/document.xml"))
            chars = sum(len(t.text or "") for t in root.iter("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}t"))
        else:
            chars = len(open(path, encoding="utf-8").read())
        out[path] = ["ok", chars, time.monotonic() - started]
    except BaseException as exc:
        out[path] = [type(exc).__name__ + ": " + str(exc)[:120], 0, time.monotonic() - started]
print(json.dumps(out))
"""


def watched(cmd: list[str], env: dict[str, str], limit: float) -> dict[str, Any]:
    """Run ``cmd``; its wall time, processor time and the peak RSS of its process tree."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    root = psutil.Process(proc.pid)
    peak = peak_one = 0
    cpu: dict[int, float] = {}
    out: list[bytes] = []

    def drain() -> None:
        out.append(proc.stdout.read())  # type: ignore[union-attr]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    while proc.poll() is None:
        if time.monotonic() - started > limit:
            proc.kill()
            break
        total = 0
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = []
        for p in tree:
            try:
                rss = p.memory_info().rss
                times = p.cpu_times()
                cpu[p.pid] = times.user + times.system
            except psutil.Error:
                continue
            total += rss
            peak_one = max(peak_one, rss)
        peak = max(peak, total)
        time.sleep(0.1)
    proc.wait()
    reader.join()
    err = proc.stderr.read().decode("utf-8", "replace")  # type: ignore[union-attr]
    return {
        "wall_s": time.monotonic() - started,
        "cpu_s": sum(cpu.values()),
        "peak_tree_mb": peak / 2**20,
        "peak_process_mb": peak_one / 2**20,
        "code": proc.returncode,
        "stdout": b"".join(out).decode("utf-8", "replace"),
        "stderr_lines": len(err.splitlines()),
    }


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--files", required=True, help="folder of real PDFs and .docx files")
    ap.add_argument("--loops", type=int, default=4)
    ap.add_argument("--limit", type=float, default=600.0, help="seconds the loops (and each run) may last")
    ap.add_argument("--same-session", action="store_true", help="the loops in this process's session")
    args = ap.parse_args()
    machine = machine_info()
    scratch = Path(tempfile.mkdtemp(prefix="kbdesk-busy-"))
    loops: list[subprocess.Popen] = []
    try:
        folder = scratch / "in"
        folder.mkdir()
        real = sorted(p for p in Path(args.files).iterdir() if p.suffix.lower() in (".pdf", ".docx"))
        for p in real:
            shutil.copy(p, folder / p.name)
        for i in range(10):
            (folder / f"note{i}.md").write_text(f"# Note {i}\n\nTide note {i}: the reef at low water.\n" * 3)
        big_docx(folder / "log.docx")
        env = dict(os.environ, KBDESK_HOME=str(scratch / "home"))
        subprocess.run(kbdesk_cli("kb", "create", "Busy", "--keyword-only"), env=env, check=True, capture_output=True)
        files = sorted(str(p) for p in folder.iterdir())
        sizes = {Path(p).name: Path(p).stat().st_size for p in files}
        # each loop ends itself after --limit seconds (and is killed by its pid at the end):
        # ``nice`` execs python, so the pid is the loop's own (a ``timeout`` wrapper killed
        # with SIGKILL would leave its loop running)
        spin = f"import time\nend = time.monotonic() + {args.limit}\nwhile time.monotonic() < end: pass"
        loop = ["nice", "-n", "-5", sys.executable, "-c", spin]
        for _ in range(args.loops):
            loops.append(subprocess.Popen(loop, start_new_session=not args.same_session))
        time.sleep(1)
        nice = ["nice", "-n", "15"]
        add = watched([*nice, *kbdesk_cli("add", "Busy", str(folder), "--json", "-q")], env, args.limit)
        base = watched([*nice, sys.executable, "-c", BASELINE, *files], env, args.limit)
    finally:
        for proc in loops:  # only the loops this script started, by their pid
            proc.kill()
            proc.wait()
    docs = json.loads(subprocess.run(kbdesk_cli("docs", "Busy", "--json"), env=env, capture_output=True).stdout)
    shutil.rmtree(scratch, ignore_errors=True)
    status = {d["filename"]: (d["status"], d.get("error")) for d in docs["data"]}
    baseline = json.loads(base["stdout"] or "{}")
    by_name = {Path(k).name: v for k, v in baseline.items()}
    table = []
    for name in sorted(set(status) | set(by_name)):
        st, error = status.get(name, ("—", None))
        b = by_name.get(name, ["(not reached)", 0, 0])
        table.append(
            {
                "file": name,
                "KB": sizes.get(name, 0) // 1024,
                "kbdesk": st if st == "ready" else f"{st}: {error}",
                "usual library": "ok" if b[0] == "ok" else b[0],
                "library s": round(b[2], 2),
            }
        )
    result = {
        "machine": machine,
        "command": command_line(),
        "same_session": args.same_session,
        "loops": args.loops,
        "kbdesk": {k: v for k, v in add.items() if k != "stdout"},
        "baseline": {k: v for k, v in base.items() if k != "stdout"},
        "files": table,
    }
    save_result("busy_ingest", result)
    print(machine_line(machine))
    print(command_line())
    for label, r in (("kbdesk add", add), ("usual libraries", base)):
        print(
            f"{label}: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, peak {r['peak_tree_mb']:.0f} MB "
            f"(process tree; largest process {r['peak_process_mb']:.0f} MB), exit {r['code']}, "
            f"{r['stderr_lines']} stderr lines"
        )
    print(markdown_table(table, ["file", "KB", "kbdesk", "usual library", "library s"], align="lrllr"))


if __name__ == "__main__":
    main()
