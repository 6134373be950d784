"""A fake OpenAI-compatible server on 127.0.0.1, for tests over real HTTP.

    with FakeOpenAI(dimensions=8) as server:
        provider = OpenAICompatProvider("fake", ProviderSettings(base_url=server.base_url))
        server.fail_next("429", retry_after="3")   # the next request gets a 429
        ...
        server.requests[-1].headers["authorization"]

It serves ``POST /v1/embeddings`` with deterministic unit vectors (the same text always
gets the same vector, see :meth:`FakeOpenAI.vector_for`) and ``GET /v1/models``.
``fail_next(kind, times=1, **options)`` scripts the answer to the next requests:

* ``"429"``: 429 with ``Retry-After`` (option ``retry_after``, default "1"; None: no header)
* ``"500"``, ``"502"``, ``"503"``: that server error (option ``message``)
* ``"401"``, ``"403"``: auth refused; the body echoes the key it was sent
* ``"404"``: ``model_not_found``
* ``"413"``: payload too large
* ``"400"``: a plain bad request (option ``message``)
* ``"context"``: 400 "maximum context length" error
* ``"wrong_dimension"``: every vector one number short
* ``"wrong_count"``: one vector fewer than inputs; ``"extra_vector"``: one more
* ``"nan"``, ``"inf"``, ``"zero"``: the vector at ``index`` (default 0) has a NaN / an
  infinity / is all zeros
* ``"non_numeric"``: the vector at ``index`` has a null among its numbers
* ``"short_vector"``: the vector at ``index`` is one number short (the others are not)
* ``"nested"``: one vector per token (llama.cpp without pooling)
* ``"base64"``: vectors as base64 text
* ``"malformed_json"``: 200 with a body that is not JSON
* ``"html"``: 200 with a web page (``text/html``)
* ``"echo_headers"``: an error (option ``status``, default 400) whose message repeats
  every request header, ``Authorization`` first (servers and proxies that do this exist);
  option ``text=True`` sends it as plain text instead of a JSON error
* ``"not_object"``: 200 with a JSON array
* ``"error_200"``: 200 with an ``{"error": ...}`` object (option ``message``)
* ``"stall"``: wait ``seconds`` (default 2) before answering normally
* ``"drop"``: close the connection without answering
* ``"ok"``: answer normally (to script a failure for a later request)

Standing limits: ``max_batch_inputs`` / ``max_batch_chars`` answer 413 when a batch is
bigger; ``max_input_chars`` answers 400 (context length) when any input is longer;
``api_key`` makes every request without that bearer key a 401; ``known_models`` makes
any other model a 404; ``reverse_data`` returns the ``data`` list in reverse order;
``poison`` maps a marker to a failure kind (or a ``(kind, options)`` pair): every
embeddings request with an input that contains the marker gets that failure (at that
input's index), however it is batched.
Built on the standard library and numpy (pytest only for the fixture); nothing from kbdesk.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest

DEFAULT_MODELS: list[dict[str, Any]] = [
    {"id": "text-embedding-3-small", "object": "model", "owned_by": "openai"},
    {"id": "nomic-embed-text", "object": "model", "type": "embeddings"},
    {"id": "llama3.2", "object": "model", "type": "llm"},
    {"id": "gpt-4o-mini", "object": "model", "model_type": "chat"},
    {"id": "mystery", "object": "model"},
]


FAILURE_KINDS = frozenset(
    {
        "429",
        "500",
        "502",
        "503",
        "401",
        "403",
        "404",
        "413",
        "400",
        "context",
        "wrong_dimension",
        "wrong_count",
        "nan",
        "zero",
        "nested",
        "base64",
        "malformed_json",
        "not_object",
        "error_200",
        "stall",
        "drop",
        "ok",
        "extra_vector",
        "inf",
        "non_numeric",
        "short_vector",
        "html",
        "echo_headers",
    }
)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body, or None."""

    @property
    def inputs(self) -> list[str]:
        value = self.body.get("input") if isinstance(self.body, dict) else None
        return [value] if isinstance(value, str) else list(value or [])


