"""Benchmark: ingestion throughput (MB of text per second) against the floor a user would write by hand.

Not part of the test run. Two folders made from the SciFact abstracts (``--scifact DIR``):

* **small** — 5,000 Markdown notes of 1–3 KB (a ``#`` title, one or two abstracts, the
  second under a ``##`` heading), every note distinct;
* **large** — 20 plain-text files of ~1 MB (abstracts joined), every file distinct.

Each is ingested by ``desk.add`` into a keyword-only KB (no embedding model) with the
configured three workers: reading, hashing, the stored copy, extraction, chunking, and
the writes — document rows, statuses, chunks and their FTS5 rows, each document ready
atomically. Side by side in the same run, taking turns (best of ``--rounds``):

* **floor** — what a user would write by hand: read each file, split it with kbdesk's
  chunker (same chunk size and overlap), insert the chunks and their FTS5 rows into one
  SQLite file in one transaction;
* **floor + extractor** — the same, but the text comes through kbdesk's own extractor
  (the Markdown one for the notes), so the gap left is kbdesk's bookkeeping alone;
* **same work by hand** — floor + extractor, plus what kbdesk's ``add`` also does by
  design: a copy of each file written to a folder (``Path.write_bytes``) and the
  keyword index built with kbdesk's tokenizer (Porter stemming, folded diacritics).

The CPU time of the kbdesk run (user + system, in the process and, in brackets, in the
helper process that writes the stored copies) shows when the run is bound by the two
cores rather than by waiting.

Every side writes under the system's temporary folder (``TMPDIR`` moves it). Creating
files costs very different amounts on different file systems: on ext4 without a
journal, each new file's inode is found by passing over every inode freed in the last
minute (or five), so a run that follows mass deletions pays for them. To see kbdesk's
own cost, point ``TMPDIR`` at a file system like most users' (journaled ext4, APFS,
NTFS); a loop-mounted image made with ``mkfs.ext4`` does.

For the kbdesk run it also counts the SQL statements issued (``execute`` and
``executemany`` calls on the store's connections, and rows executed by them) and the
seconds threads spent waiting for the store's write lock, summed over threads.
``--vectors DIMS`` adds a run with an in-process embedder that costs nothing
(precomputed unit vectors), and checks that adding the folder again makes 0 calls.

    .venv/bin/python bench/bench_ingest.py                 # both sets, best of 3
    .venv/bin/python bench/bench_ingest.py --quick         # 1,000 notes and 5 × 1 MB, best of 2
    .venv/bin/python bench/bench_ingest.py --vectors 384   # also with a free 384-d embedder
    .venv/bin/python bench/bench_ingest.py --in-run        # also extracting in the run, not the helper
"""

from __future__ import annotations

import contextlib
import random
import resource
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import scifact
from harness import command_line, machine_info, machine_line, markdown_table, parser
from harness.paths import require_scifact

CHUNK, OVERLAP = 1000, 200


# ── the corpus ─────────────────────────────────────────────────────────────────
def write_notes(folder: Path, count: int) -> int:
    """``count`` Markdown notes of 1–3 KB; their total size in bytes."""
    docs = scifact.abstracts()
    rng = random.Random(16)
    folder.mkdir(parents=True, exist_ok=True)
    size = 0
    for n in range(count):
        first = docs[n % len(docs)]
        parts = [f"# {first['title']} (note {n})\n\n{first['text']}\n"]
        if len(parts[0]) < 1100 or rng.random() < 0.4:
            second = docs[rng.randrange(len(docs))]
            parts.append(f"\n## {second['title']}\n\n{second['text']}\n")
        data = "".join(parts).encode("utf-8")[:3000].decode("utf-8", "ignore").encode("utf-8")  # whole characters
        (folder / f"note-{n:05d}.md").write_bytes(data)
        size += len(data)
    return size


