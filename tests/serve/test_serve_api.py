"""Every endpoint's behaviour on a SQLite desk, in process (the app's own startup and
shutdown run), and the permissions a token carries."""

from __future__ import annotations

import time
from typing import Any

import pytest
from serve_support import MARKDOWN, app_client

from kbdesk import open_desk
from kbdesk.serve import create_app
from kbdesk.store.tokens import Tokens


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


def upload(api, kb_id: str, name: str, data: str | bytes, wait: bool = True) -> dict:
    answer = api.post(f"/knowledge-bases/{kb_id}/documents", files={"file": (name, data)})
    assert answer.status_code == 202, answer.text
    doc = answer.json()
    if wait:
        for _ in range(400):
            status = api.get(f"/knowledge-bases/{kb_id}/documents/{doc['id']}/status").json()
            if status["status"] in ("ready", "error"):
                break
            time.sleep(0.025)
        assert status["status"] == "ready", status
    return doc


def sources(api, kb_id: str, query: str) -> list[str]:
    return [r["source"] for r in api.post(f"/knowledge-bases/{kb_id}/search", json={"query": query}).json()["data"]]


def test_kb_crud(api, desk):
    kb = api.post("/knowledge-bases", json={"name": "Docs", "description": "first", "chunk_size": 400}).json()
    assert kb["embedding_config"]["chunk_size"] == 400
    assert api.get(f"/knowledge-bases/{kb['id']}").json() == kb
    renamed = api.put(f"/knowledge-bases/{kb['id']}", json={"name": "Handbook"}).json()
    assert (renamed["name"], renamed["description"]) == ("Handbook", "first")
    described = api.put(f"/knowledge-bases/{kb['id']}", json={"description": "second"}).json()
    assert (described["name"], described["description"]) == ("Handbook", "second")
    upload(api, kb["id"], "guide.md", MARKDOWN)
    stored = desk.files_dir / "kb" / kb["id"]
    assert any(stored.iterdir())
    assert api.delete(f"/knowledge-bases/{kb['id']}").json() == {"deleted": True}
    assert api.get(f"/knowledge-bases/{kb['id']}").status_code == 404
    assert api.get("/knowledge-bases").json() == {"data": [], "total": 0}
    assert not stored.exists()


def test_uploading_a_name_again_is_a_new_version_of_the_same_document(api):
    kb = api.post("/knowledge-bases", json={"name": "docs"}).json()
    first = upload(api, kb["id"], "plan.md", "# Plan\n\nWe ship the walrus release in May.\n")
    again = upload(api, kb["id"], "plan.md", "# Plan\n\nWe ship the narwhal release in June.\n")
    assert again["id"] == first["id"]
    assert sources(api, kb["id"], "narwhal June") == ["plan.md"]
    assert sources(api, kb["id"], "walrus") == []  # only the current text is found
    same = upload(api, kb["id"], "plan.md", "# Plan\n\nWe ship the narwhal release in June.\n", wait=False)
    assert (same["id"], same["status"]) == (first["id"], "ready")  # unchanged bytes: nothing to do
    docs = api.get(f"/knowledge-bases/{kb['id']}/documents").json()
    assert docs["total"] == 1 and docs["data"][0]["status"] == "ready"


def test_deleting_a_document_removes_its_chunks_and_file(api, desk):
    kb = api.post("/knowledge-bases", json={"name": "docs"}).json()
    doc = upload(api, kb["id"], "guide.md", MARKDOWN)
    upload(api, kb["id"], "other.txt", "Nothing about sign-on here, only llamas.")
    stored = desk.files_dir / "kb" / kb["id"]
    assert len(list(stored.iterdir())) == 2
    assert api.delete(f"/knowledge-bases/{kb['id']}/documents/{doc['id']}").json() == {"deleted": True}
    assert sources(api, kb["id"], "configure SSO") == []
    assert [p.name.split("_", 1)[1] for p in stored.iterdir()] == ["other.txt"]
    assert api.get(f"/knowledge-bases/{kb['id']}/documents/{doc['id']}/status").status_code == 404
    assert api.get(f"/knowledge-bases/{kb['id']}").json()["document_count"] == 1