@dataclass
class _Failure:
    kind: str
    options: dict[str, Any] = field(default_factory=dict)


class FakeOpenAI:
    def __init__(
        self, *, dimensions: int = 8, models: list[dict[str, Any]] | None = None, api_key: str | None = None
    ) -> None:
        self.dimensions = dimensions
        self.models = list(DEFAULT_MODELS if models is None else models)
        self.api_key = api_key
        self.known_models: set[str] | None = None
        self.max_batch_inputs: int | None = None
        self.max_batch_chars: int | None = None
        self.max_input_chars: int | None = None
        self.reverse_data = False
        self.poison: dict[str, str | tuple[str, dict[str, Any]]] = {}
        self.requests: list[RecordedRequest] = []
        self._script: deque[_Failure] = deque()
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ── lifecycle ────────────────────────────────────────────────────────────────
    def start(self) -> FakeOpenAI:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            assert self._thread is not None  # started with the server
            self._thread.join(timeout=5)
            self._httpd = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # ── scripting and inspection ─────────────────────────────────────────────────
    def fail_next(self, kind: str, times: int = 1, **options: Any) -> None:
        """Answer the next ``times`` requests (any path) with failure ``kind``."""
        if kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {kind!r}")
        with self._lock:
            self._script.extend(_Failure(kind, options) for _ in range(times))

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    @staticmethod
    def vector_for(text: str, dimensions: int) -> list[float]:
        """The unit vector this server gives ``text``: seeded by its hash, so stable."""
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(dimensions)
        return (vector / np.linalg.norm(vector)).tolist()

    # ── serving ──────────────────────────────────────────────────────────────────
    def _handle(self, handler: _Handler, method: str) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = urlsplit(handler.path).path
        with self._lock:
            self.requests.append(
                RecordedRequest(method, path, {k.lower(): v for k, v in handler.headers.items()}, body)
            )
            failure = self._script.popleft() if self._script else None
        sent_key = (handler.headers.get("Authorization") or "").removeprefix("Bearer ")
        kind = failure.kind if failure else ""
        options = failure.options if failure else {}
        if not kind and self.poison and path == "/v1/embeddings" and isinstance(body, dict):
            kind, options = self._poisoned(RecordedRequest(method, path, {}, body).inputs)
        if kind == "drop":
            handler.close_connection = True
            return
        if kind == "stall":
            time.sleep(options.get("seconds", 2.0))
        if kind == "echo_headers":
            pairs = sorted(handler.headers.items(), key=lambda item: item[0].lower() != "authorization")
            said = "bad request, headers were " + "; ".join(f"{name}: {value}" for name, value in pairs)
            if options.get("text"):
                return handler.answer(options.get("status", 400), said.encode(), {"Content-Type": "text/plain"})
            return handler.answer(options.get("status", 400), _error(said, "bad"))
        answer = _canned(kind, options, sent_key)
        if answer is not None:
            return handler.answer(*answer)
        if self.api_key is not None and sent_key != self.api_key:
            return handler.answer(401, _error(f"Incorrect API key provided: {sent_key}", "invalid_api_key"))
        if method == "GET" and path == "/v1/models":
            return handler.answer(200, {"object": "list", "data": self.models})
        if method == "POST" and path == "/v1/embeddings":
            return handler.answer(*self._embeddings(body, kind, options))
        return handler.answer(404, _error(f"no route {method} {path}", "not_found"))

    def _poisoned(self, inputs: list[str]) -> tuple[str, dict[str, Any]]:
        for index, text in enumerate(inputs):
            for marker, rule in self.poison.items():
                if marker in text:
                    kind, options = (rule, {}) if isinstance(rule, str) else rule
                    return kind, {**options, "index": index}
        return "", {}

    def _embeddings(self, body: Any, kind: str, options: dict[str, Any]) -> tuple[int, Any]:
        if not isinstance(body, dict) or "input" not in body or "model" not in body:
            return 400, _error("'input' and 'model' are required", "invalid_request_error")
        inputs = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        model = body["model"]
        if self.known_models is not None and model not in self.known_models:
            return 404, _error(f"The model `{model}` does not exist", "model_not_found")
        if self.max_batch_inputs is not None and len(inputs) > self.max_batch_inputs:
            return 413, _error(f"batch of {len(inputs)} inputs is too large", "payload_too_large")
        if self.max_batch_chars is not None and sum(map(len, inputs)) > self.max_batch_chars:
            return 413, _error("request body too large", "payload_too_large")
        if self.max_input_chars is not None and any(len(t) > self.max_input_chars for t in inputs):
            return 400, _error(_CONTEXT_MESSAGE, "context_length_exceeded")
        dims = body.get("dimensions") or self.dimensions
        vectors: list[Any] = [self.vector_for(text, dims) for text in inputs]  # the faults put non-floats in
        index = options.get("index", 0)
        if kind == "wrong_dimension":
            vectors = [v[:-1] for v in vectors]
        elif kind == "nan":
            vectors[index][0] = float("nan")
        elif kind == "inf":
            vectors[index][1] = float("inf")
        elif kind == "non_numeric":
            vectors[index][2] = None
        elif kind == "short_vector":
            vectors[index] = vectors[index][:-1]
        elif kind == "zero":
            vectors[index] = [0.0] * dims
        elif kind == "nested":
            vectors = [[v, v, v] for v in vectors]
        data: list[dict[str, Any]] = [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
        ]
        if kind == "base64":
            for item in data:
                item["embedding"] = base64.b64encode(np.asarray(item["embedding"], "<f4").tobytes()).decode()
        if kind == "wrong_count":
            data = data[:-1]
        elif kind == "extra_vector":
            data.append({"object": "embedding", "index": len(data), "embedding": vectors[0]})
        if self.reverse_data:
            data.reverse()
        tokens = sum(max(1, len(t) // 4) for t in inputs)
        return 200, {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


_CONTEXT_MESSAGE = (
    "This model's maximum context length is 8192 tokens, however you requested more. "
    "Please reduce the length of the input."
)


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def _canned(kind: str, options: dict[str, Any], sent_key: str) -> tuple[int, Any, dict[str, str]] | None:
    """The fixed answer for a scripted failure, or None when the normal route answers."""
    if kind == "429":
        retry_after = options.get("retry_after", "1")
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return 429, _error("Rate limit reached, slow down", "rate_limit_exceeded"), headers
    if kind in ("500", "502", "503"):
        message = options.get("message", "The server had an error while processing your request")
        return int(kind), _error(message, "server_error"), {}
    if kind in ("401", "403"):
        return int(kind), _error(f"Incorrect API key provided: {sent_key}", "invalid_api_key"), {}
    if kind == "404":
        return 404, _error("The model does not exist or you do not have access to it", "model_not_found"), {}
    if kind == "413":
        return 413, _error("payload too large", "payload_too_large"), {}
    if kind == "400":
        return 400, _error(options.get("message", "bad request"), "invalid_request_error"), {}
    if kind == "context":
        return 400, _error(_CONTEXT_MESSAGE, "context_length_exceeded"), {}
    if kind == "malformed_json":
        return 200, b'{"data": [ {"embedding": [0.1, ', {}
    if kind == "not_object":
        return 200, [[0.1, 0.2]], {}
    if kind == "html":
        return 200, b"<!doctype html><html><body><h1>Welcome</h1></body></html>", {"Content-Type": "text/html"}
    if kind == "error_200":
        return 200, {"error": {"message": options.get("message", "something went wrong")}}, {}
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a stalled handler must not hold up stop()
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out and hang up are part of the tests


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall
    server: _Server

    def do_GET(self) -> None:
        self.server.fake._handle(self, "GET")

    def do_POST(self) -> None:
        self.server.fake._handle(self, "POST")

    def answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = dict(headers or {})
        try:
            self.send_response(status)
            self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True  # the client gave up (a stall test)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def fake_openai():
    """A started :class:`FakeOpenAI`, stopped after the test (``pytest_plugins = ["fake_openai"]``)."""
    with FakeOpenAI() as server:
        yield server
