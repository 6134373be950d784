"""``kbdesk serve`` as a user runs it: a real process on loopback, driven over HTTP."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from serve_support import MARKDOWN, ServeProcess, cli, make_token, wait_ready

from ingest_support import configure_provider


def test_a_fresh_home_creates_uploads_polls_and_finds_a_document(tmp_path, kbdesk_home):
    token = make_token("--user", "me")
    server = ServeProcess(tmp_path)
    try:
        with server.client(token) as api, server.client() as anonymous:
            refused = anonymous.get("/knowledge-bases")
            assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert api.get("/knowledge-bases").json() == {"data": [], "total": 0}

            created = api.post("/knowledge-bases", json={"name": "Product Docs", "description": "Internal docs"})
            assert created.status_code == 201
            kb = created.json()
            assert kb["name"] == "Product Docs" and kb["scope"] == "personal" and kb["document_count"] == 0
            assert "discoverable" not in kb

            upload = api.post(
                f"/knowledge-bases/{kb['id']}/documents",
                files={"file": ("admin-guide.md", MARKDOWN.encode(), "text/markdown")},
            )
            assert upload.status_code == 202
            doc = upload.json()
            assert (doc["filename"], doc["kb_id"], doc["content_type"], doc["size_bytes"]) == (
                "admin-guide.md",
                kb["id"],
                "text/markdown",
                len(MARKDOWN.encode()),
            )
            assert doc["status"] in ("pending", "extracting", "chunking", "embedding", "ready")
            assert "source_path" not in doc  # where it is kept on the server is not shown

            status = wait_ready(api, kb["id"], doc["id"])
            assert set(status) == {"id", "status", "chunk_count", "error", "filename"}
            assert status["status"] == "ready" and status["chunk_count"] >= 1 and status["error"] is None

            found = api.post(f"/knowledge-bases/{kb['id']}/search", json={"query": "How do I configure SSO?"})
            assert found.status_code == 200
            body = found.json()
            assert body["query"] == "How do I configure SSO?" and body["total"] == len(body["data"]) >= 1
            best = body["data"][0]
            assert set(best) == {"content", "source", "kb", "similarity", "metadata"}
            assert "To configure SSO, navigate to Settings" in best["content"]
            assert (best["source"], best["kb"]) == ("admin-guide.md", "Product Docs")
            assert 0 < best["similarity"] <= 1

            big = api.post(
                f"/knowledge-bases/{kb['id']}/documents",
                files={"file": ("big.md", b"a" * (11 * 1024 * 1024), "text/markdown")},
            )
            assert big.status_code == 413
            assert big.json() == {"error": "payload_too_large", "message": "the file is over the 10 MB limit"}
            listed = api.get(f"/knowledge-bases/{kb['id']}/documents").json()
            assert [d["filename"] for d in listed["data"]] == ["admin-guide.md"] and listed["total"] == 1
    finally:
        assert server.stop() == 0


def test_search_by_meaning_over_http_uses_the_kbs_embedding_model(tmp_path, kbdesk_home, fake_openai):
    configure_provider(fake_openai)
    token = make_token("--user", "me")
    cli("kb", "create", "vectors", "--model", "text-embedding-3-small", "--provider", "fake")
    server = ServeProcess(tmp_path)
    try:
        with server.client(token) as api:
            kb = api.get("/knowledge-bases").json()["data"][0]
            doc = api.post(
                f"/knowledge-bases/{kb['id']}/documents",
                files={"file": ("note.txt", b"The lighthouse keeper logs every ship.")},
            ).json()
            assert wait_ready(api, kb["id"], doc["id"])["status"] == "ready"
            # the fake provider's vectors are seeded by the text: the same text, similarity 1
            body = api.post(
                f"/knowledge-bases/{kb['id']}/search",
                json={"query": "The lighthouse keeper logs every ship.", "mode": "vector"},
            ).json()
            assert body["mode"] == "vector" and body["total"] == 1
            assert abs(body["data"][0]["similarity"] - 1.0) < 1e-5
    finally:
        server.stop()


def test_many_searches_and_uploads_at_once_without_an_error_or_a_duplicate(tmp_path, kbdesk_home):
    token = make_token("--user", "me")
    server = ServeProcess(tmp_path)
    try:
        with server.client(token) as api:
            kb = api.post("/knowledge-bases", json={"name": "busy"}).json()
            seed = api.post(
                f"/knowledge-bases/{kb['id']}/documents", files={"file": ("seed.md", MARKDOWN.encode())}
            ).json()
            assert wait_ready(api, kb["id"], seed["id"])["status"] == "ready"
            start = threading.Barrier(65)
            words = ["alpaca", "bison", "camel", "dingo", "eland"]

            def search(_i: int) -> int:
                with server.client(token) as own:
                    start.wait()
                    return own.post(
                        f"/knowledge-bases/{kb['id']}/search", json={"query": "backups nightly"}
                    ).status_code

            def upload(i: int) -> tuple[int, str]:
                with server.client(token) as own:
                    start.wait()
                    answer = own.post(
                        f"/knowledge-bases/{kb['id']}/documents",
                        files={"file": (f"page-{i}.md", f"# Page {i}\n\nZebra number {i}.\n".encode())},
                    )
                    return answer.status_code, answer.json()["id"]

            def same_name(word: str) -> tuple[int, str]:  # five versions of one file at once
                with server.client(token) as own:
                    start.wait()
                    answer = own.post(
                        f"/knowledge-bases/{kb['id']}/documents",
                        files={"file": ("same.md", f"# Same\n\nThe {word} grazes.\n".encode())},
                    )
                    return answer.status_code, answer.json()["id"]

            with ThreadPoolExecutor(65) as pool:
                searches = [pool.submit(search, i) for i in range(50)]
                uploads = [pool.submit(upload, i) for i in range(10)]
                versions = [pool.submit(same_name, word) for word in words]
                codes = [f.result() for f in searches]
                uploaded = [f.result() for f in uploads]
                same = [f.result() for f in versions]
            assert codes == [200] * 50
            assert [code for code, _ in uploaded] == [202] * 10
            ids = [doc_id for _, doc_id in uploaded]
            assert len(set(ids)) == 10
            assert all(wait_ready(api, kb["id"], doc_id)["status"] == "ready" for doc_id in ids)
            assert [code for code, _ in same] == [202] * 5 and len({doc_id for _, doc_id in same}) == 1
            assert wait_ready(api, kb["id"], same[0][1])["status"] == "ready"
            docs = api.get(f"/knowledge-bases/{kb['id']}/documents").json()["data"]
            names = sorted(d["filename"] for d in docs)
            assert names == sorted(["seed.md", "same.md", *(f"page-{i}.md" for i in range(10))])
            assert api.get(f"/knowledge-bases/{kb['id']}").json()["document_count"] == 12
            found = [
                w for w in words if api.post(f"/knowledge-bases/{kb['id']}/search", json={"query": w}).json()["total"]
            ]
            assert len(found) == 1  # one current version of the file, whichever came last
            hits = api.post(f"/knowledge-bases/{kb['id']}/search", json={"query": "Zebra number 7"}).json()["data"]
            assert hits[0]["source"] == "page-7.md"
    finally:
        assert server.stop() == 0


def test_an_upload_a_crash_interrupted_is_finished_by_the_next_start(tmp_path, kbdesk_home, fake_openai):
    configure_provider(fake_openai)
    fake_openai.poison["glacier"] = ("stall", {"seconds": 60})
    token = make_token("--user", "me")
    cli("kb", "create", "slow", "--model", "text-embedding-3-small", "--provider", "fake")
    server = ServeProcess(tmp_path)
    with server.client(token) as api:
        kb = api.get("/knowledge-bases").json()["data"][0]
        doc = api.post(
            f"/knowledge-bases/{kb['id']}/documents",
            files={"file": ("glacier.md", b"# Glacier\n\nThe glacier moves a metre a day.\n")},
        ).json()
        seen = []
        for _ in range(600):  # until its embedding request is stuck at the provider
            seen.append(api.get(f"/knowledge-bases/{kb['id']}/documents/{doc['id']}/status").json()["status"])
            if seen[-1] == "embedding":
                break
            threading.Event().wait(0.05)
        assert seen[-1] == "embedding", seen
    server.kill()
    fake_openai.poison.clear()
    again = ServeProcess(tmp_path)
    try:
        with again.client(token) as api:
            status = wait_ready(api, kb["id"], doc["id"])
            assert status["status"] == "ready" and status["chunk_count"] >= 1
            hits = api.post(f"/knowledge-bases/{kb['id']}/search", json={"query": "glacier metre"}).json()["data"]
            assert hits and hits[0]["source"] == "glacier.md"
    finally:
        again.stop()


def test_listening_beyond_this_machine_needs_a_flag_and_says_what_protects_it(tmp_path, kbdesk_home):
    refused = cli("serve", "--host", "0.0.0.0", "--port", "1", check=False)
    assert refused.returncode != 0
    assert "--allow-remote" in refused.stderr and "Traceback" not in refused.stderr
    local = ServeProcess(tmp_path)  # loopback, the default: no flag needed
    busy = cli("serve", "--port", str(local.port), check=False)
    assert busy.returncode != 0 and "in use" in busy.stderr and "--port" in busy.stderr
    local.stop()
    assert "No tokens yet" in local.log.read_text()
    make_token("--user", "me")
    remote = ServeProcess(tmp_path, serve_args=("--host", "0.0.0.0", "--allow-remote"))
    with remote.client() as anonymous:
        assert anonymous.get("/knowledge-bases").status_code == 401
    remote.stop()
    said = remote.log.read_text()
    assert "Reachable from other machines. Protected by: bearer tokens (1 active" in said
    assert "Traffic is not encrypted" in said
