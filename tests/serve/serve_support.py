"""Servers for the HTTP tests: ``kbdesk serve`` as a real process on a free loopback
port, and the same app in process (Starlette's TestClient runs its startup and
shutdown) for the many small refusals."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

KBDESK = [sys.executable, "-m", "kbdesk.cli.main"]
MARKDOWN = (
    "# Admin guide\n\n## SSO\n\nTo configure SSO, navigate to Settings > Security and paste the identity "
    "provider metadata URL.\n\n## Backups\n\nBackups run nightly at 02:00 and are kept for 30 days.\n"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cli(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    run = subprocess.run([*KBDESK, *args], capture_output=True, text=True, env=env or dict(os.environ), timeout=120)
    if check and run.returncode != 0:
        raise AssertionError(f"kbdesk {' '.join(args)} failed ({run.returncode}): {run.stderr}")
    return run


def make_token(*args: str, env: dict[str, str] | None = None) -> str:
    return json.loads(cli("token", "create", "--json", *args, env=env).stdout)["token"]


class ServeProcess:
    """``kbdesk serve`` in a child process, answering on ``base``."""

    def __init__(
        self, tmp_path: Path, *args: str, serve_args: tuple[str, ...] = (), env: dict[str, str] | None = None
    ) -> None:
        self.port = free_port()
        scheme = "https" if "--ssl-certfile" in serve_args else "http"
        self.base = f"{scheme}://127.0.0.1:{self.port}"
        self.log = tmp_path / f"serve-{self.port}.log"
        self._log = open(self.log, "w")  # noqa: SIM115 - the server's log while it runs; closed by stop()
        self.proc = subprocess.Popen(
            [*KBDESK, *args, "serve", "--port", str(self.port), *serve_args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env or dict(os.environ),
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"kbdesk serve exited: {self.log.read_text()}")
            try:
                httpx.get(self.base + "/api", timeout=1, verify=False)  # only: is it up yet
                return
            except httpx.TransportError:
                time.sleep(0.1)
        self.kill()
        raise AssertionError(f"kbdesk serve did not answer: {self.log.read_text()}")

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base + "/api", headers=headers, timeout=60)

    def stop(self) -> int:
        """Ctrl-C, as a person stops it; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: a crash."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


def wait_ready(client: httpx.Client, kb_id: str, doc_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = client.get(f"/knowledge-bases/{kb_id}/documents/{doc_id}/status").json()
        if status["status"] in ("ready", "error") or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def app_client(desk, permissions: tuple[str, ...] | None = None, user: str = "me"):
    """(TestClient over an app serving ``desk``, the headers of a new token for ``user``
    with ``permissions``: every one by default)."""
    from starlette.testclient import TestClient

    from kbdesk.serve import create_app
    from kbdesk.serve.users import token_user
    from kbdesk.store.tokens import PERMISSIONS, Tokens

    who = token_user(desk, user)
    _token, secret = Tokens(desk.store).create(
        who.user_id, who.username, PERMISSIONS if permissions is None else permissions
    )
    client = TestClient(create_app(desk), base_url="http://127.0.0.1/api", raise_server_exceptions=False)
    return client, {"Authorization": f"Bearer {secret}"}
