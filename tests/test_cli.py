"""The CLI through click's runner: tables for people, JSON for scripts, one-line errors."""

import json

import pytest
from click.testing import CliRunner

from helpers import axis
from kbdesk import open_desk
from kbdesk.cli.main import cli


@pytest.fixture
def run():
    runner = CliRunner()

    def invoke(*args, input=None):
        result = runner.invoke(cli, list(args), input=input)
        assert "Traceback" not in result.output
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke


def test_create_list_show_rename_describe_rm(run):
    r = run("kb", "create", "Handbook", "-d", "Team handbook", "--chunk-size", "500", "--chunk-overlap", "50", "--json")
    assert r.exit_code == 0, r.output
    created = json.loads(r.stdout)
    assert created["name"] == "Handbook" and created["embedding_config"]["chunk_size"] == 500

    r = run("kb", "list", "--json")
    listed = json.loads(r.stdout)
    assert listed["total"] == 1 and listed["data"][0]["id"] == created["id"]
    assert "Handbook" in run("kb", "list").output

    r = run("kb", "show", created["id"][:8])
    assert "Team handbook" in r.output and "500 chars, overlap 50" in r.output

    assert run("kb", "rename", "handbook", "Guide").exit_code == 0
    assert run("kb", "describe", "Guide", "How we work").exit_code == 0
    shown = json.loads(run("kb", "show", "Guide", "--json").stdout)
    assert shown["name"] == "Guide" and shown["description"] == "How we work"

    r = run("kb", "rm", "Guide")
    assert r.exit_code == 1 and "add --yes" in r.output
    assert run("kb", "rm", "Guide", "--yes").exit_code == 0
    assert json.loads(run("kb", "list", "--json").stdout)["total"] == 0


def test_error_paths_are_one_line_and_non_zero(run):
    run("kb", "create", "dup")
    cases = [
        (["kb", "create", "DUP"], "already exists"),
        (["kb", "show", "missing"], "no knowledge base named 'missing'"),
        (["kb", "rename", "dup", ""], "must not be empty"),
        (["search", "dup", "q", "--limit", "50"], "limit must be between 1 and 20"),
        (["search", "dup", "q", "--mode", "vector"], "vector search needs vectors"),
        (["search", "missing", "q"], "no knowledge base named 'missing'"),
        (["kb", "create", "x", "--provider", "openai"], "--provider needs --model"),
    ]
    for args, message in cases:
        r = run(*args)
        assert r.exit_code != 0, args
        assert message in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1, r.output


def test_usage_errors_come_from_click(run):
    r = run("search")
    assert r.exit_code == 2 and "Missing argument" in r.output
    r = run("kb", "create", "x", "--chunk-size", "zero")
    assert r.exit_code == 2


def test_search_over_a_kb_filled_through_the_library(run, kbdesk_home):
    with open_desk() as desk:
        desk.create_kb("Ops")
        desk.create_kb("Pets", model_id="toy", dimensions=8)
        desk.add_document(
            "Ops",
            "runbook.md",
            ["Rotate the TLS certificates every ninety days.", "Page the on-call engineer for sev1 incidents."],
        )
        desk.add_document("Pets", "cats.txt", ["Cats groom themselves daily."], vectors=[axis(0)])

    r = run("search", "Ops", "Pets", "certificates rotation", "--json")
    assert r.exit_code == 0, r.output
    body = json.loads(r.stdout)
    assert body["searched_kbs"] == ["Ops", "Pets"] and body["query"] == "certificates rotation"
    assert [set(x) for x in body["results"]] == [{"content", "source", "kb", "similarity", "metadata"}]
    assert body["results"][0]["source"] == "runbook.md" and body["results"][0]["kb"] == "Ops"

    r = run("search", "Ops", "on-call incidents")
    assert r.exit_code == 0
    assert "runbook.md" in r.output and "Page the on-call engineer" in r.output

    r = run("search", "Ops", "on-call incidents", "--explain")
    assert "kw rank" in r.output and "runbook.md" in r.output and "result" in r.output
    body = json.loads(run("search", "Ops", "on-call incidents", "--explain", "--json").stdout)
    assert body["explain"][0]["keyword_rank"] == 1 and body["explain"][0]["cut"] is None

    # a KB with an embedding model but no provider set up: keyword search, and a note says why
    r = run("search", "Pets", "cats")
    assert "cats.txt" in r.output and "no provider" in r.output


def test_search_prints_document_text_literally(run):
    with open_desk() as desk:
        desk.create_kb("Markup")
        desk.add_document("Markup", "odd.txt", ["[bold red]not markup[/] and [link=x]brackets[/link]"])
    r = run("search", "Markup", "markup brackets")
    assert "[bold red]not markup[/]" in r.output


def test_doctor_reports_backend_and_fts(run):
    r = run("doctor", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["vector_backend"]["active"] == "sqlite-vec"
    assert "sqlite-vec" in report["vector_backend"]["reason"]
    assert report["fts5"] is True and report["database"]["schema_version"] >= 3
    assert report["paths"]["db"].endswith("kbdesk.db")
    human = run("doctor").output
    assert "vector backend" in human and "FTS5 available" in human


def test_doctor_says_why_numpy_is_used(run, monkeypatch):
    monkeypatch.setenv("KBDESK_VECTOR_BACKEND", "numpy")
    report = json.loads(run("doctor", "--json").stdout)
    assert report["vector_backend"]["active"] == "numpy"
    assert "numpy requested" in report["vector_backend"]["reason"]


def test_db_option_selects_another_file(run, tmp_path):
    other = tmp_path / "elsewhere.db"
    run("--db", str(other), "kb", "create", "Away")
    assert other.exists()
    assert json.loads(run("kb", "list", "--json").stdout)["total"] == 0
    assert json.loads(run("--db", str(other), "kb", "list", "--json").stdout)["total"] == 1


def test_every_command_has_help(run):
    from kbdesk.cli.main import cli as group

    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    for path, cmd in walk(group, []):
        assert cmd.help, f"kbdesk {' '.join(path)} has no help text"
        assert run(*path, "--help").exit_code == 0
