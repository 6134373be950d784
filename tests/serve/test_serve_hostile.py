"""The HTTP interface against clients that push: every write needs its permission (the
route table walked), the OpenAPI document is what the server does, uploads are known
by their names and bounded in size and memory, and nothing is left behind."""

from __future__ import annotations

import os
import re
import socket
import threading
import time
import uuid
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fastapi.routing import APIRoute
from serve_support import MARKDOWN, ServeProcess, app_client, make_token, wait_ready
from starlette.testclient import TestClient

from kbdesk import open_desk
from kbdesk.serve import create_app
from kbdesk.serve.app import routers
from kbdesk.store.tokens import Tokens

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
READS_BY_POST: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/knowledge-bases/{kb_id}/search"): {"query": "sign-on"},
    ("POST", "/api/search"): {"query": "sign-on", "kbs": ["{kb_id}"]},
}


@pytest.fixture
def desk(kbdesk_home):
    d = open_desk()
    yield d
    d.close()


@pytest.fixture
def api(desk):
    client, auth = app_client(desk)
    with client:
        client.headers.update(auth)
        yield client


def upload(api, kb_id: str, name: str, data, wait: bool = True) -> dict:
    answer = api.post(f"/knowledge-bases/{kb_id}/documents", files={"file": (name, data)})
    assert answer.status_code == 202, answer.text
    doc = answer.json()
    if wait:
        for _ in range(600):
            if api.get(f"/knowledge-bases/{kb_id}/documents/{doc['id']}/status").json()["status"] in ("ready", "error"):
                break
            time.sleep(0.025)
    return doc


def everything(desk) -> tuple:
    """What a request could change: KBs, documents, bindings and default filters, stored files."""
    kbs = sorted((kb.id, kb.name, kb.description, kb.discoverable) for kb in desk.list_kbs())
    docs = sorted((d.id, d.filename, d.version) for kb in desk.list_kbs() for d in desk.documents(kb.id))
    conn = desk.store.connection()
    bindings = sorted(tuple(r) for r in conn.execute("SELECT channel_id, kb_id, enabled FROM channel_knowledge_bases"))
    bindings += sorted(tuple(r) for r in conn.execute("SELECT id, filters FROM channels"))  # default filters
    files = sorted(str(p) for p in desk.files_dir.rglob("*") if p.is_file())
    return kbs, docs, bindings, files


# ── every write needs its permission ──────────────────────────────────────────
def test_every_write_route_refuses_a_read_only_token_and_changes_nothing(desk):
    owner, auth = app_client(desk)
    with owner:
        owner.headers.update(auth)
        kb = owner.post("/knowledge-bases", json={"name": "docs"}).json()
        doc = upload(owner, kb["id"], "guide.md", MARKDOWN)
    conv = desk.chat().new_conversation("planning")
    ids = {"kb_id": kb["id"], "doc_id": doc["id"], "channel_id": conv.id}
    reader, auth = app_client(desk, (), user="reader")
    walked = []
    with reader:
        reader.headers.update(auth)
        before = everything(desk)
        for router in routers():
            for route in router.routes:
                assert isinstance(route, APIRoute)
                assert route.methods is not None, route.path
                for method in sorted(route.methods & WRITES):
                    path = route.path.format(**ids)
                    if (method, "/api" + route.path) in READS_BY_POST:
                        read = READS_BY_POST[(method, "/api" + route.path)]
                        body = {k: [x.format(**ids) for x in v] if isinstance(v, list) else v for k, v in read.items()}
                        answer = reader.request(method, path, json=body)
                        assert answer.status_code == 200, (method, route.path, answer.text)
                    else:
                        answer = reader.request(method, path, json={})
                        assert answer.status_code == 403, (method, route.path, answer.status_code, answer.text)
                        assert "permission" in answer.json()["message"], answer.text
                    walked.append((method, "/api" + route.path))
        assert everything(desk) == before
        spec = reader.get("/openapi.json").json()
    # the walk saw every write the server has (and would see a new one)
    served = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops if m.upper() in WRITES}
    assert served == set(walked) and len(walked) >= 9, sorted(served ^ set(walked))
    assert ("PUT", "/api/channels/{channel_id}/knowledge-bases") in walked


