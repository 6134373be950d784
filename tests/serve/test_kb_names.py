"""A knowledge base's name cannot hide what it says: bidi controls (U+202E turns
"Docs‮txt.exe" around on screen), zero-width spaces, soft hyphens and other invisible
format characters (Unicode category Cf) are refused — in the library, on the command line
and over HTTP, on create and on rename — with one line naming the character; names in
scripts that spell with zero-width joiners, and emoji sequences, still work."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from serve_support import app_client

from kbdesk import open_desk
from kbdesk.cli.main import cli
from kbdesk.errors import InvalidInputError

DISGUISED = [
    ("Invoices\u202etxt.exe", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("Team\u2066Docs", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    ("Ad\u200bmin", "U+200B ZERO WIDTH SPACE"),
    ("Ad\u200dmin", "U+200D ZERO WIDTH JOINER"),  # next to ASCII a joiner joins nothing
    ("\ufeffDocs", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    ("Re\u00adports", "U+00AD SOFT HYPHEN"),
]
KEPT = [
    "Docs 📚",
    "\u0645\u0633\u062a\u0646\u062f\u0627\u062a\u200c\u0647\u0627",  # Persian "documents", with its ZWNJ
    "👨\u200d👩\u200d👧 family",
    "क्\u200dष नोट्स",
    "Café Notes",
]


def says(character: str) -> str:
    return f"knowledge base name must not contain invisible format characters ({character})"


@pytest.fixture
def desk(kbdesk_home):
    made = open_desk()
    yield made
    made.close()


@pytest.mark.parametrize(("name", "character"), DISGUISED, ids=[c.split()[0] for _, c in DISGUISED])
def test_the_library_refuses_a_disguised_name_on_create_and_rename(desk, name, character):
    with pytest.raises(InvalidInputError) as caught:
        desk.create_kb(name)
    assert says(character) in str(caught.value) and "\n" not in str(caught.value)
    desk.create_kb("Plain")
    with pytest.raises(InvalidInputError) as renamed:
        desk.rename_kb("Plain", name)
    assert says(character) in str(renamed.value)
    assert [kb.name for kb in desk.list_kbs()] == ["Plain"]


def test_names_that_spell_with_joiners_and_emoji_are_kept(desk):
    for name in KEPT:
        assert desk.create_kb(name).name == name
    assert sorted(kb.name for kb in desk.list_kbs()) == sorted(KEPT)


def test_the_command_line_refuses_it_in_one_line(desk):
    runner = CliRunner()
    made = runner.invoke(cli, ["kb", "create", "Invoices\u202etxt.exe"])
    assert made.exit_code != 0 and "Traceback" not in made.output
    assert says("U+202E RIGHT-TO-LEFT OVERRIDE") in made.output and len(made.output.strip().splitlines()) == 1
    assert "\u202e" not in made.output  # the refusal names the character, never sends it to the terminal
    assert runner.invoke(cli, ["kb", "create", "Plain"]).exit_code == 0
    renamed = runner.invoke(cli, ["kb", "rename", "Plain", "Ad\u200bmin"])
    assert renamed.exit_code != 0 and says("U+200B ZERO WIDTH SPACE") in renamed.output


def test_http_refuses_it_with_a_400(desk):
    client, auth = app_client(desk)
    with client:
        client.headers.update(auth)
        made = client.post("/knowledge-bases", json={"name": "Team\u2066Docs"})
        assert made.status_code == 400 and says("U+2066 LEFT-TO-RIGHT ISOLATE") in made.json()["message"]
        kb = client.post("/knowledge-bases", json={"name": "Plain"}).json()
        renamed = client.put(f"/knowledge-bases/{kb['id']}", json={"name": "Re\u00adports"})
        assert renamed.status_code == 400 and says("U+00AD SOFT HYPHEN") in renamed.json()["message"]
        assert [k["name"] for k in client.get("/knowledge-bases").json()["data"]] == ["Plain"]
