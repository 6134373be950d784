"""What a misbehaving remote costs a federated search, and whether threads pile up.

    .venv/bin/python bench/bench_remote_deadlines.py          # 100 searches per remote kind

Three loopback servers stand in for a team server: one that sends its headers and then
one byte every 0.5 s (``trickling``), one that accepts the connection and never answers
(``silent``), and one that answers at once with a KB list whose ``document_count`` is not
a number (``malformed``). For each, a desk with a local KB and that remote (budget 2 s,
the default) runs 100 searches of both in one process: the first search's time, the p50
and worst of the other 99, the local results kept, and the process's thread count before
and after. ``--breaker-off`` forgets the breaker before every search, so each one reaches
the remote (the deadline alone bounds it).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path


def serve(handle) -> tuple[socket.socket, str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_run, args=(handle, conn), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}/api"


def _run(handle, conn: socket.socket) -> None:
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            piece = conn.recv(65536)
            if not piece:
                return
            data += piece
        handle(conn)
    except OSError:
        pass
    finally:
        conn.close()


def trickling(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n")
    while True:
        conn.sendall(b" ")
        time.sleep(0.5)


def silent(conn: socket.socket) -> None:
    while conn.recv(1):
        pass


def malformed(conn: socket.socket) -> None:
    body = json.dumps({"data": [{"id": "kb-1", "name": "Docs", "document_count": "lots"}]}).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--breaker-off", action="store_true")
    args = parser.parse_args()
    from kbdesk import open_desk
    from kbdesk.config import Config
    from kbdesk.providers.breaker import forget_breakers
    from kbdesk.remote.settings import RemoteSettings

    for name, handle in (("trickling", trickling), ("silent", silent), ("malformed", malformed)):
        forget_breakers()
        listener, url = serve(handle)
        home = Path(tempfile.mkdtemp(prefix="kbdesk-remote-"))
        desk = open_desk(home=home, config=Config(remotes={"team": RemoteSettings(url=url, token="kbd_x")}))
        kb = desk.create_kb("Notes")
        desk.add_document(kb.id, "notes.md", ["Backups run on Fridays to the external disk."])
        desk.search(["Notes"], "backups")  # the local side warmed up
        before = threading.active_count()
        times, kept = [], 0
        for _ in range(args.searches):
            if args.breaker_off:
                forget_breakers()
            started = time.perf_counter()
            response = desk.search(["Notes", "team:*"], "backups")
            times.append(time.perf_counter() - started)
            kept += [r.source for r in response.results] == ["notes.md"]
        time.sleep(0.6)  # let the last call's thread end
        after = threading.active_count()
        rest = sorted(times[1:])
        print(
            f"{name}: first {times[0]:.2f} s, then p50 {statistics.median(rest) * 1000:.1f} ms, worst "
            f"{rest[-1] * 1000:.0f} ms; local results kept {kept}/{len(times)}; threads {before} -> {after}; "
            f"state {response.remotes[0].state}: {response.remotes[0].reason}"
        )
        desk.close()
        listener.close()
    print(f"\ncommand: .venv/bin/python bench/bench_remote_deadlines.py {' '.join(sys.argv[1:])}".rstrip())


if __name__ == "__main__":
    main()
