"""Bad requests get a clear 4xx in the one error shape and change nothing."""

from __future__ import annotations

import time

import pytest
from serve_support import MARKDOWN, app_client

from kbdesk import open_desk


@pytest.fixture
def api(kbdesk_home):
    desk = open_desk()
    client, auth = app_client(desk)
    with client:
        client.headers.update(auth)
        client.desk = desk
        kb = client.post("/knowledge-bases", json={"name": "docs"}).json()
        doc = client.post(f"/knowledge-bases/{kb['id']}/documents", files={"file": ("guide.md", MARKDOWN)}).json()
        _ready(client, kb["id"], doc["id"])
        client.kb, client.doc = kb, doc
        yield client
    desk.close()


def _ready(client, kb_id: str, doc_id: str) -> None:
    for _ in range(400):
        if client.get(f"/knowledge-bases/{kb_id}/documents/{doc_id}/status").json()["status"] == "ready":
            return
        time.sleep(0.025)
    raise AssertionError("the document never became ready")


def state(api) -> tuple:
    """Everything a request could have changed: KBs, documents, stored files."""
    desk = api.desk
    kbs = sorted((kb.id, kb.name, kb.description, kb.discoverable, kb.document_count) for kb in desk.list_kbs())
    docs = sorted((d.id, d.filename, d.status, d.version) for kb in desk.list_kbs() for d in desk.documents(kb.id))
    files = sorted(p.name for p in desk.files_dir.rglob("*") if p.is_file() and p.parent.name == api.kb["id"])
    return kbs, docs, files


def refused(answer, status: int, *words: str) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error", "message"} and body["message"], body
    for word in words:
        assert word in body["message"], body
    assert "Traceback" not in answer.text and "/kbdesk/" not in answer.text and "/tmp" not in answer.text


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "words"),
    [
        ("post", "/knowledge-bases", b"{not json", 400, ["not valid JSON"]),
        ("post", "/knowledge-bases", b"[1, 2]", 400, []),
        ("post", "/knowledge-bases", b'{"name": 7}', 400, ["name"]),
        ("post", "/knowledge-bases", b'{"name": "x", "colour": "red"}', 400, ["unknown field 'colour'"]),
        ("post", "/knowledge-bases", b'{"name": ""}', 400, ["name"]),
        ("post", "/knowledge-bases", b'{"description": "no name"}', 400, ["'name' is required"]),
        ("post", "/knowledge-bases", b'{"name": "x", "scope": "galactic"}', 400, ["scope"]),
        ("post", "/knowledge-bases", b'{"name": "x", "scope": "team"}', 400, ["team_id"]),
        ("post", "/knowledge-bases", b'{"name": "docs"}', 409, ["docs"]),
        ("post", "/knowledge-bases", b'{"name": "bad\\u001b[31mname"}', 400, []),
        ("put", "/knowledge-bases/{kb}", b"{}", 400, ["nothing to change"]),
        ("put", "/knowledge-bases/{kb}", b'{"name": null}', 400, ["null"]),
        ("put", "/knowledge-bases/{kb}", b'{"name": "x", "owner_id": "me"}', 400, ["unknown field 'owner_id'"]),
        ("put", "/knowledge-bases/{kb}/discoverable", b'{"discoverable": "no"}', 400, ["discoverable"]),
        ("put", "/knowledge-bases/{kb}/discoverable", b"{}", 400, ["'discoverable' is required"]),
        ("post", "/knowledge-bases/{kb}/search", b'{"query": ""}', 400, ["query"]),
        ("post", "/knowledge-bases/{kb}/search", b'{"query": "x", "limit": "5"}', 400, ["limit"]),
        ("post", "/knowledge-bases/{kb}/search", b'{"query": "x", "limit": 21}', 400, ["limit"]),
        ("post", "/knowledge-bases/{kb}/search", b'{"query": "x", "limit": 0}', 400, ["limit"]),
        ("post", "/knowledge-bases/{kb}/search", b'{"query": "x", "threshold": 2}', 400, ["threshold"]),
        ("post", "/knowledge-bases/{kb}/search", b'{"query": "x", "top_k": 3}', 400, ["unknown field 'top_k'"]),
        (
            "post",
            "/knowledge-bases/{kb}/search",
            b'{"query": "x", "mode": "keyword", "threshold": 0.5}',
            400,
            ["keyword search has no cosine"],
        ),
    ],
)
def test_malformed_bodies_are_refused_and_change_nothing(api, method, path, body, status, words):
    before = state(api)
    answer = api.request(
        method.upper(), path.format(kb=api.kb["id"]), content=body, headers={"content-type": "application/json"}
    )
    refused(answer, status, *words)
    assert state(api) == before


