"""The HTTP search body's ``filters``: over real HTTP on loopback, only matching documents
come back and the answer says which filters applied; a bad filter is a 400 whose one line
names the field; the OpenAPI document describes every field."""

from __future__ import annotations

import pytest
from serve_support import ServeProcess, app_client, make_token

from kbdesk import open_desk
from kbdesk.filter_fields import FIELDS
from kbdesk.filters import DATE_FIELDS, Filters
from vault_support import MATCHING, vault_kb


def found(answer) -> set[str]:
    assert answer.status_code == 200, answer.text
    return {r["source"] for r in answer.json()["data"]}


@pytest.mark.slow
def test_a_filtered_search_over_http_returns_only_matching_documents(tmp_path, kbdesk_home):
    token = make_token("--user", "me")
    server = ServeProcess(tmp_path)
    try:
        with server.client(token) as api:
            kb = api.post("/knowledge-bases", json={"name": "notes"}).json()
            desk = open_desk()
            vault_kb(desk, kb["id"], create=False)
            desk.close()
            url = f"/knowledge-bases/{kb['id']}/search"
            answer = api.post(
                url, json={"query": "roadmap", "limit": 10, "filters": {"tags": ["q3"], "path": "work/**"}}
            )
            assert found(answer) == MATCHING
            assert answer.json()["filters"] == {"path": ["work/**"], "tags": ["q3"]}
            assert "filters" not in api.post(url, json={"query": "roadmap"}).json()
            assert found(api.post(url, json={"query": "roadmap", "filters": {"type": "pdf"}})) == {
                "work/roadmap-review.pdf"
            }
            refused = api.post(url, json={"query": "roadmap", "filters": {"since": "last week"}})
            assert refused.status_code == 400
            assert refused.json() == {
                "error": "bad_request",
                "message": "filters: 'since' must be a date like 2026-11-01 (or 2026-11-01T09:30), not 'last week'",
            }
    finally:
        server.stop()


@pytest.fixture
def api(kbdesk_home):
    desk = open_desk()
    vault_kb(desk)
    client, auth = app_client(desk)
    with client:
        client.headers.update(auth)
        client.kb_id = desk.kb("notes").id
        yield client
    desk.close()


