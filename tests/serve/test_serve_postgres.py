"""A team server over HTTP: the server connects as the owner, each token acts as a
kbdesk user of the database, and the scopes that user has decide every answer."""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg
import pytest
from serve_support import MARKDOWN
from starlette.testclient import TestClient

from kbdesk import open_desk
from kbdesk.errors import InvalidInputError, StoreError
from kbdesk.serve import create_app
from kbdesk.serve.users import token_user
from kbdesk.store.postgres.admin import TeamGrant, grant, revoke, setup
from kbdesk.store.tokens import Tokens
from pg_support import as_login, create_login, sql

PASSWORD = "s3cret-Pw"


@pytest.fixture
def team(pg_uri, pg_server, kbdesk_home):
    setup(pg_uri)
    logins = {name: f"{name}_{uuid.uuid4().hex[:8]}" for name in ("alice", "bob", "root", "eve")}
    for login in logins.values():
        create_login(pg_server, login, PASSWORD)
    grant(pg_uri, logins["alice"], teams=[TeamGrant("Eng", "member")])
    grant(pg_uri, logins["bob"], teams=[TeamGrant("Eng", "admin")])
    grant(pg_uri, logins["root"], admin=True)
    grant(pg_uri, logins["eve"])
    desk = open_desk(pg_uri)  # the owner: the server's own login
    app = create_app(desk)
    with TestClient(app, base_url="http://127.0.0.1/api", raise_server_exceptions=False) as client:
        tokens = Tokens(desk.store)
        clients = {}
        for name, login in logins.items():
            who = token_user(desk, login)
            _token, secret = tokens.create(who.user_id, who.username)
            clients[name] = _As(client, secret)
        yield _Team(pg_uri, desk, logins, clients, str(sql(pg_uri, "SELECT id FROM teams WHERE name = 'Eng'")[0][0]))
    desk.close()


class _As:
    """The test client, as one token."""

    def __init__(self, client: TestClient, secret: str) -> None:
        self.client, self.auth = client, {"Authorization": f"Bearer {secret}"}

    def __getattr__(self, method: str):
        return lambda path, **kw: self.client.request(method.upper(), path, headers=self.auth, **kw)


class _Team:
    def __init__(self, uri, desk, logins, clients, team_id) -> None:
        self.uri, self.desk, self.logins, self.team_id = uri, desk, logins, team_id
        self.alice, self.bob, self.root, self.eve = (clients[n] for n in ("alice", "bob", "root", "eve"))

    def uid(self, name: str) -> str:
        return str(sql(self.uri, "SELECT user_id FROM kbdesk_logins WHERE login = %s", self.logins[name])[0][0])


def ready(api, kb_id: str, doc_id: str) -> dict:
    for _ in range(400):
        status = api.get(f"/knowledge-bases/{kb_id}/documents/{doc_id}/status").json()
        if status["status"] in ("ready", "error"):
            return status
        time.sleep(0.025)
    return status


def test_personal_kbs_are_their_owners_alone(team):
    kb = team.alice.post("/knowledge-bases", json={"name": "Diary"}).json()
    assert kb["owner_id"] == team.uid("alice")
    doc = team.alice.post(f"/knowledge-bases/{kb['id']}/documents", files={"file": ("diary.md", MARKDOWN)})
    assert doc.status_code == 202 and doc.json()["uploaded_by"] == team.uid("alice")
    assert ready(team.alice, kb["id"], doc.json()["id"])["status"] == "ready"
    for other in (team.eve, team.bob):
        assert other.get("/knowledge-bases").json()["total"] == 0
        calls: list[tuple[str, str, dict[str, Any]]] = [
            ("get", f"/knowledge-bases/{kb['id']}", {}),
            ("post", f"/knowledge-bases/{kb['id']}/search", {"json": {"query": "SSO"}}),
            ("get", f"/knowledge-bases/{kb['id']}/documents", {}),
            ("post", f"/knowledge-bases/{kb['id']}/documents", {"files": {"file": ("x.md", "# planted")}}),
            ("delete", f"/knowledge-bases/{kb['id']}", {}),
            ("delete", f"/knowledge-bases/{kb['id']}/documents/{doc.json()['id']}", {}),
        ]
        for method, path, kw in calls:
            answer = getattr(other, method)(path, **kw)
            assert answer.status_code == 404, (method, path, answer.text)  # not even said to exist
    assert [d.filename for d in team.desk.store.list_documents(kb["id"])] == ["diary.md"]
    hits = team.alice.post(f"/knowledge-bases/{kb['id']}/search", json={"query": "configure SSO"}).json()
    assert hits["data"][0]["source"] == "diary.md"


