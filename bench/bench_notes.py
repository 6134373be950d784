"""Note keyword search on both engines: SQLite's FTS5 index against Postgres's BM25 over
a generated tsvector with the statistics of the user's notes counted at query time.

Postgres counts N, the document frequencies and the lengths of one user's notes for
every query (notes are few and a per-user statistics table would cost every write), so
its time grows with the number of notes: this measures how far. Both engines get the
same notes (prose of a Zipf-distributed vocabulary) and the same queries (2-3 words),
interleaved, ``note_keyword_candidates(query, 50)`` (the pool a note search takes); it
also checks that both return the same top 10 with the same scores.

    .venv/bin/python bench/bench_notes.py [--quick]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from harness import (
    command_line,
    machine_info,
    machine_line,
    markdown_table,
    paired_ratios,
    parser,
    results_dir,
    save_result,
    scratch_dir,
    summary,
    timed_rounds,
)

VOCAB = 4000


def words(rng: random.Random, n: int) -> list[str]:
    return [f"w{min(int(rng.paretovariate(1.1)), VOCAB)}" for _ in range(n)]


def fill(store, rng: random.Random, count: int) -> None:
    for _i in range(count):
        store.create_note(" ".join(words(rng, rng.randint(20, 120))), title=" ".join(words(rng, 3)))


def main() -> int:
    args = parser(__doc__, quick="1,000 notes and 100 queries only").parse_args()
    from kbdesk import open_desk
    from kbdesk.evaluation.engines import embedded_postgres

    sizes, queries = ([1000], 100) if args.quick else ([1000, 10000], 300)
    rows, out = [], {"machine": machine_line(machine_info()), "command": command_line(), "sizes": {}}
    for size in sizes:
        with scratch_dir("notes-") as tmp, embedded_postgres(results_dir() / "pg-data", f"kbdesk_notes_{size}") as uri:
            engines = {"sqlite": open_desk(Path(tmp) / "notes.db"), "postgres": open_desk(uri)}
            try:
                for name, desk in engines.items():
                    if desk.store.note_count() != size:
                        if desk.store.note_count():
                            raise SystemExit(f"the {name} database holds other notes: remove it first")
                        fill(desk.store, random.Random(7), size)
                rng = random.Random(11)
                texts = [" ".join(words(rng, rng.randint(2, 3))) for _ in range(queries + 10)]
                methods = {
                    name: (lambda i, s=desk.store, texts=texts: s.note_keyword_candidates(texts[i], 50))
                    for name, desk in engines.items()
                }
                times, outputs = timed_rounds(methods, queries, warmup=10)
                same = 0
                for a, b in zip(outputs["sqlite"], outputs["postgres"], strict=True):
                    contents = [
                        {n.id: n.content for n in d.store.notes_by_id([i for i, _ in o[:10]]).values()}
                        for d, o in ((engines["sqlite"], a), (engines["postgres"], b))
                    ]
                    ranked = [[(c[i], round(s, 6)) for i, s in o[:10]] for c, o in zip(contents, (a, b), strict=True)]
                    same += ranked[0] == ranked[1]
            finally:
                for desk in engines.values():
                    desk.close()
        stats = {name: summary(ts) for name, ts in times.items()}
        ratio = paired_ratios(times, "sqlite")["postgres"]
        out["sizes"][size] = {"stats": stats, "postgres_vs_sqlite": ratio, "same_top10": same / queries}
        rows.append(
            {
                "notes": f"{size:,}",
                "SQLite FTS5 p50 / p95 ms": f"{stats['sqlite']['p50']:.2f} / {stats['sqlite']['p95']:.2f}",
                "Postgres p50 / p95 ms": f"{stats['postgres']['p50']:.2f} / {stats['postgres']['p95']:.2f}",
                "Postgres ÷ SQLite": f"{ratio:.1f}×",
                "same top 10 and scores": f"{same}/{queries}",
            }
        )
    save_result("bench_notes", out)
    print(markdown_table(rows))
    print(f"\n{out['machine']}\n{out['command']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
