"""Federated ranking against one KB, per search mode: is a search split across a local KB
and a ``kbdesk serve`` KB ranked as one KB holding both sides would rank it?

    .venv/bin/python bench/bench_federated_rank.py                         # SciFact: keyword and the defaults
    .venv/bin/python bench/bench_federated_rank.py --corpus pgdocs         # Debian's PostgreSQL docs, keyword
    .venv/bin/python bench/bench_federated_rank.py --corpus pgdocs --modes keyword,auto   # + hybrid (embeds)
    .venv/bin/python bench/bench_federated_rank.py --corpus pgdocs --modes auto --pages 300   # every 4th page
    .venv/bin/python bench/bench_federated_rank.py --modes auto --separate   # one collection per file

By default ``whole`` and both halves share the desk's file, and SQLite's FTS5 index (so its
BM25 statistics) spans the file: ``--separate`` searches copies of ``whole`` and ``half-a``,
each alone in a file, as a desk holding only its half would.

SciFact (train, judged queries) reuses bench/eval_beir.py's KB as ``whole`` and adds
``half-a`` (local) and ``half-b`` (exported to the server's file) beside it, their vectors
from the desk's embedding cache (all-MiniLM-L6-v2). ``pgdocs`` is
the HTML of Debian's ``postgresql-doc-15`` (``apt-get install postgresql-doc-15``), pages of
even and odd position on either side, 30 questions a DBA asks; its KBs are keyword-only
unless a mode needs vectors. Each query is searched (limit 10) on ``whole`` and on
``half-a`` + ``team:half-b``, merged by score (keyword scores rescaled to one collection),
and — for comparison — the same legs merged by rank and, in hybrid mode, by score with each
side's own BM25 (the merge before keyword scores were rescaled there too). Reported per mode: nDCG@10 against
the judgements (SciFact), against ``whole``'s own top 10 (graded by its rank, both
corpora), the overlap of the top 10 chunks with ``whole``'s, the worst query, and the p50
latency of ``whole``, of ``half-a`` alone and of the federated search.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_federated import DEFAULT_DATA, fold, start_server  # noqa: E402
from eval_beir import model_path  # noqa: E402

PGDOCS = Path("/usr/share/doc/postgresql-doc-15/html")
PG_QUERIES = [
    "vacuum freeze transaction id wraparound",
    "create index concurrently",
    "streaming replication standby setup",
    "pg_hba.conf authentication methods",
    "autovacuum tuning thresholds",
    "explain analyze buffers output",
    "logical replication publication subscription",
    "point in time recovery archive_command",
    "row level security policy",
    "partitioned table attach partition",
    "json operators jsonb containment",
    "full text search tsvector ranking",
    "checkpoint_timeout max_wal_size",
    "shared_buffers work_mem memory settings",
    "deadlock detection lock timeout",
    "serializable isolation level anomalies",
    "foreign data wrapper postgres_fdw",
    "window functions over partition by",
    "common table expressions recursive query",
    "pg_dump custom format restore",
    "gin index gist index differences",
    "toast storage large values",
    "hot updates fillfactor",
    "sequence nextval setval",
    "trigger function plpgsql",
    "listen notify asynchronous notification",
    "collation icu locale",
    "statistics targets extended statistics",
    "connection pooling max_connections",
    "upgrade pg_upgrade link mode",
]


def chunk_key(result) -> tuple[str, str]:
    return (result.source, result.content[:200])


def ref_ndcg(got: list, ref: list, k: int = 10) -> float:
    """nDCG@k of ``got`` when ``ref``'s items are the relevant ones, graded by their rank."""
    gain = {key: k - i for i, key in enumerate(ref[:k])}
    dcg = sum(gain.get(key, 0) / math.log2(i + 2) for i, key in enumerate(got[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gain.values(), reverse=True)))
    return dcg / ideal if ideal else 1.0


