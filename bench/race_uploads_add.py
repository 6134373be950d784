#!/usr/bin/env python
"""Uploads racing ``kbdesk add`` of the same names: is there ever a second document of a name?

Run from the repository root::

    .venv/bin/python bench/race_uploads_add.py --rounds 8
    .venv/bin/python bench/race_uploads_add.py --rounds 2 --file-kb 400 --delay 3 --reverse  # 409s

A real ``kbdesk serve`` on loopback and, each round, a fresh KB: ``kbdesk add`` (a child
process) indexes a folder of f000.md…f059.md while 8 client threads upload f000.md…f059.md
(other text) to the same KB over HTTP. Printed per round: the add's exit code, the answers
by status, and the names that ended with more than one document; at the end, the
refusals with their ``Retry-After`` and reason, and how many documents came by upload.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parents[1] / "tests" / "serve"), str(Path(__file__).parents[1] / "tests")]

from serve_support import KBDESK, ServeProcess, make_token  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--file-kb", type=int, default=0, help="pad each file on disk to this many KB (a slower add holds names longer)"
    )
    parser.add_argument("--delay", type=float, default=0.0, help="seconds after the add starts before uploads begin")
    parser.add_argument("--reverse", action="store_true", help="upload f059.md first (the add indexes it last)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kbdesk-race-"))
    os.environ["KBDESK_HOME"] = str(tmp / "home")
    token = make_token("--user", "me")
    server = ServeProcess(tmp)
    folder = tmp / "notes"
    folder.mkdir()
    names = [f"f{i:03d}.md" for i in range(60)]
    totals: collections.Counter[int] = collections.Counter()
    refusals: collections.Counter[tuple[int, str | None, str]] = collections.Counter()
    doubled = 0
    try:
        with server.client(token) as api:
            for rnd in range(args.rounds):
                kb = api.post("/knowledge-bases", json={"name": f"race{rnd}"}).json()
                for i, name in enumerate(names):
                    pad = "".join(f"Line {n} of note {i}, the heron wades.\n" for n in range(args.file_kb * 28))
                    (folder / name).write_text(f"# Note {i}\n\nRound {rnd}, from disk: heron {i}.\n\n{pad}")
                add = subprocess.Popen(
                    [*KBDESK, "add", f"race{rnd}", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
                )

                def upload(i: int, kb_id: str = kb["id"], rnd: int = rnd) -> tuple[int, str | None, str]:
                    with server.client(token) as own:
                        body = f"# Note {i}\n\nRound {rnd}, uploaded: egret {i}.\n".encode()
                        answer = own.post(f"/knowledge-bases/{kb_id}/documents", files={"file": (names[i], body)})
                        return answer.status_code, answer.headers.get("retry-after"), answer.text

                time.sleep(args.delay)
                with ThreadPoolExecutor(8) as pool:
                    answers = list(pool.map(upload, range(59, -1, -1) if args.reverse else range(60)))
                add.communicate(timeout=600)
                codes = collections.Counter(code for code, _, _ in answers)
                totals.update(codes)
                refusals.update(a for a in answers if a[0] != 202)
                docs = api.get(f"/knowledge-bases/{kb['id']}/documents", params={"limit": 200}).json()["data"]
                counts = collections.Counter(d["filename"] for d in docs)
                twice = sorted(n for n, c in counts.items() if c > 1)
                doubled += len(twice)
                print(
                    f"round {rnd}: add exit {add.returncode}, answers {dict(codes)}, documents {len(docs)}, "
                    f"names with two documents: {twice or 'none'}",
                    flush=True,
                )
    finally:
        server.stop()
    print(f"answers in all: {dict(totals)}; names with two documents: {doubled}")
    for (code, retry, text), n in refusals.most_common():
        print(f"  {n} x {code} Retry-After={retry}: {text[:160]}")


if __name__ == "__main__":
    main()
