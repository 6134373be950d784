"""Benchmark: ingestion throughput (MB of text per second) with an embedder that costs nothing.

Not part of the test run. The corpus is the SciFact abstracts (``--scifact DIR``), each
written as one .txt file (title, blank line, text), repeated ``--copies`` times with a
copy number so that every file is distinct. The embedder is registered in-process and
hands out precomputed random unit vectors, so what is measured is kbdesk itself:
reading, hashing, extraction, chunking, the embedding cache look-up, and the one
transaction per document that stores chunks, FTS5 rows and vectors.

For comparison, the same run times the floor a user would write by hand: read each
file, split it with the same chunker, and insert chunks and vectors into one SQLite
table in one transaction (no keyword index, no per-document atomicity, no cache).

Then the same folder is added again: the number of embedding calls must be 0.

    .venv/bin/python bench/bench_ingest.py            # both dimensions, 2 copies (~16 MB)
    .venv/bin/python bench/bench_ingest.py --quick    # 384 only, 1 copy
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import scifact
from harness import command_line, machine_info, machine_line, markdown_table, parser, timed
from harness.paths import require_scifact


class FreeEmbedder:
    """An in-process provider whose vectors cost nothing (precomputed, reused)."""

    def __init__(self, dims: int) -> None:
        rng = np.random.default_rng(0)
        pool = rng.standard_normal((4096, dims)).astype(np.float32)
        self.pool = (pool / np.linalg.norm(pool, axis=1, keepdims=True)).tolist()
        self.calls = 0
        self.inputs = 0

    def embed(self, texts, model, on_input_error="raise"):
        from kbdesk.providers import EmbedResult

        self.calls += 1
        self.inputs += len(texts)
        vectors = [self.pool[hash(t) % len(self.pool)] for t in texts]
        return EmbedResult(vectors=vectors, calls=1)


def write_corpus(folder: Path, copies: int, per_file: int = 1) -> tuple[int, int]:
    """The abstracts as .txt files: one abstract per file, or ``per_file`` joined."""
    files = 0
    size = 0
    docs = scifact.abstracts()
    for copy in range(copies):
        sub = folder / f"copy{copy}"
        sub.mkdir(parents=True, exist_ok=True)
        for start in range(0, len(docs), per_file):
            group = docs[start:start + per_file]
            text = "\n\n".join(f"{d['title']}\n\n{d['text']}" for d in group) + f"\n\n(copy {copy})\n"
            data = text.encode("utf-8")
            (sub / f"{group[0]['_id']}.txt").write_bytes(data)
            files += 1
            size += len(data)
    return files, size


def run_kbdesk(folder: Path, dims: int, workers: int) -> dict:
    from kbdesk import open_desk

    with tempfile.TemporaryDirectory() as home:
        with open_desk(home=home) as desk:
            embedder = FreeEmbedder(dims)
            desk.embedders.register("free", embedder)
            desk.create_kb("bench", model_id="free-model", provider="free")
            seconds, report = timed(lambda: desk.add("bench", [folder], workers=workers))
            assert not report.failed, report.failed[:3]
            calls_first = embedder.calls
            readd_seconds, again = timed(lambda: desk.add("bench", [folder], workers=workers))
            return {"seconds": seconds, "chunks": desk.kb("bench").chunk_count, "docs": len(report.added),
                    "embed_calls": calls_first, "readd_calls": embedder.calls - calls_first,
                    "readd_unchanged": len(again.unchanged), "readd_seconds": readd_seconds}


def run_floor(folder: Path, dims: int) -> dict:
    """Read, chunk, insert rows with vectors in one transaction: no FTS, no atomicity per file."""
    import sqlite3

    from kbdesk.ingest.chunker import split_text

    embedder = FreeEmbedder(dims)
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "floor.db")
        conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, source TEXT, content TEXT, embedding BLOB)")
        start = time.perf_counter()
        rows = 0
        with conn:
            for path in sorted(folder.rglob("*.txt")):
                text = path.read_text(encoding="utf-8")
                pieces = [c.content for c in split_text(text, 1000, 200)]
                vectors = embedder.embed(pieces, "m").vectors
                conn.executemany("INSERT INTO chunks(source, content, embedding) VALUES (?, ?, ?)",
                                 [(str(path), p, np.asarray(v, dtype=np.float32).tobytes())
                                  for p, v in zip(pieces, vectors)])
                rows += len(pieces)
        seconds = time.perf_counter() - start
        conn.close()
    return {"seconds": seconds, "chunks": rows}


def main() -> None:
    ap = parser(__doc__, quick="384 dimensions only, one copy", scifact=True)
    ap.add_argument("--copies", type=int, default=2)
    ap.add_argument("--workers", type=int, default=3)
    args = ap.parse_args()
    require_scifact(args.scifact)
    copies = 1 if args.quick else args.copies
    dims_list = [384] if args.quick else [384, 1536]

    print(f"Machine: {machine_line(machine_info())}; {args.workers} workers\n")
    rows = []
    for shape, per_file in (("large (~650 abstracts, ~1 MB each)", 650), ("small (one abstract, ~1.5 KB each)", 1)):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "corpus"
            files, size = write_corpus(folder, copies, per_file)
            mb = size / 1e6
            for dims in dims_list:
                ours = run_kbdesk(folder, dims, args.workers)
                floor = run_floor(folder, dims)
                rows.append({"files": f"{files} {shape}, {mb:.1f} MB", "dims": dims,
                             "kbdesk MB/s": f"{mb / ours['seconds']:.1f}",
                             "hand-written floor MB/s": f"{mb / floor['seconds']:.1f}",
                             "kbdesk / floor": f"{floor['seconds'] / ours['seconds']:.2f}", "chunks": ours["chunks"],
                             "embed calls": ours["embed_calls"], "re-add calls": ours["readd_calls"],
                             "re-add s": f"{ours['readd_seconds']:.2f}"})
                print(f"  {shape}, {dims} dims: {ours['seconds']:.1f} s", file=sys.stderr, flush=True)
    print(markdown_table(rows))
    print(f"\ncommand: {command_line()}")


if __name__ == "__main__":
    main()