def write_large(folder: Path, count: int, target: int = 1_000_000) -> int:
    """``count`` plain-text files of about ``target`` bytes; their total size in bytes."""
    docs = scifact.abstracts()
    folder.mkdir(parents=True, exist_ok=True)
    size = 0
    at = 0
    for n in range(count):
        pieces: list[str] = []
        length = 0
        while length < target:
            doc = docs[at % len(docs)]
            at += 1
            piece = f"{doc['title']} ({n})\n\n{doc['text']}\n\n"
            pieces.append(piece)
            length += len(piece.encode("utf-8"))
        data = "".join(pieces).encode("utf-8")
        (folder / f"file-{n:02d}.txt").write_bytes(data)
        size += len(data)
    return size


# ── where the runs write ───────────────────────────────────────────────────────
# Every run's files stay until the set is done. Deleting a round's 5,000 stored copies
# right before the next round would make that round's file creations slow on a
# file system without a journal (this machine's ext4): the kernel passes over every
# inode freed in the last one to five minutes before it hands out a new one
# (``recently_deleted`` in fs/ext4/ialloc.c). A user adding a folder has not usually
# just deleted thousands of files, and the floor creates no files at all.
_KEEP: list[Path] = []


@contextlib.contextmanager
def keeping_runs() -> Iterator[Path]:
    """A folder for one set: its runs' folders are made inside and go when it goes."""
    with tempfile.TemporaryDirectory() as tmp:
        _KEEP.append(Path(tmp))
        try:
            yield Path(tmp)
        finally:
            _KEEP.pop()


@contextlib.contextmanager
def workdir() -> Iterator[str]:
    """A fresh folder for one run, removed with the set (see above), or at once outside one."""
    if _KEEP:
        yield tempfile.mkdtemp(dir=_KEEP[-1])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            yield tmp


# ── kbdesk ─────────────────────────────────────────────────────────────────────
class Counting:
    """A connection that counts the statements it is asked to run."""

    def __init__(self, conn: Any, counts: dict[str, int]) -> None:
        self._conn = conn
        self._counts = counts

    def execute(self, sql: str, *args: Any) -> Any:
        self._counts["calls"] += 1
        self._counts["rows"] += 1
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> Any:
        rows = list(rows)
        self._counts["calls"] += 1
        self._counts["rows"] += len(rows)
        return self._conn.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class TimedLock:
    """The store's write lock, timing how long threads wait for it."""

    def __init__(self, lock: Any) -> None:
        self._lock = lock
        self.waited = 0.0
        self._mutex = threading.Lock()

    def __enter__(self) -> Any:
        start = time.perf_counter()
        self._lock.acquire()
        waited = time.perf_counter() - start
        with self._mutex:
            self.waited += waited
        return self

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()


class FreeEmbedder:
    """An in-process provider whose vectors cost nothing (precomputed, reused)."""

    def __init__(self, dims: int) -> None:
        rng = np.random.default_rng(0)
        pool = rng.standard_normal((4096, dims)).astype(np.float32)
        self.pool = (pool / np.linalg.norm(pool, axis=1, keepdims=True)).tolist()
        self.calls = 0

    def embed(self, texts, model, on_input_error="raise"):
        from kbdesk.providers import EmbedResult

        self.calls += 1
        return EmbedResult(vectors=[self.pool[hash(t) % len(self.pool)] for t in texts], calls=1)


