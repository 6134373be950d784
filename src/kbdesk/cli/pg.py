"""``kbdesk pg …``: hand out logins on a team server (setup, grant, revoke, users).

Only parses arguments and prints: the work is :mod:`kbdesk.store.team_admin`'s.
Run by a superuser or the owner of kbdesk's tables, against the server's URI.
"""

from __future__ import annotations

from typing import Any

import click

from kbdesk.cli.output import plain, print_json, stdout, table
from kbdesk.errors import InvalidInputError

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def _uri(state: Any) -> str:
    """The database: --db / KBDESK_DB, else storage.db of the config; a postgresql:// URI."""
    from kbdesk.store import is_server_uri

    uri = state.db
    if uri is None:
        from kbdesk.config import load_config
        from kbdesk.paths import get_paths

        uri = load_config(get_paths(state.home).config_file).storage.db
    if not is_server_uri(uri):
        raise InvalidInputError(
            "kbdesk pg works on a PostgreSQL server: give it as kbdesk --db postgresql://OWNER@HOST/DB pg …"
        )
    return str(uri)


@click.group("pg")
def pg_group() -> None:
    """Team servers: prepare a PostgreSQL database and make logins kbdesk users.

    Run as a superuser or the owner of kbdesk's tables. Each person then connects with
    their own login (kbdesk --db postgresql://alice@server/kb …): who they are, whether
    they are an admin and their teams come from the database, which enforces the
    scopes itself with row-level security.
    """


@pg_group.command("setup")
@json_option
@click.pass_obj
def setup_command(state: Any, as_json: bool) -> None:
    """Prepare the database: schema, roles, grants, row-level security (run again at will)."""
    from kbdesk.store.team_admin import setup

    report = setup(_uri(state))
    if as_json:
        print_json(report)
        return
    out = stdout()
    made = ", ".join(report["roles_created"])
    out.print(
        plain(
            f"{report['database']} is ready for kbdesk users: row-level security on "
            f"{len(report['tables'])} tables" + (f"; roles {made} created" if made else "")
        )
    )
    out.print(
        plain(
            f"{report['users']} kbdesk users; {report['indexes_built']} vector indexes built. "
            "Next: kbdesk --db URI pg grant LOGIN [--admin] [--team NAME[:admin]]"
        )
    )
    for line in report["warnings"]:
        out.print(plain(f"  warning: {line}"), style="yellow")


@pg_group.command("grant")
@click.argument("login")
@click.option("--admin", is_flag=True, help="Also a system admin (global KBs, anyone's discoverable flag).")
@click.option(
    "--team",
    "teams",
    multiple=True,
    metavar="NAME[:admin]",
    help="Member of this team (by name or id; ':admin' for a team admin). Repeatable; kbdesk's own "
    "teams table gets the team if it has none of that name.",
)
@click.option(
    "--user-id",
    metavar="UUID",
    help="The user's id in a team server's own users table (default: the row named LOGIN, or a new one).",
)
@json_option
@click.pass_obj
def grant_command(
    state: Any, login: str, admin: bool, teams: tuple[str, ...], user_id: str | None, as_json: bool
) -> None:
    """Make an existing login role a kbdesk user (adds to what it has; run again to add more)."""
    from kbdesk.store.team_admin import grant

    _show(grant(_uri(state), login, admin=admin, teams=list(teams), user_id=user_id), as_json)


@pg_group.command("revoke")
@click.argument("login")
@click.option("--admin", "admin_only", is_flag=True, help="Take back only system admin.")
@click.option("--team", "teams", multiple=True, metavar="NAME", help="Take back only this team's membership.")
@json_option
@click.pass_obj
def revoke_command(state: Any, login: str, admin_only: bool, teams: tuple[str, ...], as_json: bool) -> None:
    """Take back what pg grant gave (by default all of it: the login can no longer use kbdesk).

    The user's id, personal KBs and team memberships stay: granting the login again
    gives them back.
    """
    from kbdesk.store.team_admin import revoke

    _show(revoke(_uri(state), login, admin_only=admin_only, teams=list(teams)), as_json)


@pg_group.command("users")
@json_option
@click.pass_obj
def users_command(state: Any, as_json: bool) -> None:
    """List the kbdesk users of the database: login, user id, admin, teams."""
    from kbdesk.store.team_admin import users

    rows = users(_uri(state))
    if as_json:
        print_json({"data": rows, "total": len(rows)})
        return
    t = table("Login", "User id", "Admin", "Teams")
    for row in rows:
        t.add_row(
            plain(row["login"]), plain(row["user_id"]), "yes" if row["admin"] else "", plain(_teams(row["teams"]))
        )
    stdout().print(t)


def _teams(teams: dict[str, str]) -> str:
    return ", ".join(f"{name} (admin)" if role == "admin" else name for name, role in teams.items())


def _show(row: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(row)
        return
    if not row.get("kbdesk_user"):
        stdout().print(plain(f"{row['login']} is no longer a kbdesk user (user id {row['user_id']} kept)"))
        return
    what = "a system admin" if row["admin"] else "a kbdesk user"
    teams = f"; teams: {_teams(row['teams'])}" if row["teams"] else ""
    stdout().print(plain(f"{row['login']} is {what} (user id {row['user_id']}){teams}"))
