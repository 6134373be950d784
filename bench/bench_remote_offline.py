"""A remote that is down or silent never stalls a search: ``kbdesk search`` in fresh
processes, a local KB beside a remote KB whose server is stopped (connection refused),
or accepts connections and never answers, against the same search of the local KB alone.

    .venv/bin/python bench/bench_remote_offline.py [--runs 7]

The local KB is keyword-only (no embedding model to load), so the times are the
process's own start, the search and the remote's cost. Every run must exit 0 with the
local result and a note naming the remote.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def kbdesk(*args: str, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "kbdesk.cli.main", *args], capture_output=True, text=True, env=env)
    return time.perf_counter() - start, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, "KBDESK_HOME": str(home), "TEAM_KB_TOKEN": "kbd_" + "x" * 43}
        docs = Path(tmp) / "docs"
        docs.mkdir()
        (docs / "notes.md").write_text("# Notes\n\n## Backups\n\nMy laptop backups run on Fridays.\n")
        kbdesk("kb", "create", "Notes", env=env)
        kbdesk("add", "Notes", str(docs), env=env)
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        held: list[socket.socket] = []
        threading.Thread(target=lambda: [held.append(silent.accept()[0]) for _ in range(64)], daemon=True).start()
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        refused_port = closed.getsockname()[1]
        closed.close()  # nothing listens there now: connection refused
        config = home / "config" / "config.toml"
        cases = {
            "local KB alone": (None, ["Notes"]),
            "+ remote stopped (connection refused)": (refused_port, ["Notes", "team:Docs"]),
            "+ remote silent (accepts, never answers)": (silent.getsockname()[1], ["Notes", "team:Docs"]),
        }
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
        print("| search | median s | max s | exit codes | note |")
        print("|---|---:|---:|---|---|")
        for label, (port, refs) in cases.items():
            text = ""
            if port is not None:
                text = f'[remotes.team]\nurl = "http://127.0.0.1:{port}/api"\ntoken_env = "TEAM_KB_TOKEN"\n'
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(text)
            times, codes, note = [], set(), ""
            for _ in range(args.runs):
                seconds, run = kbdesk("search", *refs, "backups", env=env)
                times.append(seconds)
                codes.add(run.returncode)
                assert "notes.md" in run.stdout, run.stderr
                note = next((ln for ln in run.stderr.splitlines() if "remote" in ln), "")
            print(f"| {label} | {statistics.median(times):.2f} | {max(times):.2f} | {sorted(codes)} | {note[:90]} |")
        for conn in held:
            conn.close()
        silent.close()
    print(f"\ncommand: .venv/bin/python bench/bench_remote_offline.py {' '.join(sys.argv[1:])}".rstrip())


if __name__ == "__main__":
    main()