@pytest.mark.parametrize(
    ("files", "data", "status", "words"),
    [
        ({"document": ("a.md", b"# hi")}, None, 400, ["multipart/form-data field 'file'"]),
        (None, {"file": "just text"}, 400, ["'file'"]),
        ({"file": ("../../etc/passwd.md", b"# hi")}, None, 400, ["not a path"]),
        ({"file": ("..", b"# hi")}, None, 400, ["not a path"]),
        ({"file": ("sub/dir.md", b"# hi")}, None, 400, ["not a path"]),
        ({"file": ("empty.md", b"")}, None, 400, ["empty"]),
        ({"file": ("x" * 300 + ".md", b"# hi")}, None, 400, ["longer than 255 bytes"]),
        ({"file": ("program.exe", b"MZ")}, None, 415, ["'.exe'"]),
    ],
)
def test_bad_uploads_are_refused_and_store_nothing(api, files, data, status, words):
    before = state(api)
    refused(api.post(f"/knowledge-bases/{api.kb['id']}/documents", files=files, data=data), status, *words)
    assert state(api) == before
    assert not any(p.is_file() for p in api.desk.paths.cache_dir.rglob("*"))  # nothing left staged either


def multipart(filename: bytes, data: bytes = b"# hi") -> tuple[bytes, dict[str, str]]:
    """A multipart body with the file name exactly as given (clients escape some bytes)."""
    body = (
        b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="' + filename + b'"\r\n'
        b"Content-Type: text/markdown\r\n\r\n" + data + b"\r\n--b0undary--\r\n"
    )
    return body, {"content-type": "multipart/form-data; boundary=b0undary"}


@pytest.mark.parametrize(
    "filename", [b"bad\x1b[2Jname.md", b"tab\tname.md", b"nul\x00.md", b"bell\x07.md", b"rtl\xe2\x80\xaename.md"]
)
def test_file_names_with_control_characters_are_refused(api, filename):
    before = state(api)
    body, headers = multipart(filename)
    refused(
        api.post(f"/knowledge-bases/{api.kb['id']}/documents", content=body, headers=headers), 400, "control characters"
    )
    assert state(api) == before


def test_a_body_over_the_limit_is_refused_while_it_streams(api):
    before = state(api)

    def chunks():  # no Content-Length: the limit is found while reading
        boundary = b"--b0undary\r\n"
        yield boundary + b'Content-Disposition: form-data; name="file"; filename="huge.md"\r\n\r\n'
        for _ in range(11):
            yield b"a" * (1024 * 1024)
        yield b"\r\n--b0undary--\r\n"

    answer = api.post(
        f"/knowledge-bases/{api.kb['id']}/documents",
        content=chunks(),
        headers={"content-type": "multipart/form-data; boundary=b0undary"},
    )
    refused(answer, 413, "10 MB")
    refused(
        api.post(
            "/knowledge-bases",
            content=b'{"name": "' + b"x" * (2 * 1024 * 1024) + b'"}',
            headers={"content-type": "application/json"},
        ),
        413,
        "1024 KB",
    )
    assert state(api) == before


def test_ids_that_do_not_exist_or_are_not_ids_are_404(api):
    kb, doc = api.kb["id"], api.doc["id"]
    other = api.post("/knowledge-bases", json={"name": "other"}).json()["id"]
    before = state(api)
    missing = "00000000-0000-4000-8000-000000000000"
    for method, path in [
        ("GET", f"/knowledge-bases/{missing}"),
        ("GET", "/knowledge-bases/docs"),
        ("GET", f"/knowledge-bases/{kb[:8]}"),
        ("DELETE", f"/knowledge-bases/{missing}"),
        ("GET", f"/knowledge-bases/{kb}/documents/{missing}/status"),
        ("GET", f"/knowledge-bases/{kb}/documents/guide.md/status"),
        ("GET", f"/knowledge-bases/{other}/documents/{doc}/status"),  # another KB's document
        ("DELETE", f"/knowledge-bases/{other}/documents/{doc}"),
        ("POST", f"/knowledge-bases/{missing}/rebuild"),
        ("GET", f"/channels/{missing}/knowledge-bases"),
    ]:
        refused(api.request(method, path), 404)
    refused(api.post(f"/knowledge-bases/{missing}/search", json={"query": "sso"}), 404)
    refused(api.get("/no-such-thing"), 404, "GET /api")
    refused(api.request("PATCH", f"/knowledge-bases/{kb}"), 405)
    assert state(api) == before


def test_without_a_valid_token_nothing_is_answered_or_changed(api):
    auth = api.headers.pop("Authorization")
    before = state(api)
    for headers in (
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer kbd_" + "x" * 43},
        {"Authorization": auth + "x"},
        {"Authorization": "bearer " + auth.split()[1][:-1]},
    ):
        refused(api.get("/knowledge-bases", headers=headers), 401)
        refused(api.delete(f"/knowledge-bases/{api.kb['id']}", headers=headers), 401)
        refused(
            api.post(f"/knowledge-bases/{api.kb['id']}/documents", headers=headers, files={"file": ("x.md", b"# x")}),
            401,
        )
    assert api.get("/knowledge-bases", headers={"Authorization": auth.replace("Bearer", "bearer")}).status_code == 200
    assert state(api) == before


def test_an_internal_failure_is_a_plain_500_that_names_nothing(api, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("/home/alice/secret/kbdesk.db is on fire")

    monkeypatch.setattr(type(api.desk), "list_kbs", broken)
    answer = api.get("/knowledge-bases")
    refused(answer, 500)
    assert answer.json()["message"] == "internal error (the server's log has the details)"
    assert "secret" not in answer.text and "fire" not in answer.text
