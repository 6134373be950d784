"""The administrator's ``kbdesk pg`` commands: setup, grant, revoke, users.

Each runs as a superuser or the owner of kbdesk's tables (anyone else is refused in
one line) on a connection of its own, and is safe to run again:

- :func:`setup` — schema (every migration), the roles ``kbdesk_user`` and
  ``kbdesk_admin``, grants, row-level security (:mod:`.rls`), and the vector index of
  every KB big enough for one (users cannot build them: that needs the owner);
- :func:`grant` — makes an existing login role a kbdesk user: the role ``kbdesk_user``
  (``kbdesk_admin`` too with ``admin``), a ``users`` row and its id in
  ``kbdesk_logins``, team memberships;
- :func:`revoke` — takes that back, whole or in part;
- :func:`users` — who is a kbdesk user here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbdesk.errors import AccessDeniedError, InvalidInputError, NotFoundError, StoreError
from kbdesk.store.postgres import locks
from kbdesk.store.postgres.access import IDENTITY_NAMESPACE, is_uuid
from kbdesk.store.postgres.connection import PostgresStore
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.pool import redact_uri
from kbdesk.store.postgres.rls import (
    ROLE_ADMIN,
    ROLE_USER,
    install_row_security,
    membership_table,
    own_tables,
    secured_tables,
)
from kbdesk.store.postgres.safety import check_not_planted, secure_schema
from kbdesk.store.postgres.schema import _first_line, migrate
from kbdesk.store.postgres.security import Session, apply_grants, roles_exist, session
from kbdesk.store.postgres.tombstones import purge as purge_tombstones
from kbdesk.store.postgres.vectors import drop_orphans

TEAM_ROLES = ("member", "admin")


def connect(uri: str) -> Any:
    import psycopg

    try:
        return locks.connect(uri, redact_uri(uri))
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {redact_uri(uri)}: {_first_line(exc)}") from None


def _require_owner(who: Session, command: str, label: str) -> None:
    if who.tables and not who.bypass:
        raise AccessDeniedError(
            f"only a database owner can run pg {command}: '{who.login}' is neither a superuser "
            f"nor the owner of kbdesk's tables in {label} ({who.owner})"
        )


def setup(uri: str) -> dict[str, Any]:
    """Prepare a team server: schema, roles, grants, row security; idempotent.

    Also builds the vector index of every KB big enough for one (building needs the
    tables' owner, so users' searches never can).
    """
    label = redact_uri(uri)
    created: list[str] = []
    with connect(uri) as conn, locks.maintenance(conn):
        who = session(conn)
        _require_owner(who, "setup", label)
        try:
            repaired = secure_schema(conn, label)  # first: nobody plants anything from here on
            check_not_planted(conn, label)
            migrate(conn, label=label)
        except StoreError as exc:
            raise StoreError(f"pg setup: {exc}") from None
        for role in (ROLE_USER, ROLE_ADMIN):
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                _create_role(conn, role)
                created.append(role)
        with conn.transaction():
            locks.migration_lock(conn)
            install_row_security(conn)
            missed = apply_grants(conn)
        tables = secured_tables(conn)
        users = conn.execute("SELECT count(*) FROM kbdesk_logins").fetchone()[0]
        purge_tombstones(conn)  # KBs users deleted whose rows were still held then
        drop_orphans(conn)  # indexes of KBs users deleted (theirs to leave, not to drop)
    built = _build_indexes(uri)
    return {
        "database": label,
        "roles_created": created,
        "tables": tables,
        "users": int(users),
        "indexes_built": built,
        "warnings": repaired + missed,
    }


def _create_role(conn: PgConnection, role: str) -> None:
    import psycopg
    from psycopg import sql

    try:
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
    except psycopg.errors.DuplicateObject:
        pass  # another setup made it meanwhile
    except psycopg.errors.InsufficientPrivilege:
        raise AccessDeniedError(
            f"creating the roles {ROLE_USER} and {ROLE_ADMIN} needs a superuser or a role with "
            f"CREATEROLE: ask one to run CREATE ROLE {ROLE_USER} NOLOGIN; CREATE ROLE {ROLE_ADMIN} "
            "NOLOGIN; then run pg setup again"
        ) from None


def _build_indexes(uri: str) -> int:
    """Vector indexes of KBs that have reached the size (as the owner: users cannot)."""
    store = PostgresStore(uri)
    try:
        rows = (
            store.connection()
            .execute(
                "SELECT id, (embedding_config->>'dimensions')::int, chunk_count FROM knowledge_bases "
                "WHERE chunk_count >= %s AND embedding_config ? 'dimensions'",
                (store.vectors.min_rows,),
            )
            .fetchall()
        )
        built = 0
        for kb_id, dims, count in rows:
            valid = store.vectors.state(store.connection(), kb_id, dims) == "valid"
            if not valid and store.vectors.ensure(kb_id, dims, count):
                built += 1
        return built
    finally:
        store.close()


@dataclass(frozen=True)
class TeamGrant:
    team: str  # id or name
    role: str  # member | admin

    @classmethod
    def parse(cls, text: str) -> TeamGrant:
        """``NAME`` or ``NAME:admin`` / ``NAME:member`` (a name may hold colons itself)."""
        name, sep, role = text.rpartition(":")
        if sep and role in TEAM_ROLES and name:
            return cls(name, role)
        return cls(text, "member")


def grant(
    uri: str, login: str, *, admin: bool = False, teams: Sequence[TeamGrant] = (), user_id: str | None = None
) -> dict[str, Any]:
    """Make an existing login role a kbdesk user (again: adds what is asked, keeps the rest)."""
    from psycopg import sql

    label = redact_uri(uri)
    if user_id is not None and not is_uuid(user_id):
        raise InvalidInputError(f"--user-id must be a UUID, got {user_id!r}")
    with connect(uri) as conn:
        who = session(conn)
        _require_owner(who, "grant", label)
        _require_setup(conn, who, label)
        _check_login(conn, login)
        with conn.transaction():
            uid = _user_for(conn, login, user_id)
            taken = conn.execute(
                "SELECT login FROM kbdesk_logins WHERE user_id = %s AND login <> %s", (uid, login)
            ).fetchone()
            if taken:
                raise InvalidInputError(f"user {uid} is already the login '{taken[0]}'")
            conn.execute(
                "INSERT INTO kbdesk_logins(login, user_id) VALUES (%s, %s) ON CONFLICT (login) DO UPDATE "
                "SET user_id = excluded.user_id",
                (login, uid),
            )
            for role in [ROLE_USER] + ([ROLE_ADMIN] if admin else []):
                _role_change(conn, who, sql.SQL("GRANT {} TO {}"), role, login)
            for team in teams:
                _join(conn, uid, team)
            _mirror_admin(conn, login, uid)
        return _describe(conn, login)


def revoke(uri: str, login: str, *, admin_only: bool = False, teams: Sequence[str] = ()) -> dict[str, Any]:
    """Take back what :func:`grant` gave: everything (the login is no kbdesk user any
    more; its user id, personal KBs and team memberships stay for a later grant), only
    admin (``admin_only``), or only the named teams."""
    from psycopg import sql

    label = redact_uri(uri)
    with connect(uri) as conn:
        who = session(conn)
        _require_owner(who, "revoke", label)
        _require_setup(conn, who, label)
        row = conn.execute("SELECT user_id FROM kbdesk_logins WHERE login = %s", (login,)).fetchone()
        if row is None:
            raise NotFoundError(f"'{login}' is not a kbdesk user of {label}")
        uid = str(row[0])
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (login,)).fetchone()
        with conn.transaction():
            if teams:
                members, _ = membership_table(conn)
                for ref in teams:
                    team_id = _team_id(conn, ref, create=False)
                    conn.execute(
                        sql.SQL("DELETE FROM {} WHERE team_id = %s AND user_id = %s").format(sql.Identifier(members)),
                        (team_id, uid),
                    )
            else:
                roles = [ROLE_ADMIN] if admin_only else [ROLE_ADMIN, ROLE_USER]
                if exists:
                    for role in roles:
                        _role_change(conn, who, sql.SQL("REVOKE {} FROM {}"), role, login)
                if not admin_only:
                    conn.execute("DELETE FROM kbdesk_logins WHERE login = %s", (login,))
            _mirror_admin(conn, login, uid)
        out = _describe(conn, login)
        return out if out else {"login": login, "user_id": uid, "kbdesk_user": False}


def _role_change(conn: PgConnection, who: Session, statement: Any, role: str, login: str) -> None:
    """GRANT or REVOKE ``role`` for ``login``; a table owner who is not a superuser needs
    ADMIN OPTION on the roles (it has it when it created them)."""
    import psycopg
    from psycopg import sql

    try:
        with conn.transaction():
            conn.execute(statement.format(sql.Identifier(role), sql.Identifier(login)))
    except psycopg.errors.InsufficientPrivilege:
        raise AccessDeniedError(
            f"'{who.login}' may not grant or revoke the role {role}: a superuser runs GRANT "
            f'{ROLE_USER}, {ROLE_ADMIN} TO "{who.login}" WITH ADMIN OPTION (once), or runs '
            "this command"
        ) from None


def users(uri: str) -> list[dict[str, Any]]:
    """Every kbdesk user of the database: login, user id, admin, teams."""
    label = redact_uri(uri)
    with connect(uri) as conn:
        who = session(conn)
        _require_owner(who, "users", label)
        _require_setup(conn, who, label)
        logins = [r[0] for r in conn.execute("SELECT login FROM kbdesk_logins ORDER BY login").fetchall()]
        return [_describe(conn, login) for login in logins]


def _require_setup(conn: PgConnection, who: Session, label: str) -> None:
    """Row security installed, the roles made, and this database's grants given (the
    roles belong to the whole server; another database may have made them)."""
    ready = (
        who.secured
        and roles_exist(conn)
        and conn.execute("SELECT has_table_privilege(%s, 'knowledge_bases', 'SELECT')", (ROLE_USER,)).fetchone()[0]
    )
    if not ready:
        raise StoreError(f"{label} is not prepared for kbdesk users yet: run kbdesk pg setup first")


def _check_login(conn: PgConnection, login: str) -> None:
    row = conn.execute(
        "SELECT r.rolcanlogin, r.rolsuper OR r.rolbypassrls OR pg_has_role(r.oid, c.relowner, 'USAGE') "
        "FROM pg_roles r, pg_class c WHERE r.rolname = %s AND c.oid = to_regclass('knowledge_bases')",
        (login,),
    ).fetchone()
    if row is None:
        raise NotFoundError(
            f"no role '{login}' on this server: create the login first "
            f"(CREATE ROLE \"{login}\" LOGIN PASSWORD '…'), then grant it"
        )
    can_login, bypass = row
    if not can_login:
        raise InvalidInputError(f"'{login}' cannot log in: a kbdesk user is a login role")
    if bypass:
        raise InvalidInputError(
            f"'{login}' bypasses row-level security (a superuser, BYPASSRLS, or the owner of "
            "kbdesk's tables): give each person a login of their own"
        )


def _user_for(conn: PgConnection, login: str, user_id: str | None) -> str:
    """The login's user id: its mapping, ``user_id``, a users row of that name, or new."""
    if user_id is None:
        row = conn.execute("SELECT user_id FROM kbdesk_logins WHERE login = %s", (login,)).fetchone()
        if row:
            return str(row[0])
    own = "users" in own_tables(conn)
    cols = {
        r[0]
        for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('users') AND attnum > 0 AND NOT attisdropped"
        ).fetchall()
    }
    if user_id is None and "username" in cols:
        row = conn.execute("SELECT id FROM users WHERE username::text = %s ORDER BY id LIMIT 1", (login,)).fetchone()
        if row:
            user_id = str(row[0])
    if user_id is None and not own:
        raise InvalidInputError(f"the server's users table has no user named '{login}': give their id with --user-id")
    user_id = str(user_id or uuid.uuid5(IDENTITY_NAMESPACE, login)).lower()
    if own:
        conn.execute("INSERT INTO users(id, username) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", (user_id, login))
    elif not conn.execute("SELECT 1 FROM users WHERE id = %s", (user_id,)).fetchone():
        raise NotFoundError(f"no user with id {user_id} in the server's users table")
    return user_id


