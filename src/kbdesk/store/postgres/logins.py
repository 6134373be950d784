"""Who is who on a team server: the Postgres store's :class:`Identities` repository.

A kbdesk user's login is its identity, as the database says now: its user id, whether it
is a system admin (a member of the admin role) and its teams (:meth:`Identities.login_identity`;
a server acting for users, ``kbdesk serve`` on Postgres, reads it at every request). The
owner of kbdesk's tables acts as its config's ``[identity]``, whose team keys may be names
(:meth:`Identities.resolve`), and is kept in kbdesk's own users table
(:meth:`Identities.record_user`). Team names are read once each, for messages.
"""

from __future__ import annotations

from kbdesk.errors import KbdeskError
from kbdesk.store.api import Transactions
from kbdesk.store.postgres.access import Identity, is_uuid
from kbdesk.store.postgres.rls import ADMIN_TEAM_ROLES, ROLE_ADMIN, membership_table

__all__ = ["Identities", "login_identity"]


class Identities:
    """Logins, identities and team names, over the store's transactions."""

    def __init__(self, base: Transactions) -> None:
        self.base = base
        self.team_names: dict[str, str | None] = {}

    def login_identity(self, login: str) -> Identity | None:
        """The identity of kbdesk user ``login`` as the database says now (None: not one)."""
        return login_identity(self.base, login)

    def resolve(self, who: Identity) -> Identity:
        """The config's identity with its team keys as ids (names looked up; unknown ones left out)."""
        teams: dict[str, str] = {}
        names = [k for k in who.teams if not is_uuid(k)]
        found: dict[str, str] = {}
        if names:
            try:
                rows = (
                    self.base.connection()
                    .execute("SELECT id, name::text FROM teams WHERE name::text = ANY(%s)", (names,))
                    .fetchall()
                )
                found = {name: team_id for team_id, name in rows}
            except Exception:  # noqa: BLE001 - a server's teams table without a name column: ids only
                found = {}
        for key, role in who.teams.items():
            team_id = key if is_uuid(key) else found.get(key)
            if team_id:
                teams[str(team_id).lower()] = role if role in ("member", "admin") else "member"
        return Identity(who.user_id, who.username, who.admin, teams, source=who.source)

    def team_name(self, team_id: str) -> str | None:
        """A team's name (for messages; None when it has none or cannot be read)."""
        key = str(team_id).lower()
        if key not in self.team_names:
            try:
                with self.base.read() as conn:
                    row = conn.execute(
                        "SELECT coalesce(to_jsonb(t)->>'name', t.id::text) FROM teams t WHERE t.id = %s", (key,)
                    ).fetchone()
                self.team_names[key] = str(row[0]) if row else None
            except KbdeskError:
                return None
        return self.team_names[key]

    def record_user(self, who: Identity) -> None:
        """Keep the owner's config identity in kbdesk's own minimal users table (never a
        server's; a kbdesk user's row is made by ``pg grant``)."""
        if who.source == "database":
            return
        conn = self.base.connection()
        row = conn.execute("SELECT value FROM kbdesk_settings WHERE key = 'own_tables'").fetchone()
        if not row or "users" not in row[0].split(","):
            return
        conn.execute(
            "INSERT INTO users(id, username, is_admin) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
            "SET username = excluded.username, is_admin = excluded.is_admin "
            "WHERE (users.username, users.is_admin) IS DISTINCT FROM (excluded.username, excluded.is_admin)",
            (who.user_id, who.username, who.admin),
        )


def login_identity(store: Transactions, login: str) -> Identity | None:
    """The identity of a kbdesk user's login, as the database says (None: not one)."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT l.user_id::text, l.login, EXISTS (SELECT 1 FROM pg_roles r JOIN pg_roles u "
            "ON u.rolname = l.login WHERE r.rolname = %s AND pg_has_role(u.oid, r.oid, 'MEMBER')) "
            "FROM kbdesk_logins l WHERE l.login = %s",
            (ROLE_ADMIN, login),
        ).fetchone()
        if row is None:
            return None
        table, has_role = membership_table(conn)
        role = "role" if has_role else "'member'"
        teams = conn.execute(f"SELECT team_id::text, {role} FROM {table} WHERE user_id = %s", (row[0],)).fetchall()
    return Identity(
        row[0],
        row[1],
        bool(row[2]),
        {str(t).lower(): ("admin" if r in ADMIN_TEAM_ROLES else "member") for t, r in teams},
        source="database",
    )
