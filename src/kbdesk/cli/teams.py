"""``kbdesk team …``: a team server's teams, for their admins (list, show)."""

from __future__ import annotations

from typing import Any

import click

from kbdesk.cli.output import plain, print_json, stdout, table

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.group("team")
def team_group() -> None:
    """Your teams on a team server: their knowledge bases, and (for their admins) their members.

    Team admins create a team's KBs with kbdesk kb create NAME --team TEAM; who belongs
    to a team is the administrator's (kbdesk pg grant LOGIN --team TEAM[:admin]).
    """


@team_group.command("list")
@json_option
@click.pass_obj
def list_(state: Any, as_json: bool) -> None:
    """The teams you belong to, and your role in each."""
    teams = state.desk().teams()
    if as_json:
        print_json({"data": teams, "total": len(teams)})
        return
    if not teams:
        stdout().print(plain("You belong to no team (an administrator adds you: kbdesk pg grant LOGIN --team TEAM)."))
        return
    out = table("team", "id", "role")
    for team in teams:
        out.add_row(plain(team["name"]), plain(team["id"]), plain(team["role"]))
    stdout().print(out)


@team_group.command("show")
@click.argument("team")
@json_option
@click.pass_obj
def show(state: Any, team: str, as_json: bool) -> None:
    """A team's knowledge bases, and its members (shown to its admins)."""
    found = state.desk().team(team)
    if as_json:
        print_json({**found, "kbs": [kb.to_dict() for kb in found["kbs"]]})
        return
    out = stdout()
    out.print(
        plain(
            f"Team '{found['name']}' ({found['id']}): you are {'an admin' if found['role'] == 'admin' else 'a member'}"
        )
    )
    kbs = table("knowledge base", "id", "docs", "discoverable")
    for kb in found["kbs"]:
        kbs.add_row(plain(kb.name), plain(kb.id[:8]), str(kb.document_count), "yes" if kb.discoverable else "no")
    out.print(kbs if found["kbs"] else plain("No team knowledge bases yet (kbdesk kb create NAME --team TEAM)."))
    if found["members"] is not None:
        members = table("member", "user id", "role")
        for m in found["members"]:
            members.add_row(plain(m["login"]), plain(m["user_id"]), plain(m["role"]))
        out.print(members)
