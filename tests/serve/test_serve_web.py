"""Web pages over HTTP: fetched for a token only when the server's admin allows it, and
never from a private address the admin did not name."""

from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from kbdesk.serve import create_app
from kbdesk.serve.users import token_user
from kbdesk.store.tokens import PERMISSIONS, Tokens
from web_site import Site

pytestmark = pytest.mark.slow  # a web server on loopback


def client(desk, **options):
    who = token_user(desk, "me")
    _token, secret = Tokens(desk.store).create(who.user_id, who.username, PERMISSIONS)
    api = TestClient(create_app(desk, **options), base_url="http://127.0.0.1/api", raise_server_exceptions=False)
    api.headers.update({"Authorization": f"Bearer {secret}"})
    return api


@pytest.mark.parametrize("backend", ["numpy"])
def test_a_server_fetches_nothing_unless_its_admin_allows_it(desk):
    with Site() as site, client(desk) as api:
        kb = api.post("/knowledge-bases", json={"name": "web", "keyword_only": True}).json()
        r = api.post(f"/knowledge-bases/{kb['id']}/documents/from-url", json={"url": f"{site.base}/cones.html"})
        assert r.status_code == 403 and "--url-sources" in r.json()["message"]
        assert site.requests == []


@pytest.mark.parametrize("backend", ["numpy"])
def test_allowed_it_fetches_public_pages_and_private_ones_only_of_hosts_the_admin_named(desk):
    with Site() as site:
        with client(desk, url_sources=True) as api:
            kb = api.post("/knowledge-bases", json={"name": "web", "keyword_only": True}).json()
            r = api.post(f"/knowledge-bases/{kb['id']}/documents/from-url", json={"url": f"{site.base}/cones.html"})
            assert r.status_code == 400 and "private-network address" in r.json()["message"]
            r = api.post(f"/knowledge-bases/{kb['id']}/documents/from-url", json={"url": "file:///etc/passwd"})
            assert r.status_code == 400 and "'file:' URLs are not fetched" in r.json()["message"]
        assert site.requests == []
        with client(desk, url_sources=True, url_hosts=["127.0.0.1"]) as api:
            kb = api.get("/knowledge-bases").json()["data"][0]
            r = api.post(f"/knowledge-bases/{kb['id']}/documents/from-url", json={"url": f"{site.base}/cones.html"})
            assert r.status_code == 202 and r.json() == {"url": f"{site.base}/cones.html", "accepted": True}
            deadline = time.monotonic() + 30
            docs = []
            while time.monotonic() < deadline:
                docs = api.get(f"/knowledge-bases/{kb['id']}/documents").json()["data"]
                if docs and docs[0]["status"] == "ready":
                    break
                time.sleep(0.1)
            assert [(d["filename"], d["status"]) for d in docs] == [(f"{site.base}/cones.html", "ready")]
