"""Remote KBs end to end: a real ``kbdesk serve`` on loopback holds the team's KB, this
desk holds its own; ``kbdesk remote``, ``kb list`` and ``search`` reach both."""

from __future__ import annotations

import json
import os

import pytest
from remote_support import TeamServer, local_kb
from serve_support import cli

pytestmark = pytest.mark.slow


@pytest.fixture
def team(tmp_path, kbdesk_home):
    server = TeamServer(tmp_path)
    env = {**os.environ, "TEAM_KB_TOKEN": server.token}
    local_kb(tmp_path, env)
    cli("remote", "add", "team", server.url, "--token-env", "TEAM_KB_TOKEN", env=env)
    server.env_desk = env
    yield server
    server.stop()


def test_remotes_are_listed_and_tested_without_ever_showing_the_token(team):
    env = team.env_desk
    for args in (("remote", "list"), ("remote", "list", "--json"), ("remote", "test", "team"), ("kb", "list")):
        run = cli(*args, env=env)
        assert team.token not in run.stdout + run.stderr, args
    listed = json.loads(cli("remote", "list", "--json", env=env).stdout)["data"]
    assert listed == [
        {"name": "team", "url": team.url, "token": "$TEAM_KB_TOKEN (set)", "ca_file": None, "allow_http": False}
    ]
    tested = json.loads(cli("remote", "test", "team", "--json", env=env).stdout)
    assert tested["kbs"] == ["Product Docs"] and tested["user"] and tested["engine"] == "sqlite"
    kbs = json.loads(cli("kb", "list", "--json", env=env).stdout)
    assert [kb["name"] for kb in kbs["data"]] == ["Notes"]
    assert [kb["name"] for kb in kbs["remote"]] == ["team:Product Docs"]
    assert "team:Product Docs" in cli("kb", "list", env={**env, "COLUMNS": "200"}).stdout


def test_one_search_cites_local_and_remote_sources(team):
    run = cli("search", "Notes", "team:Product Docs", "backups", "--json", env=team.env_desk)
    body = json.loads(run.stdout)
    assert {(r["kb"], r["source"]) for r in body["results"]} == {
        ("Notes", "notes.md"),
        ("team:Product Docs", "handbook.md"),
    }
    remote = next(r for r in body["results"] if r["kb"] == "team:Product Docs")
    assert "nightly at 02:00" in remote["content"] and remote["metadata"]["headings"]
    assert body["remotes"] == [{"remote": "team", "state": "searched", "reason": None, "kbs": ["team:Product Docs"]}]
    assert body["searched_kbs"] == ["Notes", "team:Product Docs"]
    # a filter means the same on both sides: it is sent to the server with the query
    for glob, expected in (("handbook*", {"handbook.md"}), ("notes*", {"notes.md"})):
        run = cli("search", "Notes", "team:Product Docs", "backups", "--path", glob, "--json", env=team.env_desk)
        assert {r["source"] for r in json.loads(run.stdout)["results"]} == expected, glob
    every = json.loads(cli("search", "team:*", "onboarding token", "--json", env=team.env_desk).stdout)
    assert [r["source"] for r in every["results"]] == ["handbook.md"]


def test_globs_that_would_freeze_a_regex_are_answered_by_both_sides(team):
    from deadline_support import answers

    def search(*flags: str):
        return answers(
            cli, "search", "Notes", "team:Product Docs", "backups", "--json", *flags, env=team.env_desk, check=False
        )

    slow_for_a_regex = "*?" * 14 + "Z"
    narrowed = json.loads(search("--path", slow_for_a_regex).stdout)
    assert narrowed["results"] == [] and narrowed["remotes"][0]["state"] == "searched"
    assert narrowed["filters"] == {"path": [slow_for_a_regex]}
    kept = json.loads(search("--exclude", slow_for_a_regex).stdout)
    assert {r["source"] for r in kept["results"]} == {"notes.md", "handbook.md"}
    refused = search("--exclude", "**/" * 500)
    assert refused.returncode != 0 and "--exclude has a glob of 1500 characters (at most 256)" in refused.stderr
    refused = search("--path", "*?" * 30 + "Z")
    assert refused.returncode != 0 and "--path has a glob with 60 wildcards (at most 32)" in refused.stderr


def test_a_stopped_server_leaves_local_results_and_a_notice(team):
    team.stop()
    run = cli("search", "Notes", "team:Product Docs", "backups", env=team.env_desk)
    assert run.returncode == 0
    assert "notes.md" in run.stdout and "handbook.md" not in run.stdout
    assert "remote 'team' was not searched" in run.stderr and "unreachable" in run.stderr
    alone = cli("search", "team:Product Docs", "backups", env=team.env_desk, check=False)
    assert alone.returncode == 1 and "remote 'team'" in alone.stderr and len(alone.stderr.strip().splitlines()) == 1


def test_a_wrong_token_is_one_line_naming_the_remote(team):
    env = {**team.env_desk, "TEAM_KB_TOKEN": "kbd_" + "x" * 43}
    tested = cli("remote", "test", "team", env=env, check=False)
    assert tested.returncode == 1 and len(tested.stderr.strip().splitlines()) == 1
    assert "remote 'team'" in tested.stderr and "refused the token" in tested.stderr and "x" * 43 not in tested.stderr
    run = cli("search", "Notes", "team:Product Docs", "backups", env=env)
    assert "notes.md" in run.stdout and "refused the token" in run.stderr


def test_remote_kbs_are_read_only_and_their_names_are_reserved(team, tmp_path):
    env = team.env_desk
    (tmp_path / "x.md").write_text("# x\n")
    for args in (
        ("add", "team:Product Docs", str(tmp_path / "x.md")),
        ("kb", "rm", "team:Product Docs", "--yes"),
        ("kb", "rename", "team:Product Docs", "X"),
    ):
        run = cli(*args, env=env, check=False)
        assert run.returncode != 0 and "read-only" in run.stderr and "remote 'team'" in run.stderr, run.stderr
    clash = cli("kb", "create", "team:mine", env=env, check=False)
    assert clash.returncode != 0 and "remote 'team'" in clash.stderr
    assert cli("remote", "remove", "team", env=env).returncode == 0
    assert json.loads(cli("remote", "list", "--json", env=env).stdout)["total"] == 0


@pytest.mark.postgres
def test_a_team_server_on_postgres_is_listed_and_searched_beside_the_local_kb(tmp_path, kbdesk_home, pg_uri):
    server = TeamServer(tmp_path, db=pg_uri)
    try:
        env = {**os.environ, "TEAM_KB_TOKEN": server.token}
        local_kb(tmp_path, env)
        cli("remote", "add", "team", server.url, "--token-env", "TEAM_KB_TOKEN", env=env)
        tested = json.loads(cli("remote", "test", "team", "--json", env=env).stdout)
        assert tested["engine"] == "postgres" and tested["kbs"] == ["Product Docs"]
        kbs = json.loads(cli("kb", "list", "--json", env=env).stdout)
        assert [kb["name"] for kb in kbs["remote"]] == ["team:Product Docs"]
        body = json.loads(cli("search", "Notes", "team:Product Docs", "backups", "--json", env=env).stdout)
        assert {(r["kb"], r["source"]) for r in body["results"]} == {
            ("Notes", "notes.md"),
            ("team:Product Docs", "handbook.md"),
        }
    finally:
        server.stop()