def test_every_filter_field_narrows(api):
    url = f"/knowledge-bases/{api.kb_id}/search"

    def search(**filters):
        return found(api.post(url, json={"query": "roadmap", "limit": 10, "filters": filters}))

    assert search(exclude=["work/**"]) == {"home/roadmap.md"}
    assert search(since="2026-10-01", type=["md"]) == {
        "work/roadmap.md",
        "work/plans/roadmap-draft.md",
        "home/roadmap.md",
    }
    assert search(until="2026-06-30") == {"work/old-roadmap.md"}
    assert search(any_tags="q2,draft") == {"work/old-roadmap.md", "work/plans/roadmap-draft.md"}
    assert search(since="2020-01-01", date="indexed") == search()  # every document was indexed just now
    assert search() == {n for n, *_ in __import__("vault_support").NOTES}


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        ({"folder": "work"}, "unknown field 'filters.folder'"),
        ({"tags": 3}, "filters.tags:"),
        ({"date": "created"}, "filters.date:"),
        ({"until": "2026-02-30"}, "filters: 'until' must be a date"),
        ("tag:q3", "filters:"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_field(api, filters, says):
    answer = api.post(f"/knowledge-bases/{api.kb_id}/search", json={"query": "roadmap", "filters": filters})
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["error"] == "bad_request" and says in body["message"] and "\n" not in body["message"]


def test_the_openapi_document_describes_the_filters(api):
    schemas = api.get("/openapi.json").json()["components"]["schemas"]
    request = schemas["SearchRequest"]["properties"]["filters"]
    assert "before ranking" in request["description"]
    fields = schemas["SearchFilters"]["properties"]
    assert set(fields) == {spec.key for spec in FIELDS}
    assert all(f.get("description") for f in fields.values())
    date = next(choice for choice in fields["date"]["anyOf"] if "enum" in choice)
    assert tuple(date["enum"]) == DATE_FIELDS  # every date a filter compares, the document's own among them
    assert "filters" in schemas["SearchAnswer"]["properties"]
    paths = api.get("/openapi.json").json()["paths"]
    assert {"get", "put"} <= set(paths["/api/channels/{channel_id}/filters"])
    assert schemas["ChannelFilters"]["properties"]["filters"]["description"]
    assert all(f.get("description") for f in schemas["ChannelFiltersAnswer"]["properties"].values())


def test_a_conversations_default_filters_are_read_and_set_over_http(api):
    desk = open_desk()
    chat = desk.chat()
    chat.create_persona("Atlas", filters="path:work/**")
    plain, atlas = chat.new_conversation("plain"), chat.new_conversation("atlas", persona="Atlas")
    url = f"/channels/{plain.id}/filters"
    assert api.get(url).json() == {"filters": None, "effective": {}, "origin": None, "line": ""}
    assert api.get(f"/channels/{atlas.id}/filters").json() == {
        "filters": None,
        "effective": {"path": ["work/**"]},
        "origin": "persona",
        "line": "path:work/**",
    }

    answer = api.put(url, json={"filters": {"tags": "q3", "type": ["md"], "date": "document", "since": "2026-07-01"}})
    assert answer.status_code == 200, answer.text
    said = {"type": ["md"], "tags": ["q3"], "since": "2026-07-01T00:00:00+00:00", "date": "document"}
    assert answer.json() == {
        "filters": said,
        "effective": said,
        "origin": "conversation",
        "line": "type:md since:2026-07-01 date:document tag:q3",
    }
    assert api.get(url).json() == answer.json()
    assert chat.filters(plain.id) == Filters.from_dict(said)  # what its turns search with, in every face

    for body, says in (
        ({"filters": {"since": "last week"}}, "filters: 'since' must be a date like 2026-11-01"),
        ({"filters": {"folder": "work"}}, "unknown field 'filters.folder'"),
        ({"filters": {"date": "created"}}, "filters.date:"),
        ({"filters": "tag:q3"}, "filters:"),
        ({}, "filters"),
    ):
        refused = api.put(url, json=body)
        assert refused.status_code == 400, refused.text
        message = refused.json()["message"]
        assert says in message and "\n" not in message
    assert api.get(url).json() == answer.json()  # a refused change changes nothing

    cleared = api.put(url, json={"filters": None})
    assert cleared.status_code == 200 and cleared.json()["origin"] is None
    assert chat.filters(plain.id) == Filters()
    assert api.get("/channels/00000000-0000-4000-8000-000000000000/filters").status_code == 404
    desk.close()


def test_setting_a_conversations_filters_needs_the_write_permission(kbdesk_home):
    desk = open_desk()
    conv = desk.chat().new_conversation("mine")
    client, auth = app_client(desk, permissions=("kb.create",))  # no kb.write
    with client:
        client.headers.update(auth)
        assert client.get(f"/channels/{conv.id}/filters").status_code == 200
        assert client.put(f"/channels/{conv.id}/filters", json={"filters": {"tags": "q3"}}).status_code == 403
    desk.close()


def test_the_pathological_globs_answer_at_once_and_the_server_keeps_answering(api):
    from concurrent.futures import ThreadPoolExecutor

    from deadline_support import answers

    url = f"/knowledge-bases/{api.kb_id}/search"
    slow_for_a_regex = "*?" * 14 + "Z"

    def search(filters):
        return api.post(url, json={"query": "roadmap", "limit": 10, "filters": filters})

    with ThreadPoolExecutor(4) as pool:  # the bad requests in flight while someone else asks who they are
        bad = [pool.submit(search, {"path": slow_for_a_regex}) for _ in range(3)]
        me = answers(api.get, "/me")
        assert me.status_code == 200 and me.json()["user"]["name"] == "me"
        narrowed = answers(lambda: [f.result() for f in bad])
    assert all(found(a) == set() for a in narrowed)
    assert "no document matches the filter" in narrowed[0].json()["notes"][0]
    assert len(found(answers(search, {"exclude": slow_for_a_regex}))) == 5
    for filters, says in (
        ({"path": "*?" * 30 + "Z"}, "filters: 'path' has a glob with 60 wildcards (at most 32)"),
        ({"exclude": "**/" * 500}, "filters: 'exclude' has a glob of 1500 characters (at most 256)"),
    ):
        refused = answers(search, filters)
        assert refused.status_code == 400 and refused.json()["message"] == says
    assert answers(api.get, "/me").status_code == 200
