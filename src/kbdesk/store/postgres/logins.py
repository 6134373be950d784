"""Who a kbdesk user's login is on a team server, as the database says now: its user
id, whether it is a system admin (a member of the admin role) and its teams. A server
acting for users (``kbdesk serve`` on Postgres) reads it at every request."""

from __future__ import annotations

from kbdesk.store.api import Transactions
from kbdesk.store.postgres.access import Identity
from kbdesk.store.postgres.rls import ADMIN_TEAM_ROLES, ROLE_ADMIN, membership_table


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
