"""Handing out logins on a team server (``kbdesk pg setup | grant | revoke | users``),
for the faces: the work is the Postgres engine's (:mod:`kbdesk.store.postgres.admin`),
imported only when a command runs, so a face never imports an engine itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def setup(uri: str) -> dict[str, Any]:
    """Prepare the database: schema, roles, grants, row-level security (idempotent)."""
    from kbdesk.store.postgres import admin

    return admin.setup(uri)


def grant(
    uri: str, login: str, *, admin: bool = False, teams: Sequence[str] = (), user_id: str | None = None
) -> dict[str, Any]:
    """Make an existing login a kbdesk user; ``teams`` are ``NAME`` or ``NAME:admin``."""
    from kbdesk.store.postgres import admin as pg_admin

    grants = [pg_admin.TeamGrant.parse(t) for t in teams]
    return pg_admin.grant(uri, login, admin=admin, teams=grants, user_id=user_id)


def revoke(uri: str, login: str, *, admin_only: bool = False, teams: Sequence[str] = ()) -> dict[str, Any]:
    """Take back what :func:`grant` gave (everything, only admin, or only the named teams)."""
    from kbdesk.store.postgres import admin

    return admin.revoke(uri, login, admin_only=admin_only, teams=teams)


def users(uri: str) -> list[dict[str, Any]]:
    """Every kbdesk user of the database: login, user id, admin, teams."""
    from kbdesk.store.postgres import admin

    return admin.users(uri)