def run_kbdesk(
    folder: Path, workers: int, dims: int | None = None, instrument: bool = False, in_run: bool = False
) -> dict[str, Any]:
    """``in_run``: the helper process only writes copies; extraction and chunking are done
    in the run (as before they moved to the helper)."""
    from kbdesk import open_desk
    from kbdesk.ingest.helper import Helper

    with (
        workdir() as home,
        open_desk(home=home) as desk,
        _patched(Helper, "prepare", lambda *_args: None) if in_run else contextlib.nullcontext(),
    ):
        embedder = None
        if dims:
            embedder = FreeEmbedder(dims)
            desk.embedders.register("free", embedder)
            desk.create_kb("bench", model_id="free-model", provider="free", chunk_size=CHUNK, chunk_overlap=OVERLAP)
        else:
            desk.create_kb("bench", chunk_size=CHUNK, chunk_overlap=OVERLAP)
        counts = {"calls": 0, "rows": 0}
        store = desk.store
        lock = None
        if instrument:
            plain = store.connection

            def counted() -> Any:
                conn = plain()
                return conn if isinstance(conn, Counting) else Counting(conn, counts)

            store.connection = counted  # type: ignore[method-assign]
            lock = store._write_lock = TimedLock(store._write_lock)
        before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        report = desk.add("bench", [folder], workers=workers)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = [a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, before, strict=True)]
        assert not report.failed, report.failed[:3]
        out = {
            "seconds": seconds,
            "docs": len(report.added),
            "chunks": desk.kb("bench").chunk_count,
            "statements": counts["calls"],
            "rows": counts["rows"],
            "lock_wait": lock.waited if lock else 0.0,
            "cpu": cpu[0],
            "helper_cpu": cpu[1],
        }
        if embedder is not None:
            calls = embedder.calls
            again = desk.add("bench", [folder], workers=workers)
            out.update(embed_calls=calls, readd_calls=embedder.calls - calls, readd_unchanged=len(again.unchanged))
        return out


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, saved)


# ── the floors ─────────────────────────────────────────────────────────────────
KBDESK_TOKENIZER = "porter unicode61 remove_diacritics 2"  # kbdesk's keyword index (store/sqlite/migrations.py)


def run_floor(folder: Path, extractor: bool, same_work: bool = False) -> dict[str, Any]:
    """Read, (extract,) chunk, insert chunks and their FTS5 rows in one transaction.
    ``same_work``: also write a copy of each file into a folder and index with kbdesk's
    tokenizer (stemming, folded diacritics) — the work kbdesk does, written by hand."""
    from kbdesk.ingest import chunker
    from kbdesk.ingest.extract import extract_bytes

    with workdir() as tmp:
        conn = sqlite3.connect(Path(tmp) / "floor.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, source TEXT, content TEXT)")
        tokenize = f", tokenize='{KBDESK_TOKENIZER}'" if same_work else ""
        conn.execute(
            f"CREATE VIRTUAL TABLE chunks_fts USING fts5(content, content='chunks', content_rowid='id'{tokenize})"
        )
        copies = Path(tmp) / "copies"
        copies.mkdir()
        start = time.perf_counter()
        rows = 0
        conn.execute("BEGIN")
        for n, path in enumerate(sorted(folder.rglob("*.*"))):
            data = path.read_bytes()
            if same_work:
                (copies / f"{n}_{path.name}").write_bytes(data)
            if extractor:
                sections = extract_bytes(data, path.name).sections
                pieces = [c.content for c in chunker.chunk_sections(sections, CHUNK, OVERLAP)]
            else:
                pieces = [c.content for c in chunker.split_text(data.decode("utf-8"), CHUNK, OVERLAP)]
            first = rows + 1
            conn.executemany(
                "INSERT INTO chunks(id, source, content) VALUES (?, ?, ?)",
                [(first + i, str(path), p) for i, p in enumerate(pieces)],
            )
            conn.executemany(
                "INSERT INTO chunks_fts(rowid, content) VALUES (?, ?)", [(first + i, p) for i, p in enumerate(pieces)]
            )
            rows += len(pieces)
        conn.execute("COMMIT")
        seconds = time.perf_counter() - start
        conn.close()
    return {"seconds": seconds, "chunks": rows}


def best_seconds(runs: list[Any], rounds: int) -> list[float]:
    """Each run's best ``seconds`` (what it timed itself) over ``rounds`` turns taken in turn,
    so every side sees the same machine load."""
    best = [float("inf")] * len(runs)
    for _ in range(rounds):
        for k, run in enumerate(runs):
            best[k] = min(best[k], run()["seconds"])
    return best