# ── the OpenAPI document is the server ────────────────────────────────────────
def test_the_openapi_document_declares_bearer_auth_errors_and_typed_bodies(api):
    spec = api.get("/openapi.json", headers={"Authorization": ""}).json()
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearer"]["description"],
    }
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    assert set(schemas["ErrorBody"]["properties"]) == {"error", "message"}
    operations = [(path, method, op) for path, ops in spec["paths"].items() for method, op in ops.items()]
    assert len(operations) >= 14
    for path, method, op in operations:
        where = f"{method.upper()} {path}"
        assert op["security"] == [{"bearer": []}], where
        assert "422" not in op["responses"], where
        for status in ("400", "401", "503"):
            assert op["responses"][status]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorBody"
            }, (where, status)
        ok = next(s for s in op["responses"] if s.startswith("2"))
        assert "$ref" in op["responses"][ok]["content"]["application/json"]["schema"], where
    writes = [op for _, method, op in operations if method in ("post", "put", "delete")]
    assert all("403" in op["responses"] for op in writes if "search" not in op["summary"].lower())
    # what the server sends is what the document says, field for field
    kb = api.post("/knowledge-bases", json={"name": "docs"}).json()
    assert set(kb) == set(schemas["KnowledgeBase"]["properties"])
    doc = upload(api, kb["id"], "guide.md", MARKDOWN, wait=False)
    assert set(doc) == set(schemas["Upload"]["properties"])
    found = api.post(f"/knowledge-bases/{kb['id']}/search", json={"query": "configure SSO"}).json()
    assert set(found) <= set(schemas["SearchAnswer"]["properties"])
    error = api.get("/knowledge-bases/nope").json()
    assert set(error) == {"error", "message"}


def test_the_api_docs_load_their_scripts_from_this_server(api):
    for page in ("/docs", "/redoc"):
        html = api.get(page, headers={"Authorization": ""})
        assert html.status_code == 200 and "text/html" in html.headers["content-type"]
        assert not re.search(r"(src|href)=[\"']https?://", html.text), re.findall(r"https?://[^\"' ]+", html.text)
        assets = re.findall(r"(?:src|href)=[\"'](/api/docs/assets/[^\"']+)", html.text)
        assert assets, html.text[:500]
        for url in assets:
            got = api.get(url.removeprefix("/api"), headers={"Authorization": ""})
            assert got.status_code == 200 and len(got.content) > 1000, url
    assert api.get("/docs/assets/../../etc/passwd", headers={"Authorization": ""}).status_code == 404
    assert api.get("/docs/assets/secret.py", headers={"Authorization": ""}).status_code == 404


