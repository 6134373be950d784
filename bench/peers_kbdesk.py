"""kbdesk's side of ``bench/bench_peers.py``: a worker in a fresh interpreter of the harness's
Python, kept open so the harness can interleave its requests with haiku.rag's.

    .venv/bin/python bench/peers_kbdesk.py ARGS.json      # then JSON requests on stdin

ARGS: ``base_url`` (the OpenAI-compatible embeddings endpoint), ``scratch`` (a folder),
``limit``. Requests and answers, one JSON object per line (as ``bench/peers_haiku.py``):
``ingest`` (a block of abstracts, written as one .txt file each into a folder of their own
and added with ``desk.add``) → seconds; ``search`` (``mode``, ``queries``) → the ranked
document ids and the monotonic start and end of every query; ``info`` → chunk count;
``quit``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    from kbdesk import open_desk
    from kbdesk.config import parse_config
    from kbdesk.evaluation.beir import Dataset, write_corpus

    args = json.loads(Path(sys.argv[1]).read_text())
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything printed goes to stderr, the answers alone to stdout
    sys.stdout = sys.stderr
    root = Path(args["scratch"])
    # a shared 2-core machine can take minutes over one batch: no retries of a slow answer
    config = parse_config(
        {
            "providers": {
                "mini": {"kind": "custom", "base_url": args["base_url"], "timeout": 900.0, "retry_budget": 1800.0}
            }
        }
    )
    desk = open_desk(root / "kb.db", home=root / "home", config=config)
    desk.create_kb("peers", model_id="all-MiniLM-L6-v2", provider="mini")
    names: dict[str, str] = {}
    blocks = 0
    try:
        for line in sys.stdin:
            request = json.loads(line)
            op = request["op"]
            if op == "quit":
                break
            if op == "ingest":
                docs = request["docs"]
                dataset = Dataset({d["_id"]: {"title": d["title"], "text": d["text"]} for d in docs}, {}, {})
                folder = root / "corpus" / f"block{blocks:03d}"
                blocks += 1
                names.update(write_corpus(dataset, folder))
                start = time.perf_counter()
                report = desk.add("peers", [folder])
                seconds = time.perf_counter() - start
                assert not report.failed, report.failed[:3]
                answer = {"seconds": seconds}
            elif op == "search":
                runs, spans = {}, []
                for qid, text in request["queries"]:
                    start = time.monotonic()
                    results = desk.search(
                        ["peers"], text, limit=args["limit"], threshold=-1.0, mode=request["mode"]
                    ).results
                    spans.append((start, time.monotonic()))
                    found = (names.get(Path(r.source).name) for r in results)
                    runs[qid] = list(dict.fromkeys(d for d in found if d))
                answer = {"runs": runs, "spans": spans}
            elif op == "info":
                answer = {"chunks": desk.kb("peers").chunk_count}
            out.write(json.dumps(answer) + "\n")
            out.flush()
    finally:
        desk.close()


if __name__ == "__main__":
    main()
