"""haiku.rag's side of ``bench/bench_peers.py``: a worker run by the peer's own interpreter
(its own venv, Python >= 3.12), so it imports nothing from kbdesk or ``bench/harness``.

    HAIKU_VENV/bin/python bench/peers_haiku.py ARGS.json     # then JSON requests on stdin

ARGS: ``base_url`` (the OpenAI-compatible embeddings endpoint), ``tokenizer`` (a local
model folder for the chunker's tokenizer), ``data_dir`` (scratch), ``limit``. Then one JSON
request per line on stdin, one JSON answer per line on stdout (the protocol of
``bench/peers_kbdesk.py``): ``{"op": "ingest", "docs": [{_id, title, text}, ...]}`` →
seconds; ``{"op": "search", "mode": "hybrid" | "keyword", "queries": [[id, text], ...]}``
→ the ranked document ids of each query and its start and end on the monotonic clock
(the harness subtracts the embedding server's time inside each span); ``{"op": "info"}``
→ chunk count and version; ``{"op": "quit"}``. Anything the library prints goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LOGFIRE_IGNORE_NO_CONFIG", "1")

MODES = {"hybrid": "hybrid", "keyword": "fts"}


def config(args: dict):
    from haiku.rag.config.models import AppConfig

    return AppConfig.model_validate(
        {
            "storage": {"data_dir": args["data_dir"]},
            "embeddings": {
                "model": {
                    "provider": "openai",
                    "name": "all-MiniLM-L6-v2",
                    "vector_dim": 384,
                    "base_url": args["base_url"],
                    "api_key": "unused",
                }
            },
            "processing": {"chunking_tokenizer": args["tokenizer"]},
        }
    )


def _version() -> str:
    for name in ("haiku.rag-slim", "haiku.rag"):
        try:
            return version(name)
        except Exception:  # noqa: BLE001 - the other distribution name
            continue
    return "?"


async def serve(args: dict, answer) -> None:
    from haiku.rag.client import HaikuRAG

    db = Path(args["data_dir"]) / "peers.lancedb"
    ids: list = []
    async with HaikuRAG(db, config=config(args), create=True) as client:
        for line in sys.stdin:
            request = json.loads(line)
            op = request["op"]
            if op == "quit":
                break
            if op == "ingest":
                start = time.perf_counter()
                for doc in request["docs"]:  # as a user's script adds texts: one call per document
                    text = f"{doc['title']}\n\n{doc['text']}".strip() if doc["title"] else doc["text"].strip()
                    ids.append((await client.create_document(text, uri=doc["_id"])).id)
                answer({"seconds": time.perf_counter() - start})
            elif op == "search":
                mode = MODES[request["mode"]]
                runs, spans = {}, []
                for qid, text in request["queries"]:
                    start = time.monotonic()
                    results = await client.search(text, limit=args["limit"], search_type=mode, include_images=False)
                    spans.append((start, time.monotonic()))
                    runs[qid] = list(dict.fromkeys(r.document_uri for r in results))
                answer({"runs": runs, "spans": spans})
            elif op == "info":
                chunks = sum([await client.chunk_repository.count_by_document_id(i) for i in ids])
                answer({"chunks": chunks, "version": _version()})


def main() -> None:
    args = json.loads(Path(sys.argv[1]).read_text())
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the library's own prints go to stderr, the answers alone to stdout
    sys.stdout = sys.stderr

    def answer(data: dict) -> None:
        out.write(json.dumps(data) + "\n")
        out.flush()

    asyncio.run(serve(args, answer))


if __name__ == "__main__":
    main()
