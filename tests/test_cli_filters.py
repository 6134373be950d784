"""``kbdesk search`` narrowed by --path, --exclude, --type, --since, --until, --tag and
--any-tag: only matching documents come back, --json says the filters applied, a bad
filter is one line naming the flag."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kbdesk import open_desk
from kbdesk.cli.main import cli
from vault_support import MATCHING, vault_kb


@pytest.fixture
def run():
    desk = open_desk()
    vault_kb(desk)
    desk.close()
    runner = CliRunner()

    def invoke(*args):
        result = runner.invoke(cli, list(args))
        assert "Traceback" not in result.output
        return result

    return invoke


def sources(result) -> set[str]:
    assert result.exit_code == 0, result.output
    return {r["source"] for r in json.loads(result.stdout)["results"]}


def test_tag_and_path_return_only_matching_documents(run):
    r = run("search", "notes", "roadmap", "--tag", "q3", "--path", "work/**", "--json")
    assert sources(r) == MATCHING
    assert json.loads(r.stdout)["filters"] == {"path": ["work/**"], "tags": ["q3"]}
    text = run("search", "notes", "roadmap", "--tag", "q3", "--path", "work/**").output
    assert "path work/** · tags q3" in text and "home/roadmap.md" not in text


def test_each_flag_narrows(run):
    everything = sources(run("search", "notes", "roadmap", "-n", "20", "--json"))
    assert len(everything) == 5
    assert sources(run("search", "notes", "roadmap", "--type", "pdf", "--json")) == {"work/roadmap-review.pdf"}
    assert sources(run("search", "notes", "roadmap", "--exclude", "work/**", "--json")) == {"home/roadmap.md"}
    assert sources(run("search", "notes", "roadmap", "--since", "2026-10-01", "--json")) == {
        "work/roadmap.md",
        "work/plans/roadmap-draft.md",
        "home/roadmap.md",
    }
    assert sources(run("search", "notes", "roadmap", "--until", "2026-06-30", "--json")) == {"work/old-roadmap.md"}
    assert sources(run("search", "notes", "roadmap", "--any-tag", "q2", "--any-tag", "draft", "--json")) == {
        "work/old-roadmap.md",
        "work/plans/roadmap-draft.md",
    }
    assert sources(run("search", "notes", "roadmap", "--tag", "q3", "--tag", "draft", "--json")) == {
        "work/plans/roadmap-draft.md"
    }


def test_a_filter_nothing_matches_says_so(run):
    r = run("search", "notes", "roadmap", "--tag", "nothing-has-this")
    assert r.exit_code == 0 and "No results" in r.output and "tags nothing-has-this" in r.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--since", "last week"], "--since must be a date like 2026-11-01"),
        (["--until", "2026-13-01"], "--until must be a date"),
        (["--date", "created"], "Invalid value for '--date'"),
    ],
)
def test_a_bad_filter_is_one_line_naming_the_flag(run, args, says):
    r = run("search", "notes", "roadmap", *args)
    assert r.exit_code != 0 and says in r.output
    if says.startswith("--"):
        assert r.exit_code == 1 and r.output.strip().count("\n") == 0


def test_help_says_what_each_filter_does(run):
    text = run("search", "--help").output
    for flag in ("--path", "--exclude", "--type", "--since", "--until", "--date", "--tag", "--any-tag"):
        assert flag in text


def test_a_vault_added_from_disk_is_searched_by_its_front_matter_and_inline_tags(tmp_path):
    vault = tmp_path / "vault"
    for rel, text in {
        "work/roadmap.md": "---\ntitle: Q3 roadmap\ntags: [q3, planning]\n---\n# Roadmap\n\nThe roadmap for Q3.\n",
        "work/infra/infra.md": "# Infra\n\nThe infra roadmap #q3 #infra.\n",
        "work/retro.md": "---\ntags: q4\n---\nA roadmap retro.\n",
        "home/garden.md": "---\ntags:\n  - q3\n---\nThe garden roadmap.\n",
    }.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    runner = CliRunner()
    assert runner.invoke(cli, ["kb", "create", "notes"]).exit_code == 0
    assert runner.invoke(cli, ["add", "notes", str(vault)]).exit_code == 0
    r = runner.invoke(cli, ["search", "notes", "roadmap", "--tag", "q3", "--path", "work/**", "--json"])
    assert sources(r) == {"work/roadmap.md", "work/infra/infra.md"}


def test_a_parent_tag_and_the_documents_own_date_from_the_command_line(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "infra.md").write_text("---\ndate: 2024-03-02\n---\nThe infra roadmap #work/infra.\n")
    (vault / "team.md").write_text("---\ndate: 2023-12-24\ntags: [work]\n---\nThe team roadmap.\n")
    (vault / "loose.md").write_text("The loose roadmap, no date of its own, #workshop.\n")
    runner = CliRunner()
    assert runner.invoke(cli, ["kb", "create", "notes"]).exit_code == 0
    assert runner.invoke(cli, ["add", "notes", str(vault)]).exit_code == 0

    def found(*flags):
        return sources(runner.invoke(cli, ["search", "notes", "roadmap", "--json", *flags]))

    assert found("--tag", "work") == {"infra.md", "team.md"}
    assert found("--tag", "work/infra") == {"infra.md"}
    assert found("--date", "document", "--since", "2024-01-01") == {"infra.md"}
    assert found("--date", "document", "--until", "2024-12-31") == {"infra.md", "team.md"}
    assert found("--since", "2024-01-01") == {"infra.md", "team.md", "loose.md"}  # the files were written today
    text = runner.invoke(cli, ["search", "notes", "roadmap", "--date", "document", "--since", "2024-01-01"]).output
    assert "dated since 2024-01-01" in text
    refused = runner.invoke(cli, ["search", "notes", "roadmap", "--date", "created", "--since", "2024-01-01"])
    assert refused.exit_code != 0 and "'created' is not one of 'modified', 'indexed', 'document'" in refused.output
