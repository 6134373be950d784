"""Search over HTTP while the embedding provider is down or hangs: keyword results with a
notice, the provider not asked again for every search, and unrelated requests answered
meanwhile (searches never hold the threads other requests need)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from serve_support import ServeProcess, app_client, cli

from ingest_support import configure_provider, write_files
from kbdesk import open_desk
from kbdesk.providers.breaker import forget_breakers

FILES = {
    "backups.md": "# Backups\n\nBackups run nightly at 02:00 and are kept for thirty days.\n",
    "restore.md": "# Restore\n\nTo restore a backup, run the restore command with the snapshot name.\n",
}


@pytest.fixture(autouse=True)
def _fresh_breakers():
    forget_breakers()
    yield
    forget_breakers()


def _vector_kb(desk, server, tmp_path) -> str:
    configure_provider(server)
    desk.reload_config()
    kb = desk.create_kb("Docs", model_id="text-embedding-3-small", provider="fake")
    assert not desk.add("Docs", [write_files(tmp_path / "docs", FILES)]).failed
    return kb.id


def test_a_down_embedder_costs_a_notice_not_the_search(engine_desk, fake_openai, tmp_path):
    kb_id = _vector_kb(engine_desk, fake_openai, tmp_path)
    user = engine_desk.store.identity.username if engine_desk.store.kind == "postgres" else "me"
    client, auth = app_client(engine_desk, user=user)
    fake_openai.fail_next("503", times=100)
    before = len(fake_openai.embedding_requests)
    with client:
        for query in ("how long are backups kept", "restore a backup", "nightly backups"):
            r = client.post(f"/knowledge-bases/{kb_id}/search", json={"query": query}, headers=auth)
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["mode"] == "keyword" and body["data"]
            assert body["keyword_fallback"] == ["Docs"]
            assert body["notice"] == "keyword search only in Docs: the query could not be embedded"
            assert any("could not be embedded" in n for n in body["notes"])
        assert len(fake_openai.embedding_requests) - before == 1  # the breaker spared the other two
        r = client.post(f"/knowledge-bases/{kb_id}/search", json={"query": "backups", "mode": "vector"}, headers=auth)
        assert r.status_code == 502 and "not asked again" in r.json()["message"]
        assert client.get("/knowledge-bases", headers=auth).status_code == 200


@pytest.mark.slow
def test_twenty_searches_during_an_outage_and_an_unrelated_request(tmp_path, kbdesk_home, fake_openai):
    with open_desk() as desk:
        kb_id = _vector_kb(desk, fake_openai, tmp_path)
    fake_openai.stop()
    secret = json.loads(cli("token", "create", "--json", "--user", "me").stdout)["token"]
    server = ServeProcess(tmp_path)
    try:
        results: list[tuple[int, dict]] = []
        lock = threading.Lock()
        go = threading.Event()

        def search() -> None:
            with server.client(secret) as c:
                go.wait()
                r = c.post(f"/knowledge-bases/{kb_id}/search", json={"query": "how long are backups kept"})
                with lock:
                    results.append((r.status_code, r.json()))

        threads = [threading.Thread(target=search) for _ in range(20)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        go.set()
        with server.client(secret) as c:
            listed = c.get("/knowledge-bases")
        for t in threads:
            t.join(60)
        assert listed.status_code == 200 and listed.json()["total"] == 1
        assert len(results) == 20
        for status, body in results:
            assert status == 200 and body["keyword_fallback"] == ["Docs"]
            assert body["data"][0]["source"] == "backups.md"
    finally:
        server.stop()


@pytest.mark.slow
def test_a_search_waiting_for_a_hanging_provider_does_not_hold_up_other_requests(tmp_path, kbdesk_home, fake_openai):
    with open_desk() as desk:
        kb_id = _vector_kb(desk, fake_openai, tmp_path)
    port = int(fake_openai.base_url.rsplit(":", 1)[1].split("/")[0])
    fake_openai.stop()
    hanging = socket.socket()  # accepts the connection, never answers
    hanging.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    hanging.bind(("127.0.0.1", port))
    hanging.listen(64)
    secret = json.loads(cli("token", "create", "--json", "--user", "me").stdout)["token"]
    server = ServeProcess(tmp_path)
    try:
        finished: dict[str, float] = {}

        def search(n: int) -> None:
            with server.client(secret) as c:
                r = c.post(f"/knowledge-bases/{kb_id}/search", json={"query": "backups"})
                assert r.status_code == 200 and r.json()["keyword_fallback"] == ["Docs"]
                finished[f"search {n}"] = time.monotonic()

        threads = [threading.Thread(target=search, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.3)  # the searches are waiting for the provider now
        with server.client(secret) as c:
            assert c.get("/knowledge-bases").status_code == 200
            assert c.get(f"/knowledge-bases/{kb_id}").status_code == 200
        answered = time.monotonic()
        for t in threads:
            t.join(60)
        assert len(finished) == 8
        assert answered < min(finished.values())  # the unrelated requests did not wait for the searches
    finally:
        server.stop()
        hanging.close()
