"""``kbdesk token create|list|revoke``: the bearer tokens of ``kbdesk serve``."""

from __future__ import annotations

import click

from kbdesk.cli.output import plain, print_json, stderr, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.store.api import TEAM
from kbdesk.store.tokens import PERMISSIONS, Tokens


def _tokens(state: CliState) -> Tokens:
    return state.desk().tokens()


@click.group("token")
def token_group() -> None:
    """Tokens for kbdesk serve: each acts as one user, with its permissions."""


@token_group.command("create")
@click.option(
    "--user",
    "user",
    required=True,
    metavar="NAME",
    help="Who the token is for (on Postgres: a kbdesk user's login, see kbdesk pg grant).",
)
@click.option(
    "--permission",
    "-p",
    "permissions",
    multiple=True,
    type=click.Choice(PERMISSIONS),
    help="What it may do beyond reading and searching (repeatable; default: kb.create and kb.write).",
)
@click.option("--read-only", is_flag=True, help="Only read and search: no permission at all.")
@click.option("--label", default="", metavar="TEXT", help="A note to tell tokens apart (where it is used).")
@click.option("--json", "as_json", is_flag=True, help='Print {"token": …} and the token\'s details as JSON.')
@click.pass_obj
def create(
    state: CliState, user: str, permissions: tuple[str, ...], read_only: bool, label: str, as_json: bool
) -> None:
    """Make a token and print it once (only its hash is kept)."""
    if read_only and permissions:
        raise click.UsageError("--read-only and --permission exclude each other")
    tokens = _tokens(state)
    who = state.desk().token_user(user)
    chosen = () if read_only else (permissions or PERMISSIONS)
    token, secret = tokens.create(who.user_id, who.username, chosen, label)
    if as_json:
        print_json({"token": secret, **token.to_dict()})
        return
    click.echo(secret)
    perms = ", ".join(sorted(token.permissions)) or "read and search only"
    stderr().print(
        plain(
            f"Token {token.prefix}… for {who.username} ({perms}). It is shown only now: keep it "
            "somewhere safe; kbdesk token revoke ends it."
        )
    )
    if TEAM not in state.desk().capabilities:
        stderr().print(
            plain(
                f"Note: on a SQLite file every token acts as this file's one user, with that user's "
                f"knowledge bases; '{who.username}' only says whom you gave it to (the audit log names "
                "the token behind each change). For one user per person, serve a team server (Postgres)."
            ),
            style="yellow",
        )


@token_group.command("list")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.pass_obj
def list_(state: CliState, include_revoked: bool, as_json: bool) -> None:
    """The tokens (never the tokens themselves: their first characters)."""
    tokens = _tokens(state).list(include_revoked=include_revoked)
    if as_json:
        print_json([t.to_dict() for t in tokens])
        return
    if not tokens:
        stdout().print(plain("No tokens. Make one with: kbdesk token create --user NAME"))
        return
    out = table("token", "user", "permissions", "last used", "state", "label")
    out.columns[0].no_wrap = True
    for t in tokens:
        out.add_row(
            plain(t.prefix + "…"),
            plain(t.username),
            ", ".join(sorted(t.permissions)) or "read-only",
            (t.last_used_at or "never")[:16].replace("T", " "),
            "revoked" if t.revoked_at else "active",
            plain(t.label),
        )
    stdout().print(out)


@token_group.command("revoke")
@click.argument("token_ref", metavar="TOKEN")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.pass_obj
def revoke(state: CliState, token_ref: str, as_json: bool) -> None:
    """Revoke TOKEN (its id, or the first characters kbdesk token list shows): it stops
    working at once."""
    token = _tokens(state).revoke(token_ref)
    if as_json:
        print_json(token.to_dict())
    else:
        stdout().print(plain(f"Revoked token {token.prefix}… of {token.username}."))
