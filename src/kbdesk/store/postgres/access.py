"""Who may see and change which knowledge base in Postgres mode (seed 002).

The user's identity (id, name, system-admin flag, teams and the role in each) comes
from the database for a kbdesk user (their login, :mod:`.security`), and from the
config's ``[identity]`` table only for a login row security does not apply to (a
superuser or the tables' owner: a local single-user server, or the administrator).
On a team server the database enforces the same rules itself (:mod:`.rls`); the
checks here give the refusals their clear one-line messages. The rules:

- **personal** KBs are seen and changed by their owner only; anyone may create one.
- **team** KBs are seen by the team's members and changed by its admins; creating one
  needs the team id and team-admin rights (or system admin).
- **global** KBs are seen by everyone and created and changed by system admins.
- **discoverable** = false hides a KB from everyone who is not its owner, a system
  admin or (for a team KB) a member of its team: for them it is not there at all — not
  in the picker, not by name or id, not through a binding of a persona, project or
  conversation, not by raw SQL (row security says the same). A personal KB is only
  ever its owner's and a team KB its members', so the flag hides global KBs (seed
  002's picker: "personal + team + discoverable global"); only the owner or a system
  admin may change it.
"""

from __future__ import annotations

import getpass
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kbdesk.errors import AccessDeniedError, KbdeskError, NotFoundError
from kbdesk.models import KnowledgeBase

# Users who name no id get a stable one derived from login and host, in this namespace.
IDENTITY_NAMESPACE = uuid.UUID("6b626465-736b-4000-8000-6964656e7479")


@dataclass(frozen=True)
class Identity:
    """The user kbdesk acts as on a Postgres server."""

    user_id: str
    username: str
    admin: bool = False
    teams: Mapping[str, str] = field(default_factory=dict)  # team id -> "member" | "admin"
    source: str = "config"  # "database": a kbdesk user's login; "config": [identity] of the owner

    def member_of(self, team_id: str | None) -> bool:
        return bool(team_id) and str(team_id) in self.teams

    def team_admin(self, team_id: str | None) -> bool:
        return bool(team_id) and self.teams.get(str(team_id)) == "admin"

    @property
    def team_ids(self) -> list[str]:
        return sorted(self.teams)


def login_name() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name (a container): still a stable identity
        return "local"


def identity_from_settings(settings: Any = None) -> Identity:
    """An :class:`Identity` from the config's ``[identity]`` table (team keys unresolved).

    Without a ``user_id`` the id is derived from the user name (the login name unless
    ``username`` is set), so the same name is the same user on every machine.
    """
    username = (getattr(settings, "username", None) or login_name()).strip()
    user_id = getattr(settings, "user_id", None) or str(uuid.uuid5(IDENTITY_NAMESPACE, username))
    try:
        user_id = str(uuid.UUID(str(user_id)))
    except ValueError:
        raise KbdeskError(f"config: identity.user_id must be a UUID, got {user_id!r}") from None
    return Identity(
        user_id, username, bool(getattr(settings, "admin", False)), dict(getattr(settings, "teams", None) or {})
    )


def is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def can_see(who: Identity, kb: KnowledgeBase) -> bool:
    if kb.scope == "global":
        return kb.discoverable or who.admin
    if kb.scope == "team":
        return who.admin or who.member_of(kb.team_id)
    return kb.owner_id == who.user_id


def in_picker(who: Identity, kb: KnowledgeBase) -> bool:
    return can_see(who, kb)


def visible_sql(who: Identity, alias: str = "") -> tuple[str, list[Any]]:
    """A WHERE fragment (``?`` placeholders) and its parameters selecting the KBs ``who`` can see."""
    p = f"{alias}." if alias else ""
    here = f"NOT kbdesk_kb_gone({p}id)"  # a KB a user deleted, its rows not yet purged (tombstones.py)
    if who.admin:
        return (
            f"(({p}scope = 'global' OR {p}scope = 'team' OR ({p}scope = 'personal' AND {p}owner_id = ?)) AND {here})",
            [who.user_id],
        )
    return (
        f"((({p}scope = 'global' AND {p}discoverable) OR ({p}scope = 'team' AND {p}team_id = ANY(?::uuid[])) "
        f"OR ({p}scope = 'personal' AND {p}owner_id = ?)) AND {here})",
        [who.team_ids, who.user_id],
    )


def picker_sql(who: Identity, alias: str = "") -> tuple[str, list[Any]]:
    """The picker is every KB the user can see (hidden ones are not seen at all)."""
    return visible_sql(who, alias)


def check_create(who: Identity, scope: str, team_id: str | None, team_name: str | None = None) -> None:
    if scope == "global" and not who.admin:
        how = (
            "an administrator grants it with kbdesk pg grant LOGIN --admin"
            if who.source == "database"
            else "set identity.admin in config.toml if you are one"
        )
        raise AccessDeniedError(f"only a system admin may create a global knowledge base ({how})")
    if scope == "team" and not (who.admin or who.team_admin(team_id)):
        raise AccessDeniedError(
            f"only an admin of team '{team_name or team_id}' (or a system admin) may create a knowledge base for it"
        )


def check_manage(who: Identity, kb: KnowledgeBase, team_name: str | None = None) -> None:
    """Changing a KB or its documents: owner; team admins; system admins for global."""
    if kb.scope == "personal" and kb.owner_id == who.user_id:
        return
    if kb.scope == "team" and (who.admin or who.team_admin(kb.team_id)):
        return
    if kb.scope == "global" and who.admin:
        return
    if not can_see(who, kb):
        raise NotFoundError(f"no knowledge base with id '{kb.id}'")  # not there, for this user
    team = f"an admin of team '{team_name}'" if team_name else "an admin of its team"
    whom = {"personal": "its owner", "team": team, "global": "a system admin"}[kb.scope]
    raise AccessDeniedError(f"'{kb.name}' is a {kb.scope} knowledge base: only {whom} may change it")


def check_discoverable(who: Identity, kb: KnowledgeBase) -> None:
    if who.admin or (kb.owner_id is not None and kb.owner_id == who.user_id):
        return
    raise AccessDeniedError(f"only the owner of '{kb.name}' or a system admin may change whether it is discoverable")


class ScopePolicy:
    """The store core's access policy on a team server: the rules above for one identity
    (the local one is :class:`kbdesk.store.policy.LocalPolicy`)."""

    def __init__(self, who: Identity, team_name: Callable[[str], str | None] | None = None) -> None:
        self.who = who
        self.team_name = team_name or (lambda _team_id: None)

    def check_create(self, scope: str, team_id: str | None) -> None:
        check_create(self.who, scope, team_id, self.team_name(team_id) if team_id else None)

    def check_manage(self, kb: KnowledgeBase) -> None:
        check_manage(self.who, kb, self.team_name(kb.team_id) if kb.team_id else None)

    def check_discoverable(self, kb: KnowledgeBase) -> None:
        check_discoverable(self.who, kb)

    def can_see(self, kb: KnowledgeBase) -> bool:
        return can_see(self.who, kb)

    def visible(self, alias: str = "") -> tuple[str, list[Any]]:
        return visible_sql(self.who, alias)

    def picker(self, alias: str = "") -> tuple[str, list[Any]]:
        return picker_sql(self.who, alias)
