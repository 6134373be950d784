#!/usr/bin/env python
"""Search while the embedding provider is down (or hangs): what it costs, CLI and HTTP.

    .venv/bin/python bench/bench_degrade.py            # 5 CLI runs, 3 HTTP bursts of 20 (and of 60)
    .venv/bin/python bench/bench_degrade.py --quick    # 2 CLI runs, 1 burst

A KB with vectors is built from ``assets/sample`` and 300 generated notes, embedded by a
small deterministic embeddings server on loopback (this script's own: vectors from a hash
of the text; the figures are about the failure path, not about retrieval). Then the
provider goes away and kbdesk is asked to search:

1. **CLI, provider down.** ``kbdesk search KB QUERY`` (auto mode) in a fresh process, the
   provider's port closed: wall time of the whole process, its exit code, and whether it
   printed keyword results and the notice. ``--mode keyword`` (never asks the provider)
   and the same search with the provider up are timed beside it.
2. **HTTP, provider down.** One ``kbdesk serve``; 20 (then 60) searches sent at once, each
   on its own connection, and 0.2 s into the burst an unrelated ``GET
   /api/knowledge-bases``: per-search latency (p50, max), whether every answer was a 200
   with keyword results and ``keyword_fallback``, and the GET's latency.
3. **HTTP, provider hangs.** The same burst of 20 against a provider that accepts the
   connection and never answers (the query embedding's 5 s timeout applies once; the
   circuit breaker spares the searches after it).

Results go to ``bench/results/degrade.json``; the figures are recorded in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from harness import ROOT, command_line, kbdesk_cli, machine_info, machine_line, parser, save_result, scratch_dir
from harness.tables import markdown_table

DIMS = 64
QUERY = "how long are snapshots kept"


class _Embeddings(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(inputs)]
        raw = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def _vector(text: str) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIMS)
    return (v / np.linalg.norm(v)).tolist()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(home: Path) -> tuple[int, str]:
    """The home: one provider on a port of its own, a KB with vectors; returns (port, KB id)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[providers.emb]\nkind = "custom"\nbase_url = "http://127.0.0.1:{port}/v1"\n\n'
        '[roles.embedding]\nprovider = "emb"\nmodel = "hash-64"\n'
    )
    notes = home / "notes"
    notes.mkdir()
    for i in range(300):
        (notes / f"note-{i:03d}.md").write_text(
            f"# Note {i}\n\nThe harbour crane {i} lifts containers on shift {i % 7}.\n"
        )
    subprocess.run(kbdesk_cli("--home", home, "kb", "create", "docs"), check=True, capture_output=True)
    for folder in (ROOT / "assets" / "sample", notes):
        subprocess.run(kbdesk_cli("--home", home, "add", "docs", folder, "-q"), check=True, capture_output=True)
    listed = json.loads(
        subprocess.run(kbdesk_cli("--home", home, "kb", "list", "--json"), check=True, capture_output=True).stdout
    )
    server.shutdown()
    server.server_close()
    kb = listed["data"][0]
    assert kb["chunk_count"] > 300, kb
    return port, kb["id"]


def cli_runs(home: Path, runs: int, port: int) -> list[dict[str, Any]]:
    rows = []
    for label, args, up in (
        ("auto, provider down", [], False),
        ("--mode keyword, provider down", ["--mode", "keyword"], False),
        ("auto, provider up", [], True),
    ):
        server = None
        if up:
            server = ThreadingHTTPServer(("127.0.0.1", port), _Embeddings)
            threading.Thread(target=server.serve_forever, daemon=True).start()
        times, codes, notices, results = [], set(), 0, 0
        for _ in range(runs):
            start = time.perf_counter()
            run = subprocess.run(
                kbdesk_cli("--home", home, "search", "docs", QUERY, *args), capture_output=True, text=True, timeout=120
            )
            times.append(time.perf_counter() - start)
            codes.add(run.returncode)
            notices += "notice: keyword search only in docs" in run.stderr
            results += "getting-started.md" in run.stdout
        if server is not None:
            server.shutdown()
            server.server_close()
        rows.append(
            {
                "kbdesk search": label,
                "wall p50 s": f"{np.median(times):.2f}",
                "wall max s": f"{max(times):.2f}",
                "exit": ",".join(map(str, sorted(codes))),
                "notice": f"{notices}/{runs}",
                "answer found": f"{results}/{runs}",
            }
        )
    return rows