def test_rebuild_answers_202_with_its_counts_and_refuses_an_empty_kb(api, desk):
    kb = api.post("/knowledge-bases", json={"name": "docs"}).json()
    empty = api.post(f"/knowledge-bases/{kb['id']}/rebuild")
    assert empty.status_code == 400 and "no documents" in empty.json()["message"]
    upload(api, kb["id"], "guide.md", MARKDOWN)
    upload(api, kb["id"], "note.txt", "The lighthouse keeper logs every ship.")
    desk.edit_kb(kb["id"], chunk_size=60, chunk_overlap=0)  # new chunking: the rebuild applies it
    answer = api.post(f"/knowledge-bases/{kb['id']}/rebuild")
    assert answer.status_code == 202
    assert answer.json() == {"message": "rebuild started", "total_docs": 2, "rebuilding": 2, "skipped": 0}
    for _ in range(400):
        if api.get(f"/knowledge-bases/{kb['id']}").json()["chunk_count"] > 3:
            break
        time.sleep(0.025)
    assert api.get(f"/knowledge-bases/{kb['id']}").json()["chunk_count"] > 3
    assert sources(api, kb["id"], "lighthouse keeper") == ["note.txt"]


def test_discoverable_hides_a_kb_from_the_picker_only(api):
    shown = api.post("/knowledge-bases", json={"name": "shown"}).json()
    hidden = api.post("/knowledge-bases", json={"name": "hidden"}).json()
    answer = api.put(f"/knowledge-bases/{hidden['id']}/discoverable", json={"discoverable": False})
    assert answer.json() == {"id": hidden["id"], "discoverable": False}
    picker = api.get("/knowledge-bases-discoverable").json()
    assert [kb["name"] for kb in picker["data"]] == ["shown"] and picker["total"] == 1
    assert sorted(kb["name"] for kb in api.get("/knowledge-bases").json()["data"]) == ["hidden", "shown"]
    api.put(f"/knowledge-bases/{hidden['id']}/discoverable", json={"discoverable": True})
    assert len(api.get("/knowledge-bases-discoverable").json()["data"]) == 2
    assert shown["id"] != hidden["id"]


def test_a_channel_is_a_conversation_and_its_kbs_can_be_set(api, desk):
    a = api.post("/knowledge-bases", json={"name": "alpha"}).json()
    b = api.post("/knowledge-bases", json={"name": "beta"}).json()
    conv = desk.chat().new_conversation("planning")
    rows = api.get(f"/channels/{conv.id}/knowledge-bases").json()["data"]
    assert {(r["kb_name"], r["enabled"], r["origin"]) for r in rows} == {
        ("alpha", True, "personal"),
        ("beta", True, "personal"),
    }
    assert set(rows[0]) >= {"kb_id", "kb_name", "enabled", "document_count"}
    answer = api.put(f"/channels/{conv.id}/knowledge-bases", json={"kb_ids": [b["id"]]})
    assert answer.status_code == 200, answer.text
    only_beta = answer.json()["data"]
    assert {(r["kb_name"], r["enabled"]) for r in only_beta} == {("alpha", False), ("beta", True)}
    assert [(a.kb.name, a.origin) for a in desk.chat().active_kbs(conv.id)] == [("beta", "conversation")]
    unknown = api.put(
        f"/channels/{conv.id}/knowledge-bases", json={"kb_ids": [a["id"], "00000000-0000-4000-8000-000000000000"]}
    )
    assert unknown.status_code == 404
    assert api.get(f"/channels/{conv.id}/knowledge-bases").json()["data"] == only_beta  # unchanged
    assert api.put(f"/channels/{conv.id}/knowledge-bases", json={"kb_ids": "beta"}).status_code == 400


def test_uploading_to_a_kb_whose_model_has_no_provider_is_412_and_stores_nothing(api, desk):
    kb = desk.create_kb("vectors", model_id="text-embedding-3-small", provider="nowhere")
    answer = api.post(f"/knowledge-bases/{kb.id}/documents", files={"file": ("a.md", "# hi")})
    assert answer.status_code == 412 and "nowhere" in answer.json()["message"]
    assert desk.documents(kb.id) == []
    assert api.post(f"/knowledge-bases/{kb.id}/rebuild").status_code == 400  # (no documents)


def test_the_openapi_document_and_the_index_are_served(api):
    spec = api.get("/openapi.json", headers={"Authorization": ""}).json()
    assert {
        "/api/knowledge-bases",
        "/api/knowledge-bases/{kb_id}/documents",
        "/api/knowledge-bases/{kb_id}/search",
        "/api/knowledge-bases/{kb_id}/rebuild",
        "/api/channels/{channel_id}/knowledge-bases",
        "/api/knowledge-bases-discoverable",
        "/api/knowledge-bases/{kb_id}/discoverable",
    } <= set(spec["paths"])
    assert "SearchRequest" in spec["components"]["schemas"]
    index = api.get("", headers={"Authorization": ""}).json()
    assert "POST /api/knowledge-bases/{kb_id}/search" in index["endpoints"]
    assert api.get("/docs", headers={"Authorization": ""}).status_code == 200