# ── uploads ────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("size", [229, 240, 255])
def test_names_up_to_255_bytes_are_stored(api, desk, size):
    kb = api.post("/knowledge-bases", json={"name": "docs"}).json()
    name = "é" * ((size - 3) // 2) + "a" * ((size - 3) % 2) + ".md"  # two bytes a letter: longer than it looks
    assert len(name.encode()) == size
    doc = upload(api, kb["id"], name, MARKDOWN)
    status = api.get(f"/knowledge-bases/{kb['id']}/documents/{doc['id']}/status").json()
    assert (status["status"], status["filename"]) == ("ready", name)
    stored = desk.store.get_document(doc["id"])
    assert (desk.files_dir / stored.storage_key).read_text() == MARKDOWN


def test_a_second_file_part_is_refused_and_stores_nothing(api, desk):
    kb = api.post("/knowledge-bases", json={"name": "docs"}).json()
    before = everything(desk)
    body = b"".join(
        b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="' + name + b'"\r\n\r\n' + text + b"\r\n"
        for name, text in [(b"a.md", b"# A\n\nalpha"), (b"b.md", b"# B\n\nbeta")]
    )
    answer = api.post(
        f"/knowledge-bases/{kb['id']}/documents",
        content=body + b"--b0undary--\r\n",
        headers={"content-type": "multipart/form-data; boundary=b0undary"},
    )
    assert answer.status_code == 400 and "one file per upload" in answer.json()["message"], answer.text
    assert everything(desk) == before
    assert not any(p.is_file() for p in desk.paths.cache_dir.rglob("*"))


def test_the_202_body_says_what_happened(api):
    kb = api.post("/knowledge-bases", json={"name": "docs"}).json()
    first = upload(api, kb["id"], "guide.md", MARKDOWN)
    assert (first["result"], first["status"]) == ("queued", "pending")
    same = upload(api, kb["id"], "guide.md", MARKDOWN, wait=False)
    assert (same["id"], same["result"], same["status"]) == (first["id"], "unchanged", "ready")
    broken = b"%PDF-1.4\n%\xe2\xe3\n1 0 obj << /Type /Catalog >> endobj\ntrailer << >>\n%%EOF"
    bad = upload(api, kb["id"], "broken.pdf", broken)
    assert bad["result"] == "queued"
    status = api.get(f"/knowledge-bases/{kb['id']}/documents/{bad['id']}/status").json()
    assert status["status"] == "error" and status["error"]
    again = upload(api, kb["id"], "broken.pdf", broken, wait=False)
    assert (again["id"], again["result"], again["status"]) == (bad["id"], "known_error", "error")
    assert again["error"] == status["error"]


def test_one_document_per_file_name_whether_added_or_uploaded(api, desk, tmp_path):
    kb = api.post("/knowledge-bases", json={"name": "docs"}).json()
    (tmp_path / "guide.md").write_text("# Guide\n\nThe walrus ships in May.\n")
    added = desk.add(kb["id"], [tmp_path / "guide.md"])
    assert added.added == ["guide.md"]
    doc_id = desk.documents(kb["id"])[0].id
    uploaded = upload(api, kb["id"], "guide.md", "# Guide\n\nThe walrus ships in June.\n")
    assert uploaded["id"] == doc_id  # a new version of the document kbdesk add made

    def hits(query):
        found = api.post(f"/knowledge-bases/{kb['id']}/search", json={"query": query, "mode": "keyword"}).json()
        return [r["source"] for r in found["data"]]

    assert hits("walrus June") == ["guide.md"] and hits("May") == []
    # and the other way round: a file added after its upload takes that document over
    notes = upload(api, kb["id"], "notes.md", "# Notes\n\nHerons nest by the estuary.\n")
    (tmp_path / "notes.md").write_text("# Notes\n\nHerons nest by the estuary.\n")
    report = desk.add(kb["id"], [tmp_path / "notes.md"])
    assert report.unchanged == ["notes.md"] and [
        d.id for d in desk.documents(kb["id"]) if d.filename == "notes.md"
    ] == [notes["id"]]
    assert hits("herons estuary") == ["notes.md"]  # once
    assert len(desk.documents(kb["id"])) == 2


def test_staged_copies_of_a_server_that_stopped_are_removed_at_start(desk):
    root = desk.paths.cache_dir / "uploads"
    dead = _dead_pid()
    for folder in (f"{dead}-0a1b2c3d", str(uuid.uuid4()), f"{os.getpid()}-livelive"):
        (root / folder / "kb").mkdir(parents=True)
        (root / folder / "kb" / "staged.md").write_bytes(b"x" * 1000)
    with TestClient(create_app(desk), base_url="http://127.0.0.1/api"):
        left = sorted(p.name for p in root.iterdir())
    assert any(name.startswith(f"{os.getpid()}-livelive") for name in left)  # a running server's: kept
    assert not any(name.startswith(f"{dead}-") for name in left) and len(left) == 1


def _dead_pid() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


# ── tokens on a SQLite file ────────────────────────────────────────────────────
def test_a_token_for_another_name_on_sqlite_says_whom_it_acts_as_and_the_audit_log_names_it(desk, kbdesk_home):
    from kbdesk.cli.main import cli

    result = CliRunner().invoke(cli, ["token", "create", "--user", "bob"])
    assert result.exit_code == 0, result.output
    assert "acts as this file's one user" in result.output and "bob" in result.output
    client, auth = app_client(desk, user="bob")
    with client:
        client.headers.update(auth)
        kb = client.post("/knowledge-bases", json={"name": "docs"}).json()
        client.put(f"/knowledge-bases/{kb['id']}", json={"description": "changed"})
    token = next(t for t in Tokens(desk.store).list() if t.username == "bob" and t.last_used_at)
    entries = desk.store.audit_entries(kb["id"])
    assert [e["action"] for e in entries] == ["kb.create", "kb.update"]
    assert {e["details"]["token"]["prefix"] for e in entries} == {token.prefix}
    assert {e["details"]["token"]["user"] for e in entries} == {"bob"}
    desk.edit_kb(kb["id"], description="by hand")  # not through a token: no token named
    assert "token" not in desk.store.audit_entries(kb["id"])[-1]["details"]


# ── oversized bodies, against the real server ─────────────────────────────────
@pytest.mark.slow
def test_an_oversized_chunked_upload_is_cut_off_at_the_limit(tmp_path, kbdesk_home):
    env = dict(os.environ)
    with open_desk() as d:
        kb_id = d.create_kb("docs", keyword_only=True).id
    secret = make_token("--user", "me", env=env)
    server = ServeProcess(tmp_path, env=env)
    try:
        for chunked in (True, False):
            wrote, answer, took = _push(server.port, secret, kb_id, 200 * 1024 * 1024, chunked)
            assert answer.startswith("HTTP/1.1 413"), answer
            assert wrote < 64 * 1024 * 1024, wrote  # the server stopped reading at the limit
            assert took < 10, took  # (the figure, 1 GB refused in 0.06 s, is in docs/SERVE.md)
        with server.client(secret) as client:  # and it goes on serving
            doc = client.post(f"/knowledge-bases/{kb_id}/documents", files={"file": ("a.md", MARKDOWN)}).json()
            assert wait_ready(client, kb_id, doc["id"])["status"] == "ready"
    finally:
        server.stop()


def _push(port: int, secret: str, kb_id: str, total: int, chunked: bool) -> tuple[int, str, float]:
    """Send ``total`` bytes as fast as possible while reading: (bytes written when the
    answer came, its status line, seconds)."""
    head = (
        f"POST /api/knowledge-bases/{kb_id}/documents HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {secret}\r\nContent-Type: multipart/form-data; boundary=b0undary\r\n"
        + ("Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {total}\r\n")
        + "\r\n"
    ).encode()
    part = b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="huge.md"\r\n\r\n'
    piece = b"a" * (256 * 1024)
    answer, got = bytearray(), threading.Event()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(30)

    def read():
        try:
            while b"\r\n" not in answer:
                data = sock.recv(4096)
                if not data:
                    break
                answer.extend(data)
        except OSError:
            pass
        got.set()

    started = time.monotonic()
    sock.sendall(head)
    threading.Thread(target=read, daemon=True).start()
    wrote = 0
    try:
        first = part
        while wrote < total and not got.is_set():
            data, first = first + piece, b""
            sock.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n" if chunked else data)
            wrote += len(data)
    except OSError:
        pass
    got.wait(30)
    took = time.monotonic() - started
    sock.close()
    return wrote, bytes(answer).split(b"\r\n", 1)[0].decode(errors="replace"), took


@pytest.mark.slow
def test_eight_concurrent_10_mb_uploads_grow_the_server_by_less_than_100_mib(tmp_path, kbdesk_home):
    """Memory follows the uploads indexed at once, not those sent at once: the server's
    peak resident memory (VmHWM, reset first) over its resident memory before, while 8
    clients upload 10 MB of Markdown each at the same moment (80 MiB measured; the
    bound the issue set is 100 MiB; before, 400 MiB)."""
    import random

    env = dict(os.environ)
    with open_desk() as d:
        kb_id = d.create_kb("big", keyword_only=True).id
    secret = make_token("--user", "me", env=env)
    words = [
        "harbour",
        "lighthouse",
        "keeper",
        "estuary",
        "heron",
        "tide",
        "ledger",
        "invoice",
        "walrus",
        "narwhal",
        "beacon",
        "quay",
    ]
    files = []
    for seed in range(8):
        rng = random.Random(seed)
        paragraphs = (f"## Part {seed}-{n}\n\n" + " ".join(rng.choices(words, k=120)) + ".\n\n" for n in range(11_500))
        files.append("".join(paragraphs).encode()[: 10 * 1000 * 1000])
    server = ServeProcess(tmp_path, env=env)
    try:
        with server.client(secret) as client:  # every module the uploads use, loaded
            warm = client.post(f"/knowledge-bases/{kb_id}/documents", files={"file": ("w.md", files[0][:200_000])})
            assert wait_ready(client, kb_id, warm.json()["id"])["status"] == "ready"
        time.sleep(0.5)
        with open(f"/proc/{server.proc.pid}/clear_refs", "w") as fh:
            fh.write("5")
        before = _kib(server.proc.pid, "VmRSS")
        answers: list[httpx.Response | None] = [None] * 8

        def send(i):
            with server.client(secret) as c:
                answers[i] = c.post(f"/knowledge-bases/{kb_id}/documents", files={"file": (f"b{i}.md", files[i])})

        threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sent = [a for a in answers if a is not None]
        assert len(sent) == 8, "an upload raised"
        assert [a.status_code for a in sent] == [202] * 8, [a.text for a in sent if a.status_code != 202]
        with server.client(secret) as client:
            for answer in sent:
                assert wait_ready(client, kb_id, answer.json()["id"], timeout=300)["status"] == "ready"
        growth = (_kib(server.proc.pid, "VmHWM") - before) / 1024
        assert growth < 100, f"the server grew by {growth:.0f} MiB"
    finally:
        server.stop()


def _kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field + ":"))