def _team_id(conn: PgConnection, ref: str, *, create: bool) -> str:
    if is_uuid(ref) and conn.execute("SELECT 1 FROM teams WHERE id = %s", (ref,)).fetchone():
        return str(ref).lower()
    rows = conn.execute("SELECT id FROM teams WHERE name::text = %s LIMIT 2", (ref,)).fetchall()
    if len(rows) > 1:
        raise InvalidInputError(f"more than one team is named '{ref}'; use its id")
    if rows:
        return str(rows[0][0])
    if create and "teams" in own_tables(conn) and not is_uuid(ref):
        return str(conn.execute("INSERT INTO teams(name) VALUES (%s) RETURNING id", (ref,)).fetchone()[0])
    raise NotFoundError(f"no team '{ref}'")


def _join(conn: PgConnection, uid: str, team: TeamGrant) -> None:
    from psycopg import sql

    members, has_role = membership_table(conn)
    team_id = _team_id(conn, team.team, create=True)
    table = sql.Identifier(members)
    if has_role:
        changed = conn.execute(
            sql.SQL("UPDATE {} SET role = %s WHERE team_id = %s AND user_id = %s").format(table),
            (team.role, team_id, uid),
        ).rowcount
        if not changed:
            conn.execute(
                sql.SQL("INSERT INTO {}(team_id, user_id, role) VALUES (%s, %s, %s)").format(table),
                (team_id, uid, team.role),
            )
    else:
        if team.role == "admin":
            raise InvalidInputError(f"the server's {members} table has no role column: nobody can be a team admin")
        if not conn.execute(
            sql.SQL("SELECT 1 FROM {} WHERE team_id = %s AND user_id = %s").format(table), (team_id, uid)
        ).fetchone():
            conn.execute(sql.SQL("INSERT INTO {}(team_id, user_id) VALUES (%s, %s)").format(table), (team_id, uid))


