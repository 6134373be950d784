"""Path globs are matched without backtracking: the patterns that freeze a regex matcher
(``*?`` × 14 + ``Z``, ``*?`` × 30 + ``Z``, ``**/`` × 500) answer at once — with results
or a one-line refusal — in the library and on the command line; the syntax means what
docs/SEARCH.md says; a glob past the bounds is refused naming the field or the flag."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from deadline_support import answers
from kbdesk import open_desk
from kbdesk.cli.main import cli
from kbdesk.errors import InvalidInputError
from kbdesk.filters import Filters
from kbdesk.globs import MAX_GLOB_CHARS, MAX_GLOBS, MAX_WILDCARDS, GlobSet, glob_matcher
from vault_support import vault_kb

SLOW_BUT_ALLOWED = "*?" * 14 + "Z"  # 28 wildcards: within the bounds, a regex takes over 20 s per name
TOO_MANY_WILDCARDS = "*?" * 30 + "Z"
TOO_LONG = "**/" * 500
PATHS = ["work/roadmap.md", "a" * 60, "x/" * 40 + "y" * 40, "work/plans/deep/er/roadmap-draft.md", ""]


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        ("*.md", ["a.md", "work/a.md", "x/y/z.md"], ["a.mdx", "a.pdf"]),
        ("work/*", ["work/a.md"], ["work/plans/a.md", "home/a.md"]),
        ("work/**", ["work/a.md", "work/plans/a.md"], ["home/work/a.md", "workshop/a.md"]),
        ("**/draft*", ["draft.md", "a/draft1", "a/b/draft"], ["a/b/mydraft", "drafts/x"]),
        ("work/**/q?.md", ["work/q3.md", "work/a/b/q4.md"], ["work/q33.md", "work/a/q/.md"]),
        ("notes/2026-[01][0-9]-*", ["notes/2026-11-01.md", "notes/2026-07-x"], ["notes/2026-21-01.md"]),
        ("[!.]*", ["a", "b.md", "dir/x"], [".hidden", "dir/.x"]),
        ("a**b", ["ab", "a/x/b", "axb"], ["a/x/c"]),
        ("x[a/]y", ["xay"], ["x/y"]),
    ],
)
def test_the_glob_syntax(pattern, matching, not_matching):
    match = glob_matcher((pattern,))
    assert [p for p in matching if not match(p)] == []
    assert [p for p in not_matching if match(p)] == []


def test_several_globs_match_when_any_does():
    match = glob_matcher(("work/**", "*.pdf"))
    assert match("work/a.md") and match("home/b.pdf") and not match("home/b.md")


@pytest.mark.parametrize(
    "pattern",
    [SLOW_BUT_ALLOWED, TOO_MANY_WILDCARDS, TOO_LONG, TOO_LONG + "x", "*" * 3000 + "Z"],
    ids=["star-q-14", "star-q-30", "folders-500", "folders-500-x", "stars-3000"],
)
def test_the_matcher_never_backtracks_whatever_the_pattern(pattern):
    # past the bounds on purpose: the matcher itself stays linear, the bounds only keep it cheap
    def run() -> list[bool]:
        match = GlobSet([pattern])
        return [match(p) for p in PATHS * 50]

    found = answers(run)
    assert found == [GlobSet([pattern])(p) for p in PATHS] * 50
    assert not any(found[:4])  # nothing ends in Z or x here
    assert GlobSet([TOO_LONG + "y"])("x/" * 40 + "y" * 40) is False
    assert GlobSet([TOO_LONG + "y*"])("a/b/y") is True


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"path": TOO_MANY_WILDCARDS}, f"filters: 'path' has a glob with 60 wildcards (at most {MAX_WILDCARDS})"),
        ({"exclude": TOO_LONG}, f"filters: 'exclude' has a glob of 1500 characters (at most {MAX_GLOB_CHARS})"),
        ({"path": ["*.md"] * (MAX_GLOBS + 1)}, f"filters: 'path' has {MAX_GLOBS + 1} globs (at most {MAX_GLOBS})"),
    ],
)
def test_a_glob_past_the_bounds_is_one_line_naming_the_field(data, says):
    with pytest.raises(InvalidInputError) as caught:
        Filters.from_dict(data)
    assert str(caught.value) == says
    ((field, value),) = data.items()
    with pytest.raises(InvalidInputError) as made:  # the library's own type checks too
        fields: dict[str, Any] = {field: tuple(value) if isinstance(value, list) else (value,)}
        Filters(**fields)
    assert str(made.value) == says


@pytest.fixture
def notes(kbdesk_home):
    desk = open_desk()
    vault_kb(desk)
    yield desk
    desk.close()


def test_the_library_answers_the_pathological_globs(notes):
    narrowed = answers(notes.search, ["notes"], "roadmap", filters={"path": SLOW_BUT_ALLOWED})
    assert narrowed.results == [] and narrowed.notes[0].startswith("no document matches the filter")
    everything = answers(notes.search, ["notes"], "roadmap", limit=10, filters={"exclude": SLOW_BUT_ALLOWED})
    assert len(everything.results) == 5
    for field, pattern in (("path", TOO_MANY_WILDCARDS), ("exclude", TOO_LONG)):
        with pytest.raises(InvalidInputError, match=f"filters: '{field}' has a glob"):
            answers(notes.search, ["notes"], "roadmap", filters={field: pattern})


def test_the_command_line_answers_the_pathological_globs(notes):
    runner = CliRunner()

    def search(*args: str):
        result = answers(runner.invoke, cli, ["search", "notes", "roadmap", "--json", "-n", "10", *args])
        assert "Traceback" not in result.output
        return result

    narrowed = search("--path", SLOW_BUT_ALLOWED)
    assert narrowed.exit_code == 0 and json.loads(narrowed.stdout)["results"] == []
    kept = search("--exclude", SLOW_BUT_ALLOWED)
    assert kept.exit_code == 0 and len(json.loads(kept.stdout)["results"]) == 5
    many = search("--path", TOO_MANY_WILDCARDS)
    assert many.exit_code != 0
    assert f"--path has a glob with 60 wildcards (at most {MAX_WILDCARDS})" in many.output
    long = search("--exclude", TOO_LONG)
    assert long.exit_code != 0 and len(long.output.strip().splitlines()) == 1
    assert f"--exclude has a glob of 1500 characters (at most {MAX_GLOB_CHARS})" in long.output


def test_every_engine_answers_the_pathological_globs(engine_desk):
    # the filter is resolved in Python for both engines: Postgres too ("**/" x 500 took 11 s there)
    engine_desk.create_kb("Docs", keyword_only=True)
    for i in range(20):
        engine_desk.add_document("Docs", f"area-{i % 4}/project/notes-{i}-about-vacuum.md", [f"Vacuum notes {i}."])
    narrowed = answers(engine_desk.search, ["Docs"], "vacuum", filters={"path": SLOW_BUT_ALLOWED})
    assert narrowed.results == []
    kept = answers(engine_desk.search, ["Docs"], "vacuum", limit=20, filters={"exclude": SLOW_BUT_ALLOWED})
    assert len(kept.results) == 20
    deep = answers(engine_desk.search, ["Docs"], "vacuum", limit=20, filters={"path": "**/" * 15 + "*-1*"})
    assert sorted(r.source for r in deep.results) == sorted(
        f"area-{i % 4}/project/notes-{i}-about-vacuum.md" for i in (1, *range(10, 20))
    )
    with pytest.raises(InvalidInputError, match="filters: 'exclude' has a glob of 1500 characters"):
        answers(engine_desk.search, ["Docs"], "vacuum", filters={"exclude": TOO_LONG})