def test_team_kbs_are_read_by_members_and_changed_by_team_admins(team):
    refused = team.alice.post("/knowledge-bases", json={"name": "Runbooks", "scope": "team", "team_id": team.team_id})
    assert refused.status_code == 403 and "admin of team" in refused.json()["message"]
    kb = team.bob.post("/knowledge-bases", json={"name": "Runbooks", "scope": "team", "team_id": team.team_id})
    assert kb.status_code == 201
    kb = kb.json()
    doc = team.bob.post(f"/knowledge-bases/{kb['id']}/documents", files={"file": ("sso.md", MARKDOWN)}).json()
    assert ready(team.bob, kb["id"], doc["id"])["status"] == "ready"
    assert [k["name"] for k in team.alice.get("/knowledge-bases").json()["data"]] == ["Runbooks"]
    assert team.alice.post(f"/knowledge-bases/{kb['id']}/search", json={"query": "SSO"}).json()["total"] >= 1
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("post", f"/knowledge-bases/{kb['id']}/documents", {"files": {"file": ("x.md", "# x")}}),
        ("put", f"/knowledge-bases/{kb['id']}", {"json": {"name": "Mine"}}),
        ("delete", f"/knowledge-bases/{kb['id']}/documents/{doc['id']}", {}),
        ("post", f"/knowledge-bases/{kb['id']}/rebuild", {}),
        ("delete", f"/knowledge-bases/{kb['id']}", {}),
    ]
    for method, path, kw in calls:
        answer = getattr(team.alice, method)(path, **kw)
        assert answer.status_code == 403, (method, path, answer.text)
        assert "only an admin of team 'Eng' may change it" in answer.json()["message"]
    assert team.eve.get(f"/knowledge-bases/{kb['id']}").status_code == 404  # not in the team
    assert [d.filename for d in team.desk.store.list_documents(kb["id"])] == ["sso.md"]
    assert team.bob.put(f"/knowledge-bases/{kb['id']}", json={"name": "Ops runbooks"}).json()["name"] == "Ops runbooks"


def test_global_kbs_need_a_system_admin_and_discoverable_its_owner_or_one(team):
    refused = team.alice.post("/knowledge-bases", json={"name": "Handbook", "scope": "global"})
    assert refused.status_code == 403 and "kbdesk pg grant LOGIN --admin" in refused.json()["message"]
    kb = team.root.post("/knowledge-bases", json={"name": "Handbook", "scope": "global"}).json()
    assert [k["name"] for k in team.eve.get("/knowledge-bases-discoverable").json()["data"]] == ["Handbook"]
    refused = team.eve.put(f"/knowledge-bases/{kb['id']}/discoverable", json={"discoverable": False})
    assert refused.status_code == 403
    mine = team.eve.post("/knowledge-bases", json={"name": "Mine"}).json()
    assert team.eve.put(f"/knowledge-bases/{mine['id']}/discoverable", json={"discoverable": False}).status_code == 200
    assert team.root.put(f"/knowledge-bases/{kb['id']}/discoverable", json={"discoverable": False}).status_code == 200
    assert team.eve.get("/knowledge-bases-discoverable").json()["data"] == []
    assert team.eve.get(f"/knowledge-bases/{kb['id']}").status_code == 404  # hidden from direct access


def test_tokens_name_kbdesk_users_and_end_with_them(team, pg_server):
    with pytest.raises(InvalidInputError, match="not a kbdesk user"):
        token_user(team.desk, "mallory")
    revoke(team.uri, team.logins["eve"])
    answer = team.eve.get("/knowledge-bases")
    assert answer.status_code == 401 and "no longer a kbdesk user" in answer.json()["message"]
    assert team.alice.get("/knowledge-bases").status_code == 200
    grant(team.uri, team.logins["alice"], admin=True)  # rights change with the next request
    assert team.alice.post("/knowledge-bases", json={"name": "Policy", "scope": "global"}).status_code == 201


