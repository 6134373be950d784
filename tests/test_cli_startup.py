"""The CLI starts in a blink: what its light paths import, pinned.

Speed itself is measured in bench/bench_startup.py; here, what makes it slow is kept out:
``kbdesk --version`` and ``kbdesk --help`` import no third-party package at all (not even
click: the help page is laid out without it, exactly as click lays it out), and neither
imports a command's module (where httpx, numpy, rich and the store come in).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest

from kbdesk.cli.commands import COMMANDS, HIDDEN
from kbdesk.cli.help_page import help_width, page
from kbdesk.cli.main import cli, load_command

HEAVY = ("click", "httpx", "numpy", "rich", "textual", "sqlite_vec", "sqlean", "pypdf", "psycopg", "fastapi")

PROBE = """
import json, sys
sys.argv = ["kbdesk", *json.loads(sys.argv[1])]
from kbdesk.cli.entry import main
try:
    main()
except SystemExit:
    pass
mods = sorted(m for m in sys.modules if m.split(".")[0] in {heavy} or m.startswith("kbdesk."))
sys.stderr.write("\\nIMPORTED " + json.dumps(mods))
"""


def imported(*args: str, columns: int = 80) -> tuple[str, list[str]]:
    """(stdout, the heavy packages and kbdesk modules imported) of ``kbdesk ARGS`` in a fresh interpreter."""
    code = PROBE.replace("{heavy}", repr(set(HEAVY)))
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    mods = json.loads(out.stderr.rsplit("IMPORTED ", 1)[1])
    return out.stdout, mods


def test_version_imports_nothing_it_does_not_need():
    out, mods = imported("--version")
    assert out == "kbdesk, version 0.1.0\n"
    # not click, not a command, not a third-party package, nothing of the store, providers or desk
    assert mods == ["kbdesk.cli", "kbdesk.cli.entry", "kbdesk.errors"], mods


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_every_command_without_importing_one(flag):
    out, mods = imported(flag)
    assert "Commands:" in out and all(f"  {name} " in out for name in COMMANDS if name not in HIDDEN)
    assert [m for m in mods if m.split(".")[0] in HEAVY] == []  # not click either
    assert mods == ["kbdesk.cli", "kbdesk.cli.commands", "kbdesk.cli.entry", "kbdesk.cli.help_page", "kbdesk.errors"]


def click_help(width: int) -> str:
    """The top-level help as click itself renders it, ``width`` columns wide."""
    with cli.make_context("kbdesk", [], terminal_width=width) as ctx:
        return ctx.get_help() + "\n"


@pytest.mark.parametrize("width", [50, 58, 64, 70, 78])
def test_the_quick_help_page_is_clicks_own(width):
    assert page(width) == click_help(width)


@pytest.mark.parametrize(("columns", "width"), [(200, 78), (80, 78), (60, 58), (30, 50)])
def test_the_help_is_as_wide_as_the_terminal_allows(monkeypatch, columns, width):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert help_width() == width


def test_kbdesk_help_prints_what_click_would():
    out, _ = imported("--help", columns=66)
    assert out == click_help(64)


def test_a_command_loads_its_own_module_only_when_it_runs():
    out, mods = imported("kb", "--help")
    assert "Manage knowledge bases." in out
    assert "kbdesk.cli.kb" in mods and "kbdesk.cli.search" not in mods and "kbdesk.cli.serve" not in mods


def test_a_keyword_search_loads_no_http_client_ui_or_parser(kbdesk_home):
    from kbdesk import open_desk

    with open_desk(home=kbdesk_home) as desk:
        desk.create_kb("demo", keyword_only=True)
        desk.add_document("demo", "backups.md", ["Restore a backup with harbor snapshot restore."])
    code = PROBE.replace("{heavy}", repr({"httpx", "textual", "pypdf", "fastapi", "psycopg", "watchfiles"}))
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(["search", "demo", "restore a backup"])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "backups.md" in out.stdout, out.stderr
    mods = json.loads(out.stderr.rsplit("IMPORTED ", 1)[1])
    assert [m for m in mods if not m.startswith("kbdesk.")] == []  # none of those packages
    assert "kbdesk.providers.openai_compat" not in mods and "kbdesk.ingest.pipeline" not in mods
    assert "kbdesk.cli.ingest" not in mods and "kbdesk.cli.chat" not in mods


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_command_table_says_what_each_command_says(name):
    command = load_command(name)
    assert command.hidden == (name in HIDDEN)
    if name not in HIDDEN:  # the help of --help's list is the command's own first paragraph
        assert COMMANDS[name][1] == command.get_short_help_str(limit=10_000)


def test_every_command_is_reachable_by_its_name():
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    assert all(cli.get_command(ctx, name) is load_command(name) for name in COMMANDS)
    assert cli.get_command(ctx, "no-such-command") is None
