"""How fast the CLI starts: `kbdesk --version`, `--help` and a keyword search, each beside a
bare interpreter start (`python -c pass`) in the same round, so the ratio holds on a busy
machine. Rounds alternate the commands; the figures are medians of the rounds.

    .venv/bin/python bench/bench_startup.py [--rounds 30]

The target: `kbdesk --version` and `--help` within about 3x of `python -c pass`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import command_line, machine_info, machine_line, parser

ROOT = Path(__file__).resolve().parent.parent
KBDESK = str(Path(sys.executable).with_name("kbdesk"))


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=30)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbdesk-cli-") as home:
        env = {**os.environ, "KBDESK_HOME": home}
        subprocess.run([KBDESK, "kb", "create", "demo"], env=env, check=True, capture_output=True)
        subprocess.run([KBDESK, "add", "demo", str(ROOT / "assets" / "sample")], env=env, capture_output=True)
        sides = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "kbdesk --version": [KBDESK, "--version"],
            "kbdesk --help": [KBDESK, "--help"],
            "kbdesk search (keyword KB)": [KBDESK, "search", "demo", "how do I restore a backup"],
        }
        for argv in sides.values():  # warm the file cache
            timed(argv, env)
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, argv in sides.items():
                times[name].append(timed(argv, env))
    base = statistics.median(times["python -c pass"])
    print(machine_line(machine_info()))
    print(f"load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds\n")
    print("| command | median (ms) | ÷ python -c pass |")
    print("|---|---|---|")
    for name, samples in times.items():
        med = statistics.median(samples)
        print(f"| {name} | {med * 1000:.0f} | {med / base:.2f}× |")
    print(f"\ncommand: {command_line()}")


if __name__ == "__main__":
    main()
