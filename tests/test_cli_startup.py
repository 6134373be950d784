"""The CLI starts in a blink: what its light paths import, pinned.

Speed itself is measured in bench/bench_cli.py; here, what makes it slow is kept out:
``kbdesk --version`` imports no third-party package at all, ``kbdesk --help`` only click,
and neither imports a command's module (where httpx, numpy, rich and the store come in).
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from kbdesk.cli.main import COMMANDS, HIDDEN, cli, load_command

HEAVY = ("httpx", "numpy", "rich", "textual", "sqlite_vec", "sqlean", "pypdf", "psycopg", "fastapi")

PROBE = """
import json, sys
sys.argv = ["kbdesk", *json.loads(sys.argv[1])]
from kbdesk.cli.entry import main
try:
    main()
except SystemExit:
    pass
mods = sorted(m for m in sys.modules if m.split(".")[0] in {heavy} or m.startswith("kbdesk.cli."))
sys.stderr.write("\\nIMPORTED " + json.dumps(mods))
"""


def imported(*args: str) -> tuple[str, list[str]]:
    """(stdout, the heavy packages and CLI modules imported) of ``kbdesk ARGS`` in a fresh interpreter."""
    code = PROBE.replace("{heavy}", repr(set(HEAVY)))
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(args))], capture_output=True, text=True, timeout=60
    )
    mods = json.loads(out.stderr.rsplit("IMPORTED ", 1)[1])
    return out.stdout, mods


def test_version_imports_nothing_it_does_not_need():
    out, mods = imported("--version")
    assert out == "kbdesk, version 0.1.0\n"
    assert mods == ["kbdesk.cli.entry"], mods  # not click, not a command, not a third-party package


def test_help_lists_every_command_without_importing_one():
    out, mods = imported("--help")
    assert "Commands:" in out and all(f"  {name} " in out for name in COMMANDS if name not in HIDDEN)
    assert [m for m in mods if m.split(".")[0] in HEAVY] == []
    assert [m for m in mods if m.startswith("kbdesk.cli.")] == ["kbdesk.cli.entry", "kbdesk.cli.main"]


def test_a_command_loads_its_own_module_only_when_it_runs():
    out, mods = imported("kb", "--help")
    assert "Manage knowledge bases." in out
    assert "kbdesk.cli.kb" in mods and "kbdesk.cli.search" not in mods and "kbdesk.cli.serve" not in mods


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
