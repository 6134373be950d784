"""Stress: SIGKILLs along an update chain, with edits, breakages and a second runner.

Not part of the test run. A folder of text files is indexed into a KB with an
embedding provider (the project's OpenAI-compatible fake on loopback, each call
delayed a little so kills land mid-work). Then, round after round until ``--kills``
runners have been SIGKILLed while still working: some files are edited (a new
version), broken (binary bytes), deleted or created; one ``kbdesk add --sync`` starts
(and sometimes a second one at once), and after a random moment every runner is
killed with SIGKILL. After each kill, what must hold at ANY moment is
checked; at the end every file gets a last good version, one ``kbdesk add --sync``
runs to completion, and the final state is checked strictly:

* ``PRAGMA integrity_check``, foreign keys, the FTS5 index's own integrity check;
* one row per source path, and exactly the files on disk;
* every ready row's stored copy hashes to its content hash, and every chunk's text is
  in the current file's text (at the end: in the file on disk);
* every vector is the provider's vector for that chunk's text;
* no orphan chunks, no orphan stored copies, KB stats equal to the rows.

    .venv/bin/python bench/stress_integrity.py                 # until 40 kills land mid-work
    .venv/bin/python bench/stress_integrity.py --kills 10      # quicker
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness import ROOT, kbdesk_cli, parser, save_result

sys.path.insert(0, str(ROOT / "tests"))

from fake_openai import FakeOpenAI

WORDS = [
    "harbour",
    "lighthouse",
    "keeper",
    "tide",
    "anchor",
    "rope",
    "crane",
    "pier",
    "ferry",
    "gull",
    "beacon",
    "reef",
    "chart",
    "compass",
    "signal",
    "lantern",
    "storm",
    "sail",
    "hull",
    "deck",
    "mast",
    "keel",
    "buoy",
    "channel",
]


def text_for(name: str, version: int, rng: random.Random) -> str:
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 160))) for _ in range(rng.randint(1, 4))]
    return f"{name} version {version}\n\n" + "\n\n".join(paragraphs) + "\n"


def start_add(env: dict[str, str], folder: Path) -> subprocess.Popen:
    return subprocess.Popen(
        kbdesk_cli("add", "docs", folder, "--sync", "-q", "--json"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def check(db: Path, files_dir: Path, folder: Path, dims: int, *, final: bool) -> dict[str, int]:
    """Invariants; returns figures. Raises AssertionError with what broke."""
    import sqlean as sqlite3  # the same SQLite kbdesk uses here (FTS5, extensions)

    conn = sqlite3.connect(str(db))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "integrity_check"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == [], "foreign keys"
        conn.execute("INSERT INTO kb_chunks_fts(kb_chunks_fts) VALUES ('integrity-check')")
        docs = conn.execute(
            "SELECT id, source_path, status, content_hash, indexed_hash, storage_key, chunk_count FROM kb_documents"
        ).fetchall()
        paths = [d[1] for d in docs]
        assert len(paths) == len(set(paths)), f"{len(paths) - len(set(paths))} paths with two rows"
        orphans = conn.execute(
            "SELECT count(*) FROM kb_chunks c WHERE NOT EXISTS "
            "(SELECT 1 FROM kb_documents d WHERE d.id = c.document_id)"
        ).fetchone()[0]
        assert orphans == 0, f"{orphans} orphan chunks"
        stale = 0
        for doc_id, source, status, content_hash, indexed_hash, key, count in docs:
            chunks = conn.execute(
                "SELECT content, embedding FROM kb_chunks WHERE document_id = ?", (doc_id,)
            ).fetchall()
            assert len(chunks) == count, f"{source}: chunk_count {count}, {len(chunks)} chunks"
            if status == "ready":
                assert indexed_hash == content_hash, f"{source}: ready but indexed from another version"
                data = (files_dir / key).read_bytes()
                assert hashlib.sha256(data).hexdigest() == content_hash, f"{source}: stored copy is not its version"
                text = data.decode("utf-8")
                if final:
                    assert data == Path(source).read_bytes(), f"{source}: not the file on disk"
                for content, blob in chunks:
                    assert content in text, f"{source}: a chunk's text is not in its version"
                    want = np.asarray(FakeOpenAI.vector_for(content, dims), dtype=np.float32)
                    got = np.frombuffer(blob, dtype=np.float32)
                    assert np.allclose(got, want / np.linalg.norm(want), atol=1e-5), f"{source}: wrong vector"
            elif chunks:
                stale += 1
                assert indexed_hash is not None, f"{source}: chunks without an indexed version"
        kb_dir = next((files_dir / "kb").iterdir(), None)
        owned = {Path(d[5]).name for d in docs}
        on_disk = {p.name for p in kb_dir.iterdir()} if kb_dir else set()
        strays = {n for n in on_disk - owned if not n.startswith(".tmp-")}
        if final:
            assert on_disk - owned == set(), f"{len(on_disk - owned)} stored copies without a document"
        stats = conn.execute("SELECT document_count, chunk_count FROM knowledge_bases").fetchone()
        real = (len(docs), conn.execute("SELECT count(*) FROM kb_chunks").fetchone()[0])
        assert tuple(stats) == real, f"KB stats {tuple(stats)} vs rows {real}"
        if final:
            present = {str(p) for p in folder.rglob("*") if p.is_file()}
            assert set(paths) == present, "rows and files on disk differ"
            assert {d[2] for d in docs} == {"ready"}, "not every document is ready"
        statuses: dict[str, int] = {}
        for d in docs:
            statuses[d[2]] = statuses.get(d[2], 0) + 1
        return {"rows": len(docs), "stale_rows": stale, "stray_temp_or_unowned": len(strays), **statuses}
    finally:
        conn.close()


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--kills", type=int, default=40, help="SIGKILLs that must land mid-work")
    ap.add_argument("--max-rounds", type=int, default=200)
    ap.add_argument("--files", type=int, default=120)
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="kbdesk-stress-"))
    home, folder = work / "home", work / "corpus"
    folder.mkdir()
    env = {**os.environ, "KBDESK_HOME": str(home)}
    versions: dict[str, int] = {}
    for i in range(args.files):
        name = f"dir{i % 6}/file{i:03d}.txt"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text_for(name, 0, rng))
        versions[name] = 0
    server = FakeOpenAI(dimensions=16).start()
    os.environ["KBDESK_HOME"] = str(home)
    from kbdesk import open_desk
    from kbdesk.paths import get_paths

    config = get_paths().config_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[providers.fake]\nkind = "custom"\nbase_url = "{server.base_url}"\nmax_retries = 3\n')
    with open_desk() as desk:
        desk.create_kb("docs", model_id="text-embedding-3-small", provider="fake")
        db, files_dir = desk.db_path, desk.files_dir
    started = time.monotonic()
    subprocess.run(kbdesk_cli("add", "docs", folder, "-q"), env=env, check=True, stdout=subprocess.DEVNULL)
    server.fail_next("stall", times=1_000_000, seconds=0.4)  # every call takes a moment: kills land mid-work
    figures = {
        "rounds": 0,
        "kills": 0,
        "finished_before_kill": 0,
        "two_runners": 0,
        "edits": 0,
        "broken": 0,
        "deleted": 0,
        "created": 0,
        "checks": 0,
        "max_stale_rows": 0,
    }
    round_ = 0
    while figures["kills"] < args.kills and round_ < args.max_rounds:
        round_ += 1
        figures["rounds"] = round_
        gone = 0
        for name in rng.sample(sorted(versions), k=max(1, len(versions) // 5)):
            path = folder / name
            roll = rng.random()
            if roll < 0.1:
                path.unlink()
                del versions[name]
                figures["deleted"] += 1
                gone += 1
            elif roll < 0.2:
                path.write_bytes(b"\x00\xff\x00binary" * rng.randint(5, 50))
                versions[name] += 1
                figures["broken"] += 1
            else:
                versions[name] += 1
                path.write_text(text_for(name, versions[name], rng))
                figures["edits"] += 1
        for extra in range(gone + (rng.random() < 0.3)):  # the folder keeps its size, more or less
            name = f"dir{round_ % 6}/new{round_:03d}-{extra}.txt"
            (folder / name).write_text(text_for(name, 0, rng))
            versions[name] = 0
            figures["created"] += 1
        runners = [start_add(env, folder)]
        if rng.random() < 0.3:
            runners.append(start_add(env, folder))
            figures["two_runners"] += 1
        time.sleep(rng.uniform(0.3, 1.6))
        for runner in runners:
            if runner.poll() is None:
                figures["kills"] += 1
            else:
                figures["finished_before_kill"] += 1
            runner.send_signal(signal.SIGKILL)
            runner.wait(timeout=30)
        seen = check(db, files_dir, folder, server.dimensions, final=False)
        figures["checks"] += 1
        figures["max_stale_rows"] = max(figures["max_stale_rows"], seen["stale_rows"])
        print(f"round {round_:2d}: {seen}", flush=True)
    for name in sorted(versions):  # every file gets a last good version
        versions[name] += 1
        (folder / name).write_text(text_for(name, versions[name], rng))
    server._script.clear()
    final = subprocess.run(
        kbdesk_cli("add", "docs", folder, "--sync", "--json"), env=env, capture_output=True, text=True, timeout=600
    )
    assert final.returncode == 0, final.stderr
    figures["final"] = check(db, files_dir, folder, server.dimensions, final=True)
    figures["files_at_end"] = len(versions)
    figures["seconds"] = round(time.monotonic() - started, 1)
    server.stop()
    save_result("stress-integrity", figures)
    print(json.dumps(figures, indent=2))
    print("all invariants held")
    shutil.rmtree(work, ignore_errors=True)  # kept when a check fails, to look into


if __name__ == "__main__":
    main()