def test_a_kbdesk_user_can_neither_read_tokens_nor_run_the_server(team):
    alice_uri = as_login(team.uri, team.logins["alice"], PASSWORD)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        sql(alice_uri, "SELECT token_hash FROM kbdesk_api_tokens")
    alice = open_desk(alice_uri)
    try:
        with pytest.raises(StoreError, match="owner of kbdesk's tables"):
            token_user(alice, team.logins["alice"])
    finally:
        alice.close()
    hashes = [r[0] for r in sql(team.uri, "SELECT token_hash FROM kbdesk_api_tokens")]
    assert len(hashes) == 4 and all(len(h) == 64 for h in hashes)


def test_a_channel_is_its_owners_conversation(team, monkeypatch):
    alice_desk = open_desk(as_login(team.uri, team.logins["alice"], PASSWORD))
    try:
        conv = alice_desk.chat().new_conversation("planning")
    finally:
        alice_desk.close()
    mine = team.alice.post("/knowledge-bases", json={"name": "Diary"}).json()
    eves = team.eve.post("/knowledge-bases", json={"name": "Eve's"}).json()
    rows = team.alice.get(f"/channels/{conv.id}/knowledge-bases").json()["data"]
    assert [(r["kb_name"], r["enabled"], r["origin"]) for r in rows] == [("Diary", True, "personal")]
    assert team.eve.get(f"/channels/{conv.id}/knowledge-bases").status_code == 404  # not hers
    assert team.eve.put(f"/channels/{conv.id}/knowledge-bases", json={"kb_ids": [eves["id"]]}).status_code == 404
    refused = team.alice.put(f"/channels/{conv.id}/knowledge-bases", json={"kb_ids": [eves["id"]]})
    assert refused.status_code == 404  # a KB she cannot see is not bound
    off = team.alice.put(f"/channels/{conv.id}/knowledge-bases", json={"kb_ids": []}).json()["data"]
    assert [(r["kb_id"], r["enabled"]) for r in off] == [(mine["id"], False)]
    # its default filters: hers to read and set, not Eve's
    narrowed = team.alice.put(f"/channels/{conv.id}/filters", json={"filters": {"tags": ["q3"], "path": "work/**"}})
    assert narrowed.status_code == 200, narrowed.text
    assert team.alice.get(f"/channels/{conv.id}/filters").json()["line"] == "path:work/** tag:q3"
    assert team.eve.get(f"/channels/{conv.id}/filters").status_code == 404
    assert team.eve.put(f"/channels/{conv.id}/filters", json={"filters": None}).status_code == 404
    assert team.alice.get(f"/channels/{conv.id}/filters").json()["origin"] == "conversation"

    from kbdesk.store.api import BLOBS, TEAM
    from kbdesk.store.postgres.connection import PostgresStore

    # a team server whose own channels table kbdesk does not manage keeps no conversations
    monkeypatch.setattr(PostgresStore, "capabilities", property(lambda self: frozenset({BLOBS, TEAM})))
    answer = team.alice.get(f"/channels/{conv.id}/knowledge-bases")
    assert answer.status_code == 501 and "conversations" in answer.json()["message"]


def test_the_owners_own_identity_can_hold_a_token_too(team):
    own = team.desk.store.identity
    who = token_user(team.desk, own.username)
    assert (who.user_id, who.username) == (own.user_id, own.username)
    _token, secret = Tokens(team.desk.store).create(who.user_id, who.username)
    owner = _As(team.alice.client, secret)
    kb = owner.post("/knowledge-bases", json={"name": "Admin notes"}).json()
    assert kb["owner_id"] == own.user_id
    assert team.alice.get(f"/knowledge-bases/{kb['id']}").status_code == 404


def test_idle_users_desks_are_closed_beyond_the_cap(team, monkeypatch):
    from kbdesk.serve import users

    monkeypatch.setattr(users, "MAX_OPEN_DESKS", 1)
    desks = team.alice.client.app.app.app.state.kbdesk.desks  # Headers → BodyLimit → FastAPI

    def connections() -> int:
        return sql(
            team.uri,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'kbdesk'",
        )[0][0]

    kb = team.alice.post("/knowledge-bases", json={"name": "Diary"}).json()
    for who in (team.bob, team.eve, team.root, team.alice, team.bob):
        assert who.get("/knowledge-bases").status_code == 200
        time.sleep(0.1)  # the new desk's resume (background) has let go of it
    assert desks.open_count() <= 2  # the cap, plus one a request may still be holding
    assert connections() <= 2 * users.REQUEST_THREADS + 8
    assert team.alice.get(f"/knowledge-bases/{kb['id']}").json()["name"] == "Diary"  # opened again as needed
