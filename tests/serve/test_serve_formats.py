"""What the HTTP API says it accepts is the table of formats (kbdesk.ingest.formats): the
OpenAPI description of an upload names every suffix kbdesk reads, an upload's 415 as
many whole ones as its one line holds."""

from __future__ import annotations

import re

import pytest
from serve_support import app_client

from kbdesk import open_desk
from kbdesk.ingest.formats import SUPPORTED_SUFFIXES
from kbdesk.serve.errors import MAX_MESSAGE


@pytest.fixture
def api(kbdesk_home):
    desk = open_desk()
    client, auth = app_client(desk)
    with client:
        client.headers.update(auth)
        client.kb_id = client.post("/knowledge-bases", json={"name": "docs"}).json()["id"]
        yield client
    desk.close()


def _named(text: str) -> set[str]:
    return {"." + word for word in re.findall(r"\b[a-z0-9]+\b", text.split("reads", 1)[1])}


def test_the_openapi_description_of_an_upload_names_every_suffix_of_the_table(api):
    schemas = api.get("/openapi.json").json()["components"]["schemas"]
    (body,) = [s for name, s in schemas.items() if name.startswith("Body_upload")]
    described = body["properties"]["file"]["description"]
    assert _named(described) == SUPPORTED_SUFFIXES  # .vtt, .py, .tex, .org: not a hand-kept "TXT, MD, CSV…"


def test_an_upload_kbdesk_cannot_read_is_told_the_suffixes_it_can_in_whole_words(api):
    """The table has more suffixes than a message holds: whole ones, then how many more,
    never a list cut in the middle of a suffix."""
    answer = api.post(f"/knowledge-bases/{api.kb_id}/documents", files={"file": ("song.mp3", b"ID3")})
    assert answer.status_code == 415, answer.text
    message = answer.json()["message"]
    assert message.startswith("kbdesk cannot read '.mp3' files; it reads ") and "\n" not in message
    assert len(message) <= MAX_MESSAGE and not message.endswith("…")
    named = _named(message.rsplit(" and ", 1)[0])
    assert named <= SUPPORTED_SUFFIXES and len(named) > 30
    assert message.endswith(f" and {len(SUPPORTED_SUFFIXES) - len(named)} more")
