#!/usr/bin/env python
"""kbdesk serve against big and many uploads: memory, and how fast an oversized body is cut off.

Run from the repository root::

    .venv/bin/python bench/bench_serve_limits.py             # 8 x 10 MB uploads, 1 GB bodies
    .venv/bin/python bench/bench_serve_limits.py --quick     # 4 x 5 MB uploads, 256 MB bodies

Against a real ``kbdesk serve`` process on loopback (a keyword-only KB on a SQLite file):

1. **Memory.** ``--uploads`` clients upload a Markdown file of ``--mb`` MB each (distinct
   text, distinct names) at the same moment. The server's resident memory is read from
   ``/proc/<pid>/status`` every 20 ms from before the first byte until every document is
   ``ready``; its peak (``VmHWM``, reset before the run) minus its resident memory before
   is the growth. A small upload first loads every module the run uses.
2. **Oversized bodies.** A 1 GB body sent as fast as loopback allows, by a raw socket
   that keeps writing while it reads: chunked (no length), and with ``Content-Length``
   declared. Measured: seconds from the first byte to the 413, and the bytes the
   client had written by then (what the server could at most have read).

Results go to ``bench/results/serve_limits.json``; the figures are recorded in docs/SERVE.md.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from harness import command_line, kbdesk_cli, machine_info, parser, save_result, scratch_dir
from harness.tables import markdown_table

MiB = 1024 * 1024
WORDS = [
    "harbour",
    "lighthouse",
    "keeper",
    "estuary",
    "heron",
    "tide",
    "ledger",
    "invoice",
    "walrus",
    "narwhal",
    "beacon",
    "quay",
    "ferry",
    "pilot",
    "chart",
    "compass",
    "anchor",
    "rope",
    "sail",
    "mast",
    "hull",
    "keel",
    "rudder",
    "storm",
    "gale",
    "fog",
    "channel",
    "buoy",
]


def text_of(mb: float, seed: int) -> bytes:
    """About ``mb`` MB of Markdown: headings and paragraphs of words (distinct per seed)."""
    rng = random.Random(seed)
    out, size, n = [], 0, 0
    while size < mb * 1_000_000:
        n += 1
        words = (rng.choice(WORDS) + (str(rng.randrange(1000)) if rng.random() < 0.1 else "") for _ in range(120))
        para = " ".join(words)
        piece = f"## Part {seed}-{n}\n\n{para}.\n\n"
        out.append(piece)
        size += len(piece)
    return "".join(out).encode()


def start(home: Path) -> tuple[subprocess.Popen, str, str]:
    from kbdesk import open_desk

    with open_desk(home=home) as desk:
        desk.create_kb("big", keyword_only=True)
    out = subprocess.run(
        kbdesk_cli("--home", home, "token", "create", "--user", "bench", "--json"),
        capture_output=True,
        text=True,
        check=True,
    )
    secret = json.loads(out.stdout)["token"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        kbdesk_cli("--home", home, "serve", "--port", port, "--log-level", "warning"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api"
    for _ in range(600):
        try:
            httpx.get(base, timeout=1)
            return proc, base, secret
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("kbdesk serve did not start")


def status_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
    return out


def memory(proc: subprocess.Popen, base: str, secret: str, uploads: int, mb: float) -> dict[str, Any]:
    client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=600)
    kb_id = client.get("/knowledge-bases").json()["data"][0]["id"]
    warm = client.post(f"/knowledge-bases/{kb_id}/documents", files={"file": ("warm.md", text_of(0.2, 999))}).json()
    wait_ready(client, kb_id, [warm["id"]])
    files = [text_of(mb, seed) for seed in range(uploads)]
    time.sleep(1.0)
    with open(f"/proc/{proc.pid}/clear_refs", "w") as fh:  # VmHWM starts again from now
        fh.write("5")
    before = status_kb(proc.pid)["VmRSS"]
    samples: list[int] = []
    timeline: list[tuple[float, int]] = []
    done = threading.Event()
    t0 = time.monotonic()

    def sample() -> None:
        while not done.is_set():
            samples.append(status_kb(proc.pid)["VmRSS"])
            if not timeline or time.monotonic() - t0 - timeline[-1][0] >= 1.0:
                now = status_kb(proc.pid)
                timeline.append((round(time.monotonic() - t0, 1), now["RssAnon"] // 1024, now["RssFile"] // 1024))
            time.sleep(0.02)

    answers: list[Any] = [None] * uploads
    took: list[float] = [0.0] * uploads

    def upload(i: int) -> None:
        started = time.monotonic()
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=600) as c:
            answers[i] = c.post(f"/knowledge-bases/{kb_id}/documents", files={"file": (f"big-{i}.md", files[i])})
        took[i] = time.monotonic() - started

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    threads = [threading.Thread(target=upload, args=(i,)) for i in range(uploads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted({a.status_code for a in answers})
    ids = [a.json()["id"] for a in answers if a.status_code == 202]
    ready = wait_ready(client, kb_id, ids)
    all_ready = time.monotonic() - started
    done.set()
    sampler.join()
    peak = status_kb(proc.pid)["VmHWM"]
    return {
        "uploads": uploads,
        "mb_each": mb,
        "statuses": statuses,
        "ready": ready,
        "rss_before_mib": round(before / 1024, 1),
        "peak_mib": round(peak / 1024, 1),
        "growth_mib": round((peak - before) / 1024, 1),
        "sampled_max_growth_mib": round((max(samples) - before) / 1024, 1),
        "accepted_s_max": round(max(took), 2),
        "all_ready_s": round(all_ready, 1),
        "growth_timeline_mib": timeline,
    }


def wait_ready(client: httpx.Client, kb_id: str, ids: list[str], timeout: float = 900) -> int:
    deadline, ready = time.monotonic() + timeout, set()
    while time.monotonic() < deadline and len(ready) < len(ids):
        for doc_id in ids:
            if doc_id not in ready:
                status = client.get(f"/knowledge-bases/{kb_id}/documents/{doc_id}/status").json()["status"]
                if status in ("ready", "error"):
                    ready.add(doc_id)
        time.sleep(0.2)
    return len(ready)


def oversized(base: str, secret: str, total: int, chunked: bool) -> dict[str, Any]:
    """Send a ``total``-byte multipart body as fast as possible; when does the 413 come?"""
    host, port = base.split("//")[1].split("/")[0].split(":")
    kb_id = httpx.get(base + "/knowledge-bases", headers={"Authorization": f"Bearer {secret}"}).json()["data"][0]["id"]
    head = b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="huge.md"\r\n\r\n'
    length = b"" if chunked else f"Content-Length: {total}\r\n".encode()
    request = (
        f"POST /api/knowledge-bases/{kb_id}/documents HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {secret}\r\nContent-Type: multipart/form-data; boundary=b0undary\r\n".encode()
        + (b"Transfer-Encoding: chunked\r\n" if chunked else length)
        + b"\r\n"
    )
    piece = b"a" * (256 * 1024)
    sent = 0
    answer = bytearray()
    got = threading.Event()
    sock = socket.create_connection((host, int(port)))
    sock.settimeout(30)

    def read() -> None:
        try:
            while b"\r\n\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    break
                answer.extend(data)
        except OSError:
            pass
        got.set()

    reader = threading.Thread(target=read, daemon=True)
    started = time.monotonic()
    sock.sendall(request)
    reader.start()
    refused_after = None
    try:
        body = head
        while sent < total and not got.is_set():
            data = body + piece if body else piece
            body = b""
            sock.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n" if chunked else data)
            sent += len(data)
    except OSError:
        pass  # the server closed: the answer, if it came, is read
    got.wait(30)
    refused_after = time.monotonic() - started
    sock.close()
    first = bytes(answer).split(b"\r\n", 1)[0].decode(errors="replace")
    return {
        "body_mb": round(total / 1e6),
        "encoding": "chunked" if chunked else "content-length",
        "answer": first,
        "seconds_to_answer": round(refused_after, 3),
        "client_wrote_mb": round(sent / 1e6, 1),
    }


def report(data: dict[str, Any]) -> str:
    m = data["memory"]
    rows = [
        (
            f"{m['uploads']} x {m['mb_each']:g} MB",
            f"{m['rss_before_mib']}",
            f"{m['peak_mib']}",
            f"{m['growth_mib']}",
            f"{m['accepted_s_max']}",
            f"{m['all_ready_s']}",
        )
    ]
    heads = ["uploads at once", "RSS before MiB", "peak MiB", "growth MiB", "slowest 202 s", "all ready s"]
    out = markdown_table([dict(zip(heads, row, strict=True)) for row in rows], heads)
    heads = ["body", "sent as", "answer", "s to the answer", "client had written MB"]
    out += "\n\n" + markdown_table(
        [
            dict(
                zip(
                    heads,
                    (f"{o['body_mb']} MB", o["encoding"], o["answer"], o["seconds_to_answer"], o["client_wrote_mb"]),
                    strict=True,
                )
            )
            for o in data["oversized"]
        ],
        heads,
        align="llrrr",
    )
    return out


def main() -> None:
    ap = parser(__doc__, quick="4 x 5 MB uploads, 256 MB bodies")
    ap.add_argument("--uploads", type=int, help="uploads at once (default 8; quick 4)")
    ap.add_argument("--mb", type=float, help="MB per upload (default 10; quick 5)")
    ap.add_argument("--body-mb", type=int, help="size of the oversized bodies (default 1000; quick 256)")
    args = ap.parse_args()
    uploads = args.uploads or (4 if args.quick else 8)
    mb = args.mb or (5.0 if args.quick else 10.0)
    body = (args.body_mb or (256 if args.quick else 1000)) * 1_000_000
    with scratch_dir("serve-limits-") as home:
        os.environ.pop("KBDESK_DB", None)
        (home / "config.toml").write_text(f"[storage]\nmax_file_mb = {max(10, int(mb) + 1)}\n")
        proc, base, secret = start(home)
        try:
            data = {
                "command": command_line(),
                "machine": machine_info(),
                "load_average_before": os.getloadavg()[0],
                "memory": memory(proc, base, secret, uploads, mb),
                "oversized": [oversized(base, secret, body, chunked) for chunked in (True, False)],
                "load_average_after": os.getloadavg()[0],
            }
        finally:
            proc.terminate()
            proc.wait(60)
    save_result("serve_limits", data)
    print(report(data))
    print(f"\n{data['command']}  (load average {data['load_average_before']:.1f} before)")


if __name__ == "__main__":
    main()
