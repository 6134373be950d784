"""haiku.rag's side of ``bench/bench_peers.py``: run by the peer's own interpreter (its own
venv, Python >= 3.12), so it imports nothing from kbdesk or ``bench/harness``.

    HAIKU_VENV/bin/python bench/peers_haiku.py ARGS.json OUT.json

ARGS: ``corpus`` (a JSONL file of ``_id``, ``title``, ``text``), ``queries`` (id → text),
``base_url`` (the OpenAI-compatible embeddings endpoint), ``tokenizer`` (a local model
folder for the chunker's tokenizer), ``data_dir`` (scratch), ``limit``, ``warmup``.
OUT: ingest seconds, chunk count, the ranked document ids and the seconds of every
query in each mode (``hybrid``, ``fts``), and the package version.
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


async def run(args: dict) -> dict:
    from haiku.rag.client import HaikuRAG

    docs = [json.loads(line) for line in Path(args["corpus"]).read_text(encoding="utf-8").splitlines() if line]
    db = Path(args["data_dir"]) / "peers.lancedb"
    out: dict = {"version": version("haiku.rag-slim"), "documents": len(docs)}
    async with HaikuRAG(db, config=config(args), create=True) as client:
        start = time.perf_counter()
        ids = []
        for doc in docs:  # as a user's script adds texts: one call per document
            text = f"{doc['title']}\n\n{doc['text']}".strip() if doc["title"] else doc["text"].strip()
            ids.append((await client.create_document(text, uri=doc["_id"])).id)
        out["ingest_s"] = time.perf_counter() - start
        out["chunks"] = sum([await client.chunk_repository.count_by_document_id(i) for i in ids])
        queries = list(args["queries"].items())
        for mode in ("hybrid", "fts"):
            for _, text in queries[: args["warmup"]]:
                await client.search(text, limit=args["limit"], search_type=mode, include_images=False)
            runs, times = {}, []
            for qid, text in queries:
                start = time.perf_counter()
                results = await client.search(text, limit=args["limit"], search_type=mode, include_images=False)
                times.append(time.perf_counter() - start)
                ranking: list[str] = []
                for result in results:
                    if result.document_uri not in ranking:
                        ranking.append(result.document_uri)
                runs[qid] = ranking
            out[mode] = {"runs": runs, "times": times}
    return out


def main() -> None:
    args_path, out_path = sys.argv[1:3]
    args = json.loads(Path(args_path).read_text())
    result = asyncio.run(run(args))
    Path(out_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
