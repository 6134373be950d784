"""The ingestion and provider commands through click's runner."""

import json
import os
import stat

import pytest
from click.testing import CliRunner

from ingest_support import GOOD_FILES, write_files
from kbdesk.cli.main import cli
from kbdesk.errors import KbdeskError
from kbdesk.paths import get_paths


@pytest.fixture
def run():
    runner = CliRunner()

    def invoke(*args, input=None, env=None):
        result = runner.invoke(cli, [str(a) for a in args], input=input, env=env)
        assert "Traceback" not in result.output
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke


def test_add_docs_status_rm(run, tmp_path):
    folder = write_files(tmp_path / "corpus", {**GOOD_FILES, "broken.txt": b"\x00\x01\x02\x03" * 64})
    run("kb", "create", "Team")
    r = run("add", "Team", folder)
    assert r.exit_code == 3  # some documents failed: each is listed with its reason
    assert "4 added" in r.stdout and "1 failed" in r.stdout
    assert "failed  broken.txt: binary file" in r.stderr  # errors go to stderr

    docs = json.loads(run("docs", "Team", "--json").stdout)
    assert docs["total"] == 5
    by_name = {d["filename"]: d for d in docs["data"]}
    assert by_name["broken.txt"]["status"] == "error" and by_name["guide.md"]["status"] == "ready"
    assert "binary file" in run("docs", "Team").stdout

    status = json.loads(run("doc", "status", "Team", "guide.md", "--json").stdout)
    assert set(status) == {"id", "status", "chunk_count", "error", "filename"}
    assert status["status"] == "ready" and status["chunk_count"] >= 1

    r = run("add", "Team", folder, "--json")
    summary = json.loads(r.stdout)
    assert sorted(summary["unchanged"]) == sorted(GOOD_FILES) and summary["embedding_calls"] == 0

    assert run("doc", "rm", "Team", status["id"][:8]).exit_code == 0
    assert "guide.md" not in run("docs", "Team").stdout
    hits = json.loads(run("search", "Team", "restore snapshot", "--json").stdout)["results"]
    assert all(h["source"] != "guide.md" for h in hits)


def test_add_reports_missing_paths(run, tmp_path):
    run("kb", "create", "Team")
    r = run("add", "Team", tmp_path / "nope", "--json")
    assert r.exit_code == 3
    body = json.loads(r.stdout)
    assert body["skipped"] == [{"path": str(tmp_path / "nope"), "reason": "no such file or folder"}]
    assert body["missing"] == [str(tmp_path / "nope")]


def test_a_missing_path_is_an_error_and_the_others_are_still_added(run, tmp_path):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    run("kb", "create", "Team")
    missing = tmp_path / "no\x1b]0;owned\x07such"  # a name that would retitle the terminal
    r = run("add", "Team", missing, folder)
    assert r.exit_code == 3
    assert r.stderr.splitlines() == [f"Error: no such file or folder: {tmp_path}/no\\x1b]0;owned\\x07such"]
    assert "\x1b" not in r.output
    assert f"{len(GOOD_FILES)} added" in r.stdout
    assert json.loads(run("docs", "Team", "--json").stdout)["total"] == len(GOOD_FILES)


def test_rebuild_and_resume_commands(run, tmp_path):
    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    run("kb", "create", "Team")
    run("add", "Team", folder)
    body = json.loads(run("rebuild", "Team", "--json").stdout)
    assert (body["total_docs"], body["rebuilding"], body["skipped"]) == (4, 4, 0)
    assert "4 rebuilt" in run("rebuild", "Team").stdout
    assert json.loads(run("resume", "--json").stdout)["resumed"] == []


def test_watch_picks_up_new_and_deleted_files(run, tmp_path):
    folder = write_files(tmp_path / "corpus", {"a.txt": "first file"})
    run("kb", "create", "Live")
    r = run("watch", "Live", folder, "--passes", "1")
    assert r.exit_code == 0 and "added a.txt" in r.stdout
    (folder / "a.txt").unlink()
    write_files(folder, {"b.txt": "second file"})
    r = run("watch", "Live", folder, "--passes", "1", "--poll", "--interval", "0.2")
    assert "added b.txt" in r.stdout and "removed a.txt" in r.stdout


