#!/usr/bin/env python
"""Path globs that freeze a regex matcher, against a real ``kbdesk serve``.

Run from the repository root::

    .venv/bin/python bench/bench_globs.py            # 2,000 documents, 10 s of bad requests
    .venv/bin/python bench/bench_globs.py --quick    # 500 documents, 4 s

What it measures:

1. **The matcher alone** (in this process): microseconds per path of the linear glob
   matcher (``kbdesk.globs``) for ordinary globs and for ``*?`` × 14 + ``Z``, beside
   Python's ``re`` on the regex the same glob used to become (ordinary globs only, and
   ``*?`` × 8 / × 10 + ``Z``, which it takes 0.3 s / 2 s per name to fail).
2. **A server under bad filters.** ``--clients`` threads send searches with the
   pathological filters (``path``/``exclude`` of ``*?`` × 14 + ``Z``, accepted; ``*?`` × 30
   + ``Z`` and ``**/`` × 500, refused) for ``--seconds``, while this thread asks
   ``GET /api/me`` every 50 ms: the latency of ``/api/me`` during the load, of each kind of
   bad search, and of an unfiltered search for comparison.
3. **Stopping.** SIGTERM during the load: seconds until the process has exited.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BAD = "*?" * 14 + "Z"


def old_regex(pattern: str) -> re.Pattern[str]:
    """The regex kbdesk made of a glob before the linear matcher (for comparison only)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def paths(n: int) -> list[str]:
    return [f"team/area-{i % 40}/project-{i % 13}/meeting-notes-{i:05d}-vacuum-and-analyze.md" for i in range(n)]


def matcher_alone(n: int) -> dict[str, float]:
    from kbdesk.globs import glob_matcher

    names = paths(n)
    out: dict[str, float] = {}
    for glob in ("*.md", "team/**", "**/meeting-notes-0*", BAD):
        match = glob_matcher((glob,))
        started = time.perf_counter()
        for p in names:
            match(p)
        out[f"linear {glob[:24]}"] = (time.perf_counter() - started) / n * 1e6
    for glob in ("*.md", "team/**", "**/meeting-notes-0*"):
        regex = old_regex(glob)
        started = time.perf_counter()
        for p in names:
            regex.fullmatch(p) or regex.fullmatch(p.rsplit("/", 1)[-1])
        out[f"regex {glob[:24]}"] = (time.perf_counter() - started) / n * 1e6
    for stars in (8, 10):
        regex = old_regex("*?" * stars + "Z")
        started = time.perf_counter()
        regex.fullmatch(names[0].rsplit("/", 1)[-1])
        out[f"regex *?x{stars}+Z (one name)"] = (time.perf_counter() - started) * 1e6
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    quick = "--quick" in sys.argv
    docs, seconds, clients = (500, 4.0, 3) if quick else (2000, 10.0, 4)
    result: dict[str, object] = {"documents": docs, "seconds": seconds, "clients": clients}
    result["matcher_us_per_path"] = {k: round(v, 2) for k, v in matcher_alone(20_000).items()}
    home = Path(tempfile.mkdtemp(prefix="kbdesk-globs-"))
    env = {**os.environ, "KBDESK_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    from kbdesk import open_desk

    with open_desk(home=home) as desk:
        kb = desk.create_kb("Notes", keyword_only=True)
        for p in paths(docs):
            desk.add_document(kb.id, p, [f"Vacuum and analyze notes for {p}."])
        kb_id = kb.id
    kbdesk = [sys.executable, "-m", "kbdesk.cli.main"]
    token = json.loads(
        subprocess.run(
            [*kbdesk, "token", "create", "--user", "me", "--read-only", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["token"]
    port = free_port()
    server = subprocess.Popen(
        [*kbdesk, "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api"
    headers = {"Authorization": f"Bearer {token}"}
    for _ in range(200):
        try:
            httpx.get(base, timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    kinds = {
        "path *?x14+Z": {"path": BAD},
        "exclude *?x14+Z": {"exclude": BAD},
        "path *?x30+Z (refused)": {"path": "*?" * 30 + "Z"},
        "exclude **/x500 (refused)": {"exclude": "**/" * 500},
        "no filter": None,
    }
    timings: dict[str, list[float]] = {k: [] for k in kinds}
    statuses: dict[str, set[int]] = {k: set() for k in kinds}
    stop = threading.Event()

    def load(offset: int) -> None:
        names = list(kinds)
        with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
            i = offset
            while not stop.is_set():
                name = names[i % len(names)]
                body: dict[str, object] = {"query": "vacuum analyze", "limit": 10}
                if kinds[name] is not None:
                    body["filters"] = kinds[name]
                started = time.perf_counter()
                try:
                    answer = client.post(f"/knowledge-bases/{kb_id}/search", json=body)
                    statuses[name].add(answer.status_code)
                except httpx.HTTPError:
                    statuses[name].add(0)
                timings[name].append(time.perf_counter() - started)
                i += 1

    threads = [threading.Thread(target=load, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    me: list[float] = []
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            started = time.perf_counter()
            assert client.get("/me").status_code == 200
            me.append(time.perf_counter() - started)
            time.sleep(0.05)
        sent = time.monotonic()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
            result["stop_after_sigterm_s"] = round(time.monotonic() - sent, 2)
        except subprocess.TimeoutExpired:
            server.kill()
            result["stop_after_sigterm_s"] = "over 60"
    stop.set()

    def stats(values: list[float]) -> dict[str, float]:
        ms = np.array(values) * 1000 if values else np.array([0.0])
        return {
            "n": len(values),
            "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "max_ms": round(float(ms.max()), 1),
        }

    result["api_me_during_load"] = stats(me)
    result["searches"] = {k: {**stats(v), "statuses": sorted(statuses[k])} for k, v in timings.items()}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
