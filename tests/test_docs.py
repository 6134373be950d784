"""The docs say what the code does: claims that a machine can check are checked here."""

from __future__ import annotations

import doctest
import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import kbdesk
from kbdesk.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "kbdesk"
README = (ROOT / "README.md").read_text(encoding="utf-8")

# the commands that take no --json, as the README names them
NO_JSON = {"chat", "serve", "mcp"}


def commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, click.Command]]:
    out = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            out += commands(command, (*path, name))
        else:
            out.append((" ".join((*path, name)), command))
    return out


def test_the_package_docstring_example_runs():
    result = doctest.testmod(kbdesk, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0


def test_every_package_is_in_the_architecture_map():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    code_map = text.split("```", 2)[1]
    packages = sorted(p.parent.relative_to(SRC).as_posix() for p in SRC.rglob("__init__.py") if p.parent != SRC)
    top = sorted({p.split("/")[0] for p in packages})
    missing = [p for p in top if not re.search(rf"^\s+{re.escape(p)}/", code_map, re.M)]
    assert packages and not missing, f"packages not in docs/ARCHITECTURE.md's map: {missing}"


def test_the_readme_names_the_commands_without_json():
    claim = re.search(r"Every command but (.+?) takes `--json`", README.replace("\n", " "))
    assert claim, "the README's --json sentence changed: update NO_JSON and this test"
    named = set(re.findall(r"`(\w+)`", claim.group(1)))
    assert named == NO_JSON
    without = sorted(name for name, cmd in commands(cli) if not any("--json" in p.opts for p in cmd.params))
    assert without == sorted(NO_JSON), f"commands without --json that the README does not name: {without}"


def test_json_of_commands_that_change_things_reads_back(tmp_path, monkeypatch):
    run = CliRunner().invoke
    assert run(cli, ["note", "add", "remember the milk"]).exit_code == 0
    note = json.loads(run(cli, ["note", "list", "--json"]).output)["data"][0]
    out = run(cli, ["note", "rm", note["id"][:8], "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["deleted"]["id"] == note["id"]
    out = run(cli, ["provider", "add", "here", "--kind", "ollama", "--json"])
    said = json.loads(out.output)
    said.pop("warning", None)  # nothing answers on Ollama's port here (the test does not start it)
    assert out.exit_code == 0 and said == {
        "provider": "here",
        "kind": "ollama",
        "base_url": "http://localhost:11434/v1",
    }
    out = run(cli, ["model", "set", "chat", "here", "tiny", "--json"])
    assert json.loads(out.output) == {"role": "chat", "provider": "here", "model": "tiny"}


def test_watch_json_is_one_event_per_line(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nalpha beta\n", encoding="utf-8")
    run = CliRunner().invoke
    assert run(cli, ["kb", "create", "notes"]).exit_code == 0
    out = run(cli, ["watch", "notes", str(folder), "--poll", "--passes", "1", "--json"])
    assert out.exit_code == 0, out.output
    events = [json.loads(line) for line in out.output.splitlines()]
    assert {"kind": "added", "name": "a.md"}.items() <= next(e for e in events if e["kind"] == "added").items()
    assert events[0]["kind"] == "watching" and events[-1]["kind"] == "pass"
    assert all(set(e) == {"at", "kind", "name", "detail"} for e in events)


def test_docs_name_no_machine_of_ours():
    """Commands in the docs work on anyone's machine: no developer's folders or mounts."""
    local = re.compile(r"/work/|/root/|/mnt/|/home/(?!me/)|scratch\d")
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        hits = [line for line in doc.read_text(encoding="utf-8").splitlines() if local.search(line)]
        assert not hits, f"{doc.name}: {hits[:3]}"


@pytest.mark.slow
def test_the_readme_main_command_runs_twice_and_searches_both_times(tmp_path):
    """The README's first command (after installing) can be run again as it is: the second
    run finds the KB there, skips the unchanged files and still ends with the results."""
    import os
    import subprocess
    import sys

    block = README.split("<!-- main-command -->", 1)[1].split("```sh", 1)[1].split("```", 1)[0].strip()
    steps = [step.strip() for step in block.split("&&")]
    assert steps[:2] == ["python3 -m venv .venv", ".venv/bin/pip install -q ."]  # the install, done here already
    kbdesk = str(Path(sys.executable).with_name("kbdesk"))
    script = " && ".join(step.replace(".venv/bin/kbdesk", kbdesk, 1) for step in steps[2:])
    env = {**os.environ, "KBDESK_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    for run in (1, 2):
        done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"run {run}: {done.stderr}"
        assert "restore" in done.stdout.lower() and "backup" in done.stdout.lower(), done.stdout
    assert "already exists" in done.stdout


def test_exist_ok_takes_the_kb_that_is_there_only_if_it_embeds_as_asked():
    run = CliRunner().invoke
    assert run(cli, ["kb", "create", "demo"]).exit_code == 0
    again = run(cli, ["kb", "create", "demo"])
    assert again.exit_code == 1 and "already exists" in again.output
    ok = run(cli, ["kb", "create", "demo", "--exist-ok", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.output)["existed"] is True
    other = run(cli, ["kb", "create", "demo", "--exist-ok", "--model", "nomic-embed-text"])
    assert other.exit_code == 1 and "has no embedding model, not nomic-embed-text" in other.output


def test_a_kb_whose_documents_all_failed_says_so(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    for i in range(3):
        (folder / f"bad{i}.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    (tmp_path / "fine.md").write_text("# Fine\n\nall good here\n", encoding="utf-8")
    run = CliRunner().invoke
    assert run(cli, ["kb", "create", "broken"]).exit_code == 0
    assert run(cli, ["add", "broken", str(folder)]).exit_code == 3
    listed = json.loads(run(cli, ["kb", "list", "--json"]).output)["data"][0]
    assert listed["failed_documents"] == 3 and listed["document_count"] == 3
    assert "error (3 failed)" in run(cli, ["kb", "list"], env={"COLUMNS": "200"}).output
    assert run(cli, ["add", "broken", str(tmp_path / "fine.md")]).exit_code == 0
    assert "active (3 failed)" in run(cli, ["kb", "list"], env={"COLUMNS": "200"}).output