def _token(home: Path) -> str:
    out = subprocess.run(
        kbdesk_cli("--home", home, "token", "create", "--user", "bench", "--json"),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["token"]


def _serve(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _port()
    proc = subprocess.Popen(
        kbdesk_cli("--home", home, "serve", "--port", port, "--log-level", "warning"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api"
    for _ in range(600):
        try:
            httpx.get(base, timeout=1)
            return proc, base
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("kbdesk serve did not start")


def burst(base: str, secret: str, kb_id: str, n: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {secret}"}
    lat: list[float] = []
    ok = [0]
    lock = threading.Lock()
    go = threading.Event()

    def one() -> None:
        with httpx.Client(headers=headers, timeout=120) as client:
            go.wait()
            start = time.perf_counter()
            r = client.post(f"{base}/knowledge-bases/{kb_id}/search", json={"query": QUERY})
            took = time.perf_counter() - start
            body = r.json() if r.status_code == 200 else {}
            with lock:
                lat.append(took)
                ok[0] += r.status_code == 200 and body.get("keyword_fallback") == ["docs"] and bool(body.get("data"))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    time.sleep(0.3)  # every client connected and waiting
    go.set()
    time.sleep(0.2)
    with httpx.Client(headers=headers, timeout=120) as client:
        start = time.perf_counter()
        listed = client.get(f"{base}/knowledge-bases")
        unrelated = time.perf_counter() - start
    for t in threads:
        t.join()
    return {
        "searches": n,
        "p50": float(np.median(lat)),
        "max": max(lat),
        "ok": ok[0],
        "unrelated": unrelated,
        "unrelated_status": listed.status_code,
    }


def _hanging(port: int) -> socket.socket:
    """A listener that accepts connections and never answers (a provider that hangs)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


def http_runs(home: Path, rounds: int, port: int, kb_id: str) -> list[dict[str, Any]]:
    secret = _token(home)
    rows = []
    for label, n, hang in (("provider down", 20, False), ("provider down", 60, False), ("provider hangs", 20, True)):
        for r in range(rounds):
            listener = _hanging(port) if hang else None
            proc, base = _serve(home)  # a fresh server each round: its circuit breaker starts closed
            try:
                got = burst(base, secret, kb_id, n)
            finally:
                proc.terminate()
                proc.wait(30)
                if listener is not None:
                    listener.close()
            rows.append(
                {
                    "kbdesk serve": f"{label}, {n} at once (round {r + 1})",
                    "search p50 s": f"{got['p50']:.2f}",
                    "search max s": f"{got['max']:.2f}",
                    "keyword answers": f"{got['ok']}/{n}",
                    "GET /api/knowledge-bases s": f"{got['unrelated']:.3f} ({got['unrelated_status']})",
                }
            )
    return rows


def main() -> None:
    args = parser(__doc__, quick="2 CLI runs, 1 round of bursts").parse_args()
    runs, rounds = (2, 1) if args.quick else (5, 3)
    with scratch_dir("degrade-") as scratch:
        home = scratch / "home"
        port, kb_id = build(home)
        cli = cli_runs(home, runs, port)
        http = http_runs(home, rounds, port, kb_id)
    print("### kbdesk search, the embedding provider down (fresh process each run)\n")
    print(markdown_table(cli, list(cli[0]), align="lrrrrr"))
    print("\n### kbdesk serve: a burst of searches during the outage, and an unrelated request\n")
    print(markdown_table(http, list(http[0]), align="lrrrr"))
    print(f"\n{machine_line(machine_info())}\ncommand: {command_line()}")
    save_result("degrade", {"cli": cli, "http": http})


if __name__ == "__main__":
    main()