def test_no_cross_origin_access_unless_configured(desk):
    from starlette.testclient import TestClient

    preflight = {
        "Origin": "https://evil.example",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization",
    }
    with TestClient(create_app(desk), base_url="http://127.0.0.1/api") as plain:
        assert "access-control-allow-origin" not in plain.options("/knowledge-bases", headers=preflight).headers
    with TestClient(create_app(desk, cors_origins=["https://app.example"]), base_url="http://127.0.0.1/api") as web:
        allowed = web.options("/knowledge-bases", headers={**preflight, "Origin": "https://app.example"})
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        other = web.options("/knowledge-bases", headers=preflight)
        assert "access-control-allow-origin" not in other.headers


@pytest.mark.parametrize("permissions", [(), ("kb.create",)])
def test_a_token_without_kb_write_reads_and_searches_but_changes_nothing(desk, permissions):
    owner, owner_auth = app_client(desk)
    with owner:
        owner.headers.update(owner_auth)
        kb = owner.post("/knowledge-bases", json={"name": "docs"}).json()
        upload(owner, kb["id"], "guide.md", MARKDOWN)
    reader, auth = app_client(desk, permissions, user="reader")
    with reader:
        reader.headers.update(auth)
        assert reader.get("/knowledge-bases").json()["total"] == 1
        assert sources(reader, kb["id"], "configure SSO") == ["guide.md"]
        doc_id = reader.get(f"/knowledge-bases/{kb['id']}/documents").json()["data"][0]["id"]
        calls: list[tuple[str, str, dict[str, Any]]] = [
            ("POST", f"/knowledge-bases/{kb['id']}/documents", {"files": {"file": ("x.md", "# x")}}),
            ("PUT", f"/knowledge-bases/{kb['id']}", {"json": {"name": "mine"}}),
            ("DELETE", f"/knowledge-bases/{kb['id']}", {}),
            ("DELETE", f"/knowledge-bases/{kb['id']}/documents/{doc_id}", {}),
            ("POST", f"/knowledge-bases/{kb['id']}/rebuild", {}),
            ("PUT", f"/knowledge-bases/{kb['id']}/discoverable", {"json": {"discoverable": False}}),
        ]
        for method, path, kwargs in calls:
            answer = reader.request(method, path, **kwargs)
            assert answer.status_code == 403 and "kb.write" in answer.json()["message"], (method, path)
        created = reader.post("/knowledge-bases", json={"name": "new"})
        assert created.status_code == (201 if permissions else 403)
    assert [d.filename for d in desk.documents(kb["id"])] == ["guide.md"]
    assert desk.kb(kb["id"]).name == "docs" and desk.kb(kb["id"]).discoverable


def test_a_revoked_token_stops_working_at_once(api, desk):
    assert api.get("/knowledge-bases").status_code == 200
    token = Tokens(desk.store).list()[0]
    assert token.last_used_at is not None
    Tokens(desk.store).revoke(token.id)
    answer = api.get("/knowledge-bases")
    assert answer.status_code == 401 and "revoked" in answer.json()["message"]


@pytest.mark.slow
def test_an_upload_that_cannot_get_its_turn_is_refused_and_never_runs_later(kbdesk_home, fake_openai, monkeypatch):
    from ingest_support import configure_provider
    from kbdesk.serve import uploads

    configure_provider(fake_openai)
    fake_openai.poison["glacier"] = ("stall", {"seconds": 3})
    monkeypatch.setattr(uploads, "QUEUED_WAIT", 0.5)
    desk = open_desk()
    kb = desk.create_kb("slow", model_id="text-embedding-3-small", provider="fake")
    client, auth = app_client(desk)
    with client:
        client.headers.update(auth)
        first = upload(client, kb.id, "plan.md", "# Plan\n\nThe glacier plan: walrus.\n", wait=False)
        busy = client.post(
            f"/knowledge-bases/{kb.id}/documents", files={"file": ("plan.md", "# Plan\n\nThe narwhal plan.\n")}
        )
        assert busy.status_code == 503 and busy.headers["retry-after"] == "10"
        assert "still being indexed" in busy.json()["message"]
        for _ in range(400):
            if client.get(f"/knowledge-bases/{kb.id}/documents/{first['id']}/status").json()["status"] == "ready":
                break
            time.sleep(0.025)
        time.sleep(0.3)  # had the refused upload been left queued, it would run now
        assert sources(client, kb.id, "walrus") == ["plan.md"]
        assert sources(client, kb.id, "narwhal") == []
        fake_openai.poison.clear()
        again = upload(client, kb.id, "plan.md", "# Plan\n\nThe narwhal plan.\n")
        assert again["id"] == first["id"] and sources(client, kb.id, "narwhal") == ["plan.md"]
    desk.close()