def test_provider_commands_and_set_model(run, tmp_path, fake_openai):
    r = run(
        "provider", "add", "fake", "--kind", "custom", "--base-url", fake_openai.base_url, "--api-key-env", "FAKE_KEY"
    )
    assert r.exit_code == 0, r.output
    config = get_paths().config_file
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o600
    listed = json.loads(run("provider", "list", "--json").stdout)["data"]
    assert listed == [
        {"name": "fake", "kind": "custom", "base_url": fake_openai.base_url, "key": "env FAKE_KEY (not set)"}
    ]

    r = run("provider", "test", "fake", "--model", "nomic-embed-text", "--json", env={"FAKE_KEY": "sk-abc-123"})
    body = json.loads(r.stdout)
    assert body["dimensions"] == fake_openai.dimensions
    assert "nomic-embed-text" in body["embedding_candidates"] and "llama3.2" not in body["embedding_candidates"]
    assert "mystery" in body["embedding_candidates"]  # untyped models count (seed §0)
    assert fake_openai.requests[-1].headers["authorization"] == "Bearer sk-abc-123"

    # a key kept in the file: asked for, stored 0600, never printed
    r = run("provider", "add", "keyed", "--kind", "openai", "--store-key", input="sk-stored-SECRET\n")
    assert r.exit_code == 0 and "sk-stored-SECRET" not in r.output
    assert "sk-stored-SECRET" in config.read_text()
    listing = run("provider", "list").stdout
    assert "stored ••••••••" in listing and "sk-stored" not in listing

    folder = write_files(tmp_path / "corpus", GOOD_FILES)
    run("kb", "create", "Team")
    run("add", "Team", folder)
    r = run("kb", "set-model", "Team", "--provider", "fake", "--model", "nomic-embed-text", "--yes", "--json")
    body = json.loads(r.stdout)
    assert body["kb"]["embedding_config"]["model_id"] == "nomic-embed-text"
    assert body["kb"]["embedding_config"]["dimensions"] == fake_openai.dimensions
    assert json.loads(run("search", "Team", "backups", "--json").stdout)["mode"] == "hybrid"

    assert run("provider", "rm", "keyed").exit_code == 0
    assert "keyed" not in run("provider", "list").stdout
    r = run("provider", "test", "nothere")
    assert r.exit_code == 1 and "no provider named 'nothere'" in r.output


def test_provider_add_validates(run):
    r = run("provider", "add", "x")
    assert r.exit_code == 1 and "needs --base-url" in r.output
    r = run("provider", "add", "x", "--base-url", "ftp://nope")
    assert r.exit_code == 1 and "base_url must be an http" in r.output
    assert not get_paths().config_file.exists()  # nothing written when invalid


def test_a_local_provider_can_be_added_and_listed(run):
    assert run("provider", "add", "here", "--kind", "local").exit_code == 0
    listed = json.loads(run("provider", "list", "--json").stdout)["data"]
    assert listed == [{"name": "here", "kind": "local", "base_url": "(in this process)", "key": "none"}]


def test_both_faces_follow_one_set_of_provider_rules(run, tmp_path):
    """The CLI and the TUI's Settings save and remove providers by the same rules
    (kbdesk.provider_config): a role's provider cannot be removed, other settings stay."""
    from kbdesk.config import load_config
    from kbdesk.paths import get_paths
    from kbdesk.tui.services import ProviderForm, remove_provider, save_provider

    path = get_paths().config_file
    assert run("provider", "add", "srv", "--kind", "ollama", "--timeout", "42").exit_code == 0
    assert run("model", "set", "chat", "srv", "llama3.2").exit_code == 0
    r = run("provider", "rm", "srv")
    assert r.exit_code == 1 and "the chat role uses 'srv'" in r.output
    with pytest.raises(KbdeskError) as refused:
        remove_provider(path, "srv")
    assert "the chat role uses 'srv'" in str(refused.value)  # the same refusal, word for word
    save_provider(
        path,
        ProviderForm(name="srv", kind="ollama", base_url="http://localhost:11434/v1", api_key_env="", original="srv"),
    )
    import tomllib

    assert load_config(path).providers["srv"].timeout == 42  # kept: not a field of the form
    assert "base_url" not in tomllib.loads(path.read_text())["providers"]["srv"]  # the kind's default: not written
    assert run("provider", "add", "srv", "--kind", "ollama").exit_code == 0
    assert load_config(path).providers["srv"].timeout == 42  # the CLI keeps it too
