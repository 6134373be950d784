"""``kbdesk remote add|list|test|remove``: team servers whose KBs are searched beside the local ones."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from kbdesk.cli.output import plain, print_json, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.errors import InvalidInputError, NotFoundError


def _config_path(state: CliState) -> Path:
    from kbdesk.paths import get_paths

    return get_paths(state.home).config_file


def _remotes(state: Any) -> dict[str, Any]:
    from kbdesk.config import load_config

    return load_config(_config_path(state)).remotes


@click.group("remote")
def remote_group() -> None:
    """Team servers (kbdesk serve) whose knowledge bases are searched beside the local ones, read-only."""


@remote_group.command("add")
@click.argument("name")
@click.argument("url")
@click.option("--token-env", metavar="VAR", help="Environment variable holding the token (preferred).")
@click.option(
    "--store-token",
    is_flag=True,
    help="Ask for the token (or read it from stdin) and keep it in config.toml (mode 0600).",
)
@click.option(
    "--ca-file", type=click.Path(dir_okay=False), help="PEM file of the CA that signed the server's TLS certificate."
)
@click.option("--allow-http", is_flag=True, help="Allow plain http:// to a host other than this machine.")
@click.option("--no-check", is_flag=True, help="Save without asking the server first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def add(
    state: CliState,
    name: str,
    url: str,
    token_env: str | None,
    store_token: bool,
    ca_file: str | None,
    allow_http: bool,
    no_check: bool,
    as_json: bool,
) -> None:
    """Add remote NAME at URL (the server's API root, e.g. https://kb.example.org/api).

    Its KBs then show as NAME:KB in kb list and are searched with NAME:KB (or NAME:* for
    all of them) wherever a KB is named."""
    from kbdesk.remote import manage
    from kbdesk.remote.names import check_remote_name

    name = check_remote_name(name)
    token = None
    if store_token:
        token = (
            click.prompt("Token", hide_input=True, prompt_suffix=": ") if sys.stdin.isatty() else sys.stdin.readline()
        )
        token = (token or "").strip()
        if not token:
            raise InvalidInputError("no token given")
    settings = manage.remote_settings(url, token_env=token_env, token=token, ca_file=ca_file, allow_http=allow_http)
    desk = state.desk()
    manage.check_no_clash(name, (kb.name for kb in desk.list_kbs()))
    tested = None if no_check else manage.test_remote(name, settings)
    manage.save_remote(_config_path(state), name, settings)
    if as_json:
        print_json({**manage.describe(name, settings), "test": tested})
        return
    out = stdout()
    out.print(plain(f"Remote '{name}' ({settings.url}) saved to {_config_path(state)}"))
    if tested is not None:
        out.print(plain(f"it answered as {tested['user']}: {len(tested['kbs'])} knowledge bases ({name}:NAME)"))


@remote_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def list_(state: CliState, as_json: bool) -> None:
    """List the remotes (tokens are never shown: only where they come from)."""
    from kbdesk.remote.manage import describe

    rows = [describe(name, s) for name, s in sorted(_remotes(state).items())]
    if as_json:
        print_json({"data": rows, "total": len(rows)})
        return
    if not rows:
        stdout().print(plain("No remotes. Add one: kbdesk remote add team https://kb.example.org/api --token-env VAR"))
        return
    t = table("name", "url", "token", "ca file")
    for r in rows:
        t.add_row(plain(r["name"]), plain(r["url"]), plain(r["token"]), plain(r["ca_file"] or "—"))
    stdout().print(t)


@remote_group.command("test")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def test(state: CliState, name: str, as_json: bool) -> None:
    """Check that remote NAME answers and accepts its token: who it is there, and its KBs."""
    from kbdesk.remote.manage import test_remote

    remotes = _remotes(state)
    if name not in remotes:
        raise NotFoundError(f"no remote '{name}' (kbdesk remote list shows them)")
    result = test_remote(name, remotes[name])
    if as_json:
        print_json(result)
        return
    out = stdout()
    out.print(
        plain(
            f"'{name}' answered in {result['seconds']:.2f} s: kbdesk {result['server_version']} "
            f"({result['engine']}), as {result['user']}, {len(result['kbs'])} knowledge bases"
        )
    )
    for kb in result["kbs"]:
        out.print(plain(f"  {name}:{kb}"))


@remote_group.command("remove")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def remove(state: CliState, name: str, as_json: bool) -> None:
    """Remove remote NAME from config.toml (a stored token goes with it)."""
    from kbdesk.remote.manage import remove_remote

    remove_remote(_config_path(state), name)
    if as_json:
        print_json({"removed": name})
    else:
        stdout().print(plain(f"Remote '{name}' removed"))
