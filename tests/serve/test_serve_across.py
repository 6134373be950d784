"""What a remote client needs from kbdesk serve: the token's identity (GET /api/me) and
one search across several KBs with the parts of each score (POST /api/search), under
the same permissions as every other route."""

from __future__ import annotations

import pytest
from serve_support import MARKDOWN, app_client

from ingest_support import configure_provider
from kbdesk import open_desk


@pytest.fixture
def desk(kbdesk_home, fake_openai):
    configure_provider(fake_openai)
    d = open_desk()
    a = d.create_kb("Handbook", model_id="text-embedding-3-small", provider="fake")
    b = d.create_kb("Runbooks", model_id="text-embedding-3-small", provider="fake")
    d.add(a.id, [_write(kbdesk_home, "guide.md", MARKDOWN)])
    d.add(b.id, [_write(kbdesk_home, "restore.md", "# Restore\n\nRestore the nightly backups with kbdesk import.\n")])
    yield d
    d.close()


def _write(home, name: str, text: str):
    path = home.parent / "files" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_me_names_the_user_and_token_never_the_secret(desk):
    client, auth = app_client(desk, permissions=(), user="alice")
    with client:
        me = client.get("/me", headers=auth)
        assert me.status_code == 200, me.text
        body = me.json()
        assert body["token"]["prefix"] and body["token"]["permissions"] == []
        assert auth["Authorization"].split()[1] not in me.text
        assert body["server"]["engine"] == "sqlite" and body["kb_count"] == 2
        assert body["search"]["threshold"] == 0.3 and body["search"]["limit"] == 5
        assert client.get("/me").status_code == 401


def test_one_search_across_kbs_ranks_both_and_says_how(desk):
    kbs = {kb.name: kb.id for kb in desk.list_kbs()}
    client, auth = app_client(desk, permissions=())  # a read-only token may search
    with client:
        answer = client.post(
            "/search",
            headers=auth,
            json={"kbs": list(kbs.values()), "query": "nightly backups restore", "threshold": -1, "limit": 10},
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert {r["kb"] for r in body["data"]} == {"Handbook", "Runbooks"}
        assert {r["kb_id"] for r in body["data"]} == set(kbs.values())
        assert [r["score"]["rank"] for r in body["data"]] == list(range(1, body["total"] + 1))
        assert all(r["score"]["cosine"] is not None and r["document_id"] for r in body["data"])
        assert body["mode"] == "hybrid" and body["fusion"] == "convex" and body["threshold"] == -1
        assert [m["model_id"] for m in body["models"]] == ["text-embedding-3-small"]
        assert body["best_keyword"] and body["best_keyword"] > 0
        assert {k["name"] for k in body["kbs"]} == {"Handbook", "Runbooks"}


def test_every_kb_must_be_readable_or_the_search_is_a_404(desk):
    kb = desk.list_kbs()[0]
    client, auth = app_client(desk)
    with client:
        for kbs in ([kb.id, "00000000-0000-4000-8000-000000000000"], ["Handbook"], [kb.id[:8]]):
            answer = client.post("/search", headers=auth, json={"kbs": kbs, "query": "backups"})
            assert answer.status_code == 404 and answer.json()["error"] == "not_found", kbs
        for body in (
            {"kbs": [], "query": "backups"},
            {"kbs": [kb.id], "query": ""},
            {"kbs": [kb.id], "query": "backups", "mode": "keyword", "threshold": 0.2},
            {"kbs": [kb.id], "query": "backups", "limit": 21},
            {"kbs": [kb.id], "query": "backups", "extra": 1},
        ):
            answer = client.post("/search", headers=auth, json=body)
            assert answer.status_code == 400, (body, answer.text)
        assert client.post("/search", json={"kbs": [kb.id], "query": "x"}).status_code == 401


def test_the_openapi_document_lists_both(desk):
    client, _auth = app_client(desk)
    with client:
        paths = client.get("/openapi.json").json()["paths"]
        assert "post" in paths["/api/search"] and "get" in paths["/api/me"]


@pytest.mark.postgres
def test_a_team_server_searches_only_what_the_token_may_read(pg_uri, pg_server, kbdesk_home):
    import uuid

    from starlette.testclient import TestClient

    from kbdesk.serve import create_app
    from kbdesk.serve.users import token_user
    from kbdesk.store.postgres.admin import TeamGrant, grant, setup
    from kbdesk.store.tokens import Tokens
    from pg_support import create_login

    setup(pg_uri)
    logins = {name: f"{name}_{uuid.uuid4().hex[:8]}" for name in ("alice", "bob")}
    for login in logins.values():
        create_login(pg_server, login, "s3cret-Pw")
        grant(pg_uri, login, teams=[TeamGrant("Eng", "admin")])
    desk = open_desk(pg_uri)
    try:
        with TestClient(create_app(desk), base_url="http://127.0.0.1/api", raise_server_exceptions=False) as client:
            auth = {}
            for name, login in logins.items():
                who = token_user(desk, login)
                auth[name] = {"Authorization": f"Bearer {Tokens(desk.store).create(who.user_id, who.username)[1]}"}
            diary = client.post("/knowledge-bases", headers=auth["alice"], json={"name": "Diary"}).json()
            doc = client.post(
                f"/knowledge-bases/{diary['id']}/documents", headers=auth["alice"], files={"file": ("d.md", MARKDOWN)}
            ).json()
            for _ in range(400):
                status = client.get(
                    f"/knowledge-bases/{diary['id']}/documents/{doc['id']}/status", headers=auth["alice"]
                )
                if status.json()["status"] == "ready":
                    break
            mine = client.post("/search", headers=auth["alice"], json={"kbs": [diary["id"]], "query": "SSO"})
            assert mine.status_code == 200 and mine.json()["total"] >= 1
            assert mine.json()["mode"] == "keyword" and mine.json()["data"][0]["kb"] == "Diary"
            theirs = client.post("/search", headers=auth["bob"], json={"kbs": [diary["id"]], "query": "SSO"})
            assert theirs.status_code == 404 and "SSO" not in theirs.text
            me = client.get("/me", headers=auth["bob"]).json()
            assert me["user"]["name"] == logins["bob"] and me["server"]["engine"] == "postgres"
            assert me["kb_count"] == 0
    finally:
        desk.close()
