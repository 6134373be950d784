"""A scripted OpenAI-compatible chat server on 127.0.0.1, over real HTTP.

    with FakeChat() as server:
        server.reply(tool_calls=[("kb_search", {"query": "backups"})])   # round 1: a tool call
        server.reply(text="Backups run nightly.")                          # round 2: the answer
        ...
        server.chat_requests[1]["messages"][-1]   # what the client sent back

``POST /v1/chat/completions`` answers from the script, one entry per request, in order
(an empty script answers "ok"). Answers stream as server-sent events (``data:`` lines,
``[DONE]``), in chunked transfer encoding, the way OpenAI's API does:

* ``reply(text=..., tool_calls=[(name, args)], pieces=3, delay=0, finish=None, usage=None)``
  — ``args`` is a dict (sent as JSON) or a raw string (to send malformed arguments);
  ``parallel_index_zero=True`` gives every call index 0 (as some servers do);
  ``hold=seconds`` stalls that long after the text, before finishing (stop it mid-answer).
* ``error(status, message, retry_after=None)`` — an error answer, not streamed.
* ``raw(lines)`` — exactly these lines as the event stream (malformed streams).
* ``drop(text)`` — stream ``text`` and hang up without finishing.
* ``whole(text)`` — a non-streamed JSON completion (a server that ignores ``stream``).
* ``slow(text, delay)`` — stream ``text`` word by word, ``delay`` seconds apart.

* ``hang(seconds)`` — read the request and answer nothing (a model reading a long
  prompt); ``headers_then_hang(seconds)`` — send 200 and the stream's headers, then
  nothing. Either ends when the client hangs up (``left`` is then set) or at close.
* ``html()`` — 200 with a web page (a base URL that is not the API).

A non-streamed request with ``max_tokens: 1`` (kbdesk asking how many tokens a prompt
costs) is answered with ``usage.prompt_tokens`` counting the words of the messages the
server's template renders — every role, except ``tool`` when ``renders_tool_role`` is
False (the default for ``strict = "llama-cpp-python"``, whose template drops it) — and
kept in ``probes``, not in ``requests``.

``rejects_tools = True`` answers every request that offers tools with the 400 Ollama
gives for a model without tool support. ``strict = "llama-cpp-python"`` (or
``"llama.cpp"``, ``"openai"``, ``"vllm"``) judges every chat request the way that server
does and answers its refusal (strict_servers.py); with ``n_ctx`` set, a prompt over it
gets that server's overflow answer (llama-cpp-python: 200 and an empty stream). Other
paths answer from ``routes[(method, path)] = (status, body)`` (the context-window
endpoints of each server). ``POST /v1/embeddings`` serves the same deterministic vectors
as ``fake_openai.FakeOpenAI``. Requests are recorded in ``requests`` (path, headers,
parsed body).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import strict_servers
from fake_openai import FakeOpenAI

TOOLS_REJECTED = "registry.ollama.ai/library/tiny:latest does not support tools"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class _Entry:
    kind: str
    options: dict[str, Any] = field(default_factory=dict)


class FakeChat:
    def __init__(self, dimensions: int = 8) -> None:
        self.dimensions = dimensions
        self.requests: list[Recorded] = []
        self.probes: list[Recorded] = []  # one-token, non-streamed requests (how many tokens a prompt costs)
        self.renders_tool_role: bool | None = None  # None: as the strict server does (see renders)
        self.rejects_tools = False
        self.strict: str | None = None
        self.n_ctx: int | None = None
        self.routes: dict[tuple[str, str], tuple[int, Any]] = {}
        self.left = threading.Event()
        self._closing = threading.Event()
        self._script: deque[_Entry] = deque()
        self._lock = threading.Lock()
        self._httpd: _Server | None = None

    # ── lifecycle ────────────────────────────────────────────────────────────────
    def __enter__(self) -> FakeChat:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # ── scripting ────────────────────────────────────────────────────────────────
    def reply(self, text: str = "", tool_calls: list[tuple[str, Any]] | None = None, **options: Any) -> None:
        self._add("reply", text=text, tool_calls=tool_calls or [], **options)

    def error(self, status: int, message: str, retry_after: str | None = None) -> None:
        self._add("error", status=status, message=message, retry_after=retry_after)

    def raw(self, lines: list[str]) -> None:
        self._add("raw", lines=lines)

    def drop(self, text: str) -> None:
        self._add("drop", text=text)

    def whole(self, text: str) -> None:
        self._add("whole", text=text)

    def slow(self, text: str, delay: float) -> None:
        self._add("reply", text=text, tool_calls=[], pieces=len(text.split()), delay=delay)

    def hang(self, seconds: float = 30.0) -> None:
        self._add("hang", seconds=seconds, headers=False)

    def headers_then_hang(self, seconds: float = 30.0) -> None:
        self._add("hang", seconds=seconds, headers=True)

    def html(self) -> None:
        self._add("html")

    def _add(self, kind: str, **options: Any) -> None:
        with self._lock:
            self._script.append(_Entry(kind, options))

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    # ── serving ──────────────────────────────────────────────────────────────────
    def handle(self, handler: _Handler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else None
        probing = isinstance(body, dict) and body.get("stream") is False and body.get("max_tokens") == 1
        with self._lock:
            (self.probes if probing else self.requests).append(
                Recorded(handler.path, {k.lower(): v for k, v in handler.headers.items()}, body)
            )
        if handler.path.endswith("/embeddings"):
            assert isinstance(body, dict), f"an embeddings request without a JSON object: {raw[:80]!r}"
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [
                {"object": "embedding", "index": i, "embedding": FakeOpenAI.vector_for(t, self.dimensions)}
                for i, t in enumerate(inputs)
            ]
            return handler.json(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                },
            )
        if not handler.path.endswith("/chat/completions"):
            return self.route(handler, "POST")
        assert isinstance(body, dict), f"a chat request without a JSON object: {raw[:80]!r}"
        if body.get("stream") is False and body.get("max_tokens") == 1:
            return self._probe(handler, body)
        if self.rejects_tools and body.get("tools"):
            return handler.json(400, {"error": {"message": TOOLS_REJECTED, "type": "api_error"}})
        if self.strict:
            refusal = strict_servers.judge(self.strict, body)
            if refusal is not None:
                return handler.json(*refusal)
            if self.n_ctx is not None and strict_servers.prompt_tokens(body) > self.n_ctx:
                if self.strict == "llama-cpp-python":
                    return self._raw(handler, body, [])
                return handler.json(*strict_servers.llama_cpp_overflow())
        with self._lock:
            entry = self._script.popleft() if self._script else _Entry("reply", {"text": "ok", "tool_calls": []})
        getattr(self, f"_{entry.kind}")(handler, body, **entry.options)

    def renders(self, role: str) -> bool:
        """Whether this server's chat template shows the model a message of ``role``."""
        if role != "tool":
            return True
        if self.renders_tool_role is not None:
            return self.renders_tool_role
        return self.strict != "llama-cpp-python"  # chatml-function-calling renders no tool role

    def _probe(self, handler: _Handler, body: Any) -> None:
        """A one-token, non-streamed answer whose usage counts the words the template renders."""
        counted = sum(
            len(str(m.get("content") or "").split()) + 2 for m in body["messages"] if self.renders(m.get("role", ""))
        )
        handler.json(
            200,
            {
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": counted, "completion_tokens": 1, "total_tokens": counted + 1},
            },
        )

    def route(self, handler: _Handler, method: str) -> None:
        path = handler.path.split("?")[0]
        if method == "GET":
            with self._lock:
                self.requests.append(Recorded(handler.path, {k.lower(): v for k, v in handler.headers.items()}, None))
        status, body = self.routes.get((method, path), (404, {"error": {"message": f"no route {path}"}}))
        handler.json(status, body)

    def _hang(self, handler: _Handler, body: Any, seconds: float, headers: bool) -> None:
        if headers:
            handler.start_stream()
        deadline = time.monotonic() + seconds
        sock = handler.connection
        while time.monotonic() < deadline and not self._closing.is_set():
            readable, _, _ = select.select([sock], [], [], 0.05)
            if readable:
                try:
                    gone = sock.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    self.left.set()
                    break
        handler.close_connection = True

    def _html(self, handler: _Handler, body: Any) -> None:
        page = b"<!DOCTYPE html><html><head><title>Welcome</title></head><body>It works!</body></html>"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(page)))
        handler.end_headers()
        handler.wfile.write(page)

    def _error(self, handler: _Handler, body: Any, status: int, message: str, retry_after: str | None) -> None:
        headers = {"Retry-After": retry_after} if retry_after else {}
        handler.json(status, {"error": {"message": message, "type": "server_error"}}, headers)

    def _whole(self, handler: _Handler, body: Any, text: str) -> None:
        handler.json(
            200,
            {
                "id": "cmpl-1",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            },
        )

    def _raw(self, handler: _Handler, body: Any, lines: list[str]) -> None:
        handler.start_stream()
        for line in lines:
            handler.send_chunk(line + "\n")
        handler.end_stream()

    def _drop(self, handler: _Handler, body: Any, text: str) -> None:
        handler.start_stream()
        handler.send_chunk(_event({"delta": {"role": "assistant", "content": text}}))
        handler.close_connection = True  # no terminating chunk: the client sees the connection drop

    def _reply(
        self,
        handler: _Handler,
        body: Any,
        text: str,
        tool_calls: list[tuple[str, Any]],
        pieces: int = 3,
        delay: float = 0.0,
        finish: str | None = None,
        usage: dict[str, int] | None = None,
        parallel_index_zero: bool = False,
        hold: float = 0.0,
    ) -> None:
        handler.start_stream()
        try:
            handler.send_chunk(_event({"delta": {"role": "assistant", "content": ""}}))
            for piece in _split(text, pieces):
                if delay:
                    time.sleep(delay)
                handler.send_chunk(_event({"delta": {"content": piece}}))
            if hold:  # a model that stalls mid-answer: silence, then the rest (if the client is still there)
                time.sleep(hold)
            for n, (name, args) in enumerate(tool_calls):
                index = 0 if parallel_index_zero else n
                arguments = args if isinstance(args, str) else json.dumps(args)
                handler.send_chunk(
                    _event(
                        {
                            "delta": {
                                "tool_calls": [
                                    {
                                        "index": index,
                                        "id": f"call_{n + 1}",
                                        "type": "function",
                                        "function": {"name": name, "arguments": ""},
                                    }
                                ]
                            }
                        }
                    )
                )
                for fragment in _split(arguments, 3):
                    handler.send_chunk(
                        _event({"delta": {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}})
                    )
            reason = finish or ("tool_calls" if tool_calls else "stop")
            handler.send_chunk(_event({"delta": {}, "finish_reason": reason}, usage))
            handler.send_chunk("data: [DONE]\n\n")
            handler.end_stream()
        except OSError:  # the client hung up (a cancelled turn)
            handler.close_connection = True


def _event(choice: dict[str, Any], usage: dict[str, int] | None = None) -> str:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "finish_reason": None, **choice}],
    }
    if usage:
        chunk["usage"] = usage
    return f"data: {json.dumps(chunk)}\n\n"


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    if pieces > 1 and " " in text and pieces == len(text.split()):
        words = text.split(" ")
        return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeChat

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def do_POST(self) -> None:
        self.server.fake.handle(self)

    def do_GET(self) -> None:
        self.server.fake.route(self, "GET")

    def json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass
