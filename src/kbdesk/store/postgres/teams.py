"""A team server's teams, as a team admin sees them: their names, members and KBs.

Members are read through ``kbdesk_team_members(team)`` (:mod:`.guards`), which shows a
team's members to its admins and to system admins only; the owner of kbdesk's tables
(a local single-user server, the administrator) reads the membership table itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbdesk.errors import AccessDeniedError, InvalidInputError
from kbdesk.store.postgres.rls import ADMIN_TEAM_ROLES, membership_table

if TYPE_CHECKING:
    from kbdesk.store.postgres.connection import PostgresStore


def my_teams(store: PostgresStore) -> list[dict[str, Any]]:
    """The user's teams: id, name, role (a system admin sees every team, as "admin")."""
    who = store.identity
    with store.read() as conn:
        if who.admin:
            rows = conn.execute("SELECT id::text FROM teams ORDER BY 1").fetchall()
            ids = {str(r[0]): "admin" for r in rows} | dict(who.teams)
        else:
            ids = dict(who.teams)
    out = [{"id": team_id, "name": store.team_name(team_id) or team_id, "role": role} for team_id, role in ids.items()]
    return sorted(out, key=lambda t: (t["name"].lower(), t["id"]))


def team_members(store: PostgresStore, team_id: str) -> list[dict[str, Any]]:
    """A team's members (login, user id, role), for its admins and system admins."""
    who = store.identity
    if not (who.admin or who.team_admin(team_id)):
        name = store.team_name(team_id) or team_id
        raise AccessDeniedError(f"only an admin of team '{name}' (or a system admin) sees its members")
    with store.read() as conn:
        if store.session.kind == "user":
            rows = conn.execute("SELECT login, user_id::text, role FROM kbdesk_team_members(%s)", (team_id,)).fetchall()
        else:
            table, has_role = membership_table(conn)
            roles = ", ".join(f"'{r}'" for r in ADMIN_TEAM_ROLES)
            role = f"CASE WHEN m.role IN ({roles}) THEN 'admin' ELSE 'member' END" if has_role else "'member'"
            rows = conn.execute(
                f"SELECT coalesce(l.login, (SELECT to_jsonb(u)->>'username' FROM users u WHERE u.id = m.user_id), "
                f"m.user_id::text), m.user_id::text, {role} FROM {table} m "
                "LEFT JOIN kbdesk_logins l ON l.user_id = m.user_id WHERE m.team_id = %s ORDER BY 1",
                (team_id,),
            ).fetchall()
    return [{"login": login, "user_id": uid, "role": role} for login, uid, role in rows]


def resolve(store: PostgresStore, ref: str) -> str:
    """A team the user belongs to (or any, for a system admin), by name or id."""
    if not ref or not ref.strip():
        raise InvalidInputError("name a team")
    return str(store.resolve_team(ref.strip()))