def _is_admin(conn: PgConnection, login: str) -> bool:
    row = conn.execute(
        "SELECT pg_has_role(r.oid, a.oid, 'MEMBER') FROM pg_roles r, pg_roles a "
        "WHERE r.rolname = %s AND a.rolname = %s",
        (login, ROLE_ADMIN),
    ).fetchone()
    return bool(row and row[0])


def _mirror_admin(conn: PgConnection, login: str, uid: str) -> None:
    """kbdesk's own users table shows the admin flag (the role is what counts)."""
    if "users" in own_tables(conn):
        admin = _is_admin(conn, login)
        conn.execute(
            "UPDATE users SET is_admin = %s WHERE id = %s AND is_admin IS DISTINCT FROM %s", (admin, uid, admin)
        )


def _describe(conn: PgConnection, login: str) -> dict[str, Any]:
    from psycopg import sql

    row = conn.execute("SELECT user_id FROM kbdesk_logins WHERE login = %s", (login,)).fetchone()
    if row is None:
        return {}
    uid = str(row[0])
    members, has_role = membership_table(conn)
    role = sql.SQL("m.role") if has_role else sql.SQL("'member'")
    names = "t.name::text" if "name" in _team_columns(conn) else "t.id::text"
    teams = conn.execute(
        sql.SQL(
            "SELECT " + names + ", {} FROM {} m JOIN teams t ON t.id = m.team_id WHERE m.user_id = %s ORDER BY 1"
        ).format(role, sql.Identifier(members)),
        (uid,),
    ).fetchall()
    active = conn.execute(
        "SELECT pg_has_role(r.oid, u.oid, 'MEMBER') FROM pg_roles r, pg_roles u "
        "WHERE r.rolname = %s AND u.rolname = %s",
        (login, ROLE_USER),
    ).fetchone()
    return {
        "login": login,
        "user_id": uid,
        "kbdesk_user": bool(active and active[0]),
        "admin": _is_admin(conn, login),
        "teams": dict(teams),
    }


def _team_columns(conn: PgConnection) -> set[str]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('teams') AND attnum > 0 AND NOT attisdropped"
        ).fetchall()
    }
