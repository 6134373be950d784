"""``kbdesk serve`` stops on SIGTERM or SIGINT within a couple of seconds whatever a
request is doing — here an upload whose client sends its body a byte at a time (the
server gave such requests 30 s before): it keeps answering others while the upload
trickles, and once asked to stop it exits cleanly instead of waiting for the client."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time

import httpx
import pytest
from serve_support import ServeProcess, make_token

pytestmark = pytest.mark.slow


def test_a_stop_does_not_wait_for_a_client_that_trickles_its_upload(tmp_path, kbdesk_home):
    sig = signal.SIGTERM  # SIGINT takes the same path (serve_support stops every server with it)
    token = make_token("--user", "me")
    server = ServeProcess(tmp_path)
    stop = threading.Event()
    try:
        with server.client(token) as api:
            kb = api.post("/knowledge-bases", json={"name": "notes"}).json()

            def trickle():
                head = b'--b\r\ncontent-disposition: form-data; name="file"; filename="a.md"\r\n\r\n'
                yield head
                while not stop.is_set():
                    yield b"x"
                    time.sleep(0.1)

            def upload():
                own = httpx.Client(base_url=server.base + "/api", timeout=60)
                with own, contextlib.suppress(httpx.HTTPError):  # the server went away mid-upload: expected
                    own.post(
                        f"/knowledge-bases/{kb['id']}/documents",
                        content=trickle(),
                        headers={
                            "Authorization": f"Bearer {token}",
                            "content-type": "multipart/form-data; boundary=b",
                        },
                    )

            uploading = threading.Thread(target=upload, daemon=True)
            uploading.start()
            time.sleep(0.5)  # the upload is being read
            assert api.get("/me").status_code == 200  # others are answered meanwhile
        server.proc.send_signal(sig)
        try:
            code = server.proc.wait(20)  # a couple of seconds; 20 only guards against a hang
        except subprocess.TimeoutExpired:
            pytest.fail("kbdesk serve was still running 20 s after " + sig.name)
        assert code in (0, -signal.SIGTERM)  # uvicorn raises a SIGTERM again once it has stopped cleanly
        assert "Traceback" not in server.log.read_text(), server.log.read_text()[-3000:]
    finally:
        stop.set()
        server.kill()
