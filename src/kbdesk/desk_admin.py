"""Who acts on a desk, its teams, and how its database is: what ``kbdesk serve``,
``kbdesk token``, ``kbdesk team`` and ``kbdesk doctor`` ask of the desk
(:class:`kbdesk.desk.Desk` offers each as a method).

**SQLite.** A SQLite file is one person's desk: every token acts as its one user (the
file's local user). A token's user names whom it was given to, so tokens can be told
apart and revoked one by one; what a token may do is its permissions.

**Postgres.** Tokens live in a table only the owner of kbdesk's tables reads, so tokens
and ``kbdesk serve`` need the owner's login. A token names a kbdesk user of that database
— a login made one with ``kbdesk pg grant`` — or the owner's own ``[identity]``; the
identity a request acts as is read from the database at each request
(:func:`current_identity`), so a revoked login ends its tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from kbdesk.errors import InvalidInputError, NotFoundError, StoreError
from kbdesk.models import KnowledgeBase
from kbdesk.store.api import TEAM, DriverInfo, Store, TeamIdentity, TeamStore, team_store

if TYPE_CHECKING:
    from kbdesk.store.postgres import PostgresStore


@dataclass(frozen=True)
class TokenUser:
    user_id: str
    username: str


class TokenUserGone(Exception):
    """The token's user was revoked from the database: the token no longer works."""


def require_owner(store: Store) -> None:
    """Tokens on Postgres need the tables' owner: only it reads them and acts for others
    (nothing to check on a SQLite file, one person's own)."""
    if TEAM not in store.capabilities:
        return
    server = team_store(store)
    if server.session.kind != "owner":
        raise StoreError(
            f"tokens and kbdesk serve need the owner of kbdesk's tables on {server.label} "
            f"(the login '{server.session.login}' is a kbdesk user): connect with the "
            "administrator's login"
        )


def token_user(store: Store, name: str) -> TokenUser:
    """The user a new token for ``name`` acts as (refused in one line if there is none)."""
    name = (name or "").strip()
    if not name or len(name) > 200 or any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise InvalidInputError("--user needs a name of one line (at most 200 characters)")
    if TEAM not in store.capabilities:
        return TokenUser(store.local_user_id, name)
    server = team_store(store)
    require_owner(server)
    who = server.login_identity(name)
    if who is not None:
        return TokenUser(who.user_id, who.username)
    own = server.identity
    if name == own.username:
        return TokenUser(own.user_id, own.username)
    raise InvalidInputError(
        f"'{name}' is not a kbdesk user of {server.label}: make the login one with "
        f"kbdesk --db URI pg grant {name} (or name the owner's own identity, '{own.username}')"
    )


def current_identity(server: TeamStore, user_id: str, username: str) -> TeamIdentity:
    """The identity a token of ``username`` (``user_id``) acts as now: the owner's own, or
    the kbdesk user's as the database says at this moment (:class:`TokenUserGone` if the
    login is no longer one, or is another user now)."""
    if user_id == server.identity.user_id and username == server.identity.username:
        return server.identity
    who = server.login_identity(username)
    if who is None or who.user_id != user_id:
        raise TokenUserGone(f"the user '{username}' of this token is no longer a kbdesk user here")
    return who


def my_teams(store: Store) -> list[dict[str, Any]]:
    """The user's teams on a team server: id, name, role ("member" or "admin")."""
    from kbdesk.store.postgres.teams import my_teams as mine

    return mine(_team_server(store))


def team_of(store: Store, ref: str, kbs: Sequence[KnowledgeBase]) -> dict[str, Any]:
    """One of the user's teams (by name or id) with its KBs (of ``kbs``), and its members
    when the user administers it (a team's members are shown to its admins only)."""
    from kbdesk.store.postgres.teams import my_teams as mine
    from kbdesk.store.postgres.teams import resolve, team_members

    server = _team_server(store)
    team_id = resolve(server, ref)
    teams = {t["id"]: t for t in mine(server)}
    if team_id not in teams:
        raise NotFoundError(f"you are not a member of team '{ref}'")
    team = dict(teams[team_id])
    team["kbs"] = [kb for kb in kbs if kb.scope == "team" and kb.team_id == team_id]
    team["members"] = team_members(server, team_id) if team["role"] == "admin" else None
    return team


def _team_server(store: Store) -> PostgresStore:
    """The team server's store: teams exist there only (:mod:`kbdesk.store.postgres.teams`)."""
    if TEAM not in store.capabilities:
        raise InvalidInputError(
            "teams live on a team server: kbdesk --db postgresql://… team … (this desk is a SQLite file)"
        )
    from kbdesk.store.postgres import PostgresStore

    return cast(PostgresStore, store)


@dataclass(frozen=True)
class DatabaseHealth:
    """What ``kbdesk doctor`` reports of a desk's database."""

    schema_version: int
    read_only_reason: str | None  # None: writable
    driver: DriverInfo
    exact_search: str | None  # how exact vector searches are answered (a SQLite file's)
    fts5: bool

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None


def database_health(store: Store) -> DatabaseHealth:
    vectors = getattr(store, "vectors", None)
    exact = vectors.exact_path(store) if vectors is not None and hasattr(vectors, "exact_path") else None
    return DatabaseHealth(
        schema_version=store.schema_version(),
        read_only_reason=getattr(store, "read_only_reason", None),
        driver=store.driver,
        exact_search=exact,
        fts5=store.fts5_available(),
    )