def pgdocs_kbs(
    desk, results: Path, model: str | None, vectors: bool, source: Path = PGDOCS, pages: int | None = None
) -> None:
    """``whole``, ``half-a`` and ``half-b`` of the files in ``source`` (pages of even and odd
    position); ``pages``: about that many of them, every k-th in name order."""
    corpus = results / "corpus"
    if not corpus.exists():
        corpus.mkdir(parents=True)
        found = sorted(p for p in source.iterdir() if p.suffix in (".html", ".txt"))
        for page in found[:: max(1, len(found) // pages) if pages else 1][:pages]:
            shutil.copy(page, corpus / page.name)
    pages = sorted(p.name for p in corpus.iterdir())
    existing = {kb.name for kb in desk.list_kbs()}
    for name in ("whole", "half-a", "half-b"):
        if name not in existing:
            if vectors:
                desk.create_kb(name, model_id=model, provider="here")
            else:
                desk.create_kb(name, keyword_only=True)
    assert not desk.add("whole", [corpus]).failed
    for name, part in (("half-a", pages[0::2]), ("half-b", pages[1::2])):
        folder = results / f"corpus-{name}"
        folder.mkdir(exist_ok=True)
        for page in part:
            if not (folder / page).exists():
                shutil.copy(corpus / page, folder / page)
        assert not desk.add(name, [folder]).failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=["scifact", "scifact-keyword", "pgdocs"], default="scifact")
    parser.add_argument("--modes", default="keyword,auto", help="comma-separated: keyword, auto (the defaults)")
    parser.add_argument("--queries", type=int, default=300, help="SciFact: the first N judged queries")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--pages", type=int, help="pgdocs: about this many pages, every k-th (default: all)")
    parser.add_argument(
        "--separate",
        action="store_true",
        help="whole and half-a each in a file of its own (copies), so each BM25 counts its own collection",
    )
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]

    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import file_name, load_dataset, write_corpus
    from kbdesk.evaluation.metrics import ndcg_at
    from kbdesk.paths import get_paths
    from kbdesk.remote import ranking
    from kbdesk.transfer import export_kb

    model = model_path("all-MiniLM-L6-v2")
    whole = "eval" if args.corpus == "scifact" else "whole"  # the KB holding both sides
    vectors = args.corpus == "scifact" or any(m != "keyword" for m in modes)
    if args.corpus == "scifact":
        # bench/eval_beir.py's KB (the whole corpus through desk.add, all-MiniLM-L6-v2) is
        # ``whole``; the halves are added to the same desk, their vectors from its embedding cache
        results = ROOT / "bench" / "results" / "eval-scifact-all-MiniLM-L6-v2"
        if not (results / "kb.db").exists():
            raise SystemExit("run bench/eval_beir.py first: it builds the SciFact KB")
        dataset = load_dataset(DEFAULT_DATA, "train")
        judged = [q for q in dataset.qrels if q in dataset.queries][: args.queries]
        queries = {q: dataset.queries[q] for q in judged}
        names = {file_name(doc_id): doc_id for doc_id in dataset.corpus}
        local_home, server_home = results / "home", results / "server-home"
        server_home.mkdir(exist_ok=True)
        server_db = server_home / "team.db"
        desk_db = results / "kb.db"
        config = parse_config({"providers": {"here": {"kind": "local"}}})
        started = time.perf_counter()
        with open_desk(desk_db, home=local_home, config=config) as desk:
            existing = {kb.name for kb in desk.list_kbs()}
            for name in ("half-a", "half-b"):
                if name not in existing:
                    desk.create_kb(name, model_id=model, provider="here")
            order = sorted(dataset.corpus)
            for name, ids in (("half-a", order[0::2]), ("half-b", order[1::2])):
                folder = results / f"corpus-{name}"
                folder.mkdir(exist_ok=True)
                for doc_id in ids:
                    target = folder / file_name(doc_id)
                    if not target.exists():
                        target.write_bytes((results / "corpus" / file_name(doc_id)).read_bytes())
                assert not desk.add(name, [folder]).failed
            if not server_db.exists():
                export_kb(desk, "half-b", server_db)
        print(f"halves built in {time.perf_counter() - started:.0f} s")
    else:
        pages = f"-{args.pages}" if args.pages and args.corpus == "pgdocs" else ""
        results = ROOT / "bench" / "results" / f"federated-{args.corpus}-{'vectors' if vectors else 'keyword'}{pages}"
        results.mkdir(parents=True, exist_ok=True)
        queries = {str(i): q for i, q in enumerate(PG_QUERIES)}
        names = {}
        source = PGDOCS
        if args.corpus == "scifact-keyword":  # SciFact in keyword-only KBs: no model needed
            dataset = load_dataset(DEFAULT_DATA, "train")
            judged = [q for q in dataset.qrels if q in dataset.queries][: args.queries]
            queries = {q: dataset.queries[q] for q in judged}
            names = {file_name(doc_id): doc_id for doc_id in dataset.corpus}
            source = results / "source"
            if not source.exists():
                write_corpus(dataset, source)
        local_home, server_home = results / "desk-home", results / "server-home"
        server_home.mkdir(exist_ok=True)
        server_db = server_home / "team.db"
        desk_db = results / "desk.db"
        config = parse_config({"providers": {"here": {"kind": "local"}}})
        started = time.perf_counter()
        with open_desk(desk_db, home=local_home, config=config) as desk:
            pgdocs_kbs(desk, results, model, vectors, source, args.pages if args.corpus == "pgdocs" else None)
            if not server_db.exists():
                export_kb(desk, "half-b", server_db)
        print(f"built in {time.perf_counter() - started:.0f} s")
    if args.separate:  # copies: whole alone in one file, half-a alone in another
        separate = {name: results / f"alone-{name}.db" for name in (whole, "half-a")}
        with open_desk(desk_db, home=local_home, config=parse_config({"providers": {"here": {"kind": "local"}}})) as d:
            for name, path in separate.items():
                if not path.exists():
                    export_kb(d, name, path)
    config_file = get_paths(server_home).config_file
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text('[providers.here]\nkind = "local"\n')
    env = {**os.environ, "KBDESK_HOME": str(server_home), "HF_HUB_OFFLINE": "1"}
    server, url, token = start_server(server_db, server_home, env)
    os.environ["BENCH_TEAM_TOKEN"] = token
    config = parse_config(
        {
            "providers": {"here": {"kind": "local"}},
            "remotes": {"team": {"url": url, "token_env": "BENCH_TEAM_TOKEN", "budget": 30.0}},
        }
    )
    desk = open_desk(separate["half-a"] if args.separate else desk_db, home=local_home, config=config)
    whole_desk = open_desk(separate[whole], home=local_home, config=config) if args.separate else desk
    rows = []
    try:
        kbs = {kb.name: kb for kb in desk.list_kbs()} | {whole: whole_desk.kb(whole)}
        of = {"whole": whole_desk, "half-a": desk, "federated": desk}
        for mode in modes:
            searches = {"whole": [whole], "half-a": ["half-a"], "federated": ["half-a", "team:half-b"]}
            first = next(iter(queries.values()))
            for _ in range(60):  # the server loads its embedding model on its first search
                if all(r.state == "searched" for r in desk.search(searches["federated"], first, mode=mode).remotes):
                    break
                time.sleep(5)
            for q in list(queries.values())[:3]:  # warm up
                for label, refs in searches.items():
                    of[label].search(refs, q, limit=args.limit, mode=mode)
            # the same legs merged the other ways: by rank; and (hybrid) each side's own BM25, as before
            others = ["by rank"] + (["own BM25"] if mode != "keyword" else [])
            times: dict[str, list[float]] = {k: [] for k in searches}
            ref_scores: dict[str, list[float]] = {k: [] for k in ["federated", *others]}
            overlaps: dict[str, list[float]] = {k: [] for k in ["federated", *others]}
            judged_ndcg: dict[str, list[float]] = {k: [] for k in ["whole", "federated", *others]}
            rules: dict[str, int] = {}
            for qid, query in queries.items():
                got = {}
                for label, refs in searches.items():
                    t0 = time.perf_counter()
                    response = of[label].search(refs, query, limit=args.limit, mode=mode)
                    times[label].append(time.perf_counter() - t0)
                    got[label] = response.results
                    if label == "federated":
                        rules[response.merged_by] = rules.get(response.merged_by, 0) + 1
                        assert all(s.state == "searched" for s in response.remotes), response.remotes
                for label in others:
                    name = "comparable" if label == "by rank" else "one_scale"
                    original = getattr(ranking, name)
                    setattr(ranking, name, (lambda _sides: False) if label == "by rank" else (lambda _sides: None))
                    try:
                        got[label] = desk.search(searches["federated"], query, limit=args.limit, mode=mode).results
                    finally:
                        setattr(ranking, name, original)
                ref = [chunk_key(r) for r in got["whole"]]
                for label in ("federated", *others):
                    keys = [chunk_key(r) for r in got[label]]
                    ref_scores[label].append(ref_ndcg(keys, ref))
                    overlaps[label].append(len(set(keys[:10]) & set(ref[:10])) / max(1, min(10, len(ref))))
                if names:
                    for label in judged_ndcg:
                        judged_ndcg[label].append(ndcg_at(fold(got[label], names), dataset.qrels[qid]))
            p50 = {label: statistics.median(t) * 1000 for label, t in times.items()}
            merges = {
                "federated": "by score (rescaled keyword)",
                "by rank": "by rank (RRF)",
                "own BM25": "by score, each side's own BM25 (before)",
            }
            for label in ("federated", *others):
                row = {
                    "corpus": args.corpus,
                    "mode": mode,
                    "merge": merges[label],
                    "rules": rules if label != "by rank" else {"rank": len(queries)},
                    "ndcg_vs_whole": statistics.mean(ref_scores[label]),
                    "worst_vs_whole": min(ref_scores[label]),
                    "overlap@10": statistics.mean(overlaps[label]),
                }
                if names:
                    row["ndcg@10 judged"] = statistics.mean(judged_ndcg[label])
                    row["whole ndcg@10 judged"] = statistics.mean(judged_ndcg["whole"])
                if label == "federated":
                    row["p50 ms whole / half-a / federated"] = tuple(round(p50[k], 1) for k in searches)
                rows.append(row)
        print(
            f"corpus {args.corpus}: {len(queries)} queries; whole {kbs[whole].chunk_count} chunks, half-a "
            f"{kbs['half-a'].chunk_count} (local), half-b on kbdesk serve (loopback); limit {args.limit}; "
            f"python {platform.python_version()}, {os.cpu_count()} cores\n"
        )
        for row in rows:
            print(row)
        print(f"\ncommand: .venv/bin/python bench/bench_federated_rank.py {' '.join(sys.argv[1:])}".rstrip())
    finally:
        desk.close()
        if whole_desk is not desk:
            whole_desk.close()
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