def main() -> None:
    ap = parser(__doc__, quick="1,000 notes and 5 files of 1 MB, best of 2", scifact=True)
    ap.add_argument("--rounds", type=int, help="turns each side takes (best is kept; default 3, --quick 2)")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--vectors", type=int, metavar="DIMS", help="also ingest with a free DIMS-d embedder")
    ap.add_argument("--only", choices=("small", "large"), help="one set only")
    ap.add_argument(
        "--in-run",
        action="store_true",
        help="also a kbdesk side that extracts and chunks in the run, not in its helper process",
    )
    args = ap.parse_args()
    require_scifact(args.scifact)
    rounds = args.rounds or (2 if args.quick else 3)
    notes, large = (1000, 5) if args.quick else (5000, 20)

    print(f"Machine: {machine_line(machine_info())}; {args.workers} workers; best of {rounds}\n")
    rows = []
    sets = [
        ("small", f"{notes:,} notes of 1–3 KB (.md)", lambda f: write_notes(f, notes)),
        ("large", f"{large} files of ~1 MB (.txt)", lambda f: write_large(f, large)),
    ]
    for key, label, make in sets:
        if args.only and args.only != key:
            continue
        with keeping_runs() as tmp:
            folder = tmp / "corpus"
            mb = make(folder) / 1e6
            counted = run_kbdesk(folder, args.workers, instrument=True)
            sides = [
                lambda folder=folder: run_kbdesk(folder, args.workers),
                lambda folder=folder: run_floor(folder, extractor=False),
                lambda folder=folder: run_floor(folder, extractor=True),
                lambda folder=folder: run_floor(folder, extractor=True, same_work=True),
            ]
            if args.in_run:
                sides.append(lambda folder=folder: run_kbdesk(folder, args.workers, in_run=True))
            ours, floor, floor_x, same, *in_run = best_seconds(sides, rounds)
            files = counted["docs"]
            rows.append(
                {
                    "set": f"{label}, {mb:.1f} MB",
                    "kbdesk MB/s": f"{mb / ours:.1f}",
                    "floor MB/s": f"{mb / floor:.1f}",
                    "kbdesk ÷ floor": f"{floor / ours:.2f}",
                    "floor + extractor MB/s": f"{mb / floor_x:.1f}",
                    "kbdesk ÷ floor + extractor": f"{floor_x / ours:.2f}",
                    "same work by hand MB/s": f"{mb / same:.1f}",
                    "kbdesk ÷ same work": f"{same / ours:.2f}",
                    "kbdesk CPU s (helper)": f"{counted['cpu']:.2f} ({counted['helper_cpu']:.2f})",
                    "statements (rows) per file": f"{counted['statements'] / files:.2f} "
                    f"({counted['rows'] / files:.1f})",
                    "lock wait s": f"{counted['lock_wait']:.2f}",
                    "chunks": counted["chunks"],
                }
            )
            if in_run:
                rows.append(
                    {
                        "set": f"{label}: kbdesk, extraction in the run",
                        "kbdesk MB/s": f"{mb / in_run[0]:.1f}",
                        "kbdesk ÷ floor": f"{floor / in_run[0]:.2f}",
                        "kbdesk ÷ same work": f"{same / in_run[0]:.2f}",
                    }
                )
            print(
                f"  {key}: kbdesk {ours:.2f} s, floor {floor:.2f} s, floor + extractor {floor_x:.2f} s, "
                f"same work by hand {same:.2f} s",
                file=sys.stderr,
                flush=True,
            )
            if args.vectors:
                with_vectors = run_kbdesk(folder, args.workers, dims=args.vectors)
                rows.append(
                    {
                        "set": f"{label}, {args.vectors}-d free embedder",
                        "kbdesk MB/s": f"{mb / with_vectors['seconds']:.1f}",
                        "statements (rows) per file": f"embed calls {with_vectors['embed_calls']}, "
                        f"re-add calls {with_vectors['readd_calls']}",
                        "chunks": with_vectors["chunks"],
                    }
                )
    print(markdown_table(rows))
    print(f"\ncommand: {command_line()}")


if __name__ == "__main__":
    main()
