"""A schema kbdesk can trust: nobody else creates objects in it, and kbdesk uses only its own.

kbdesk's helper functions and triggers run as the owner of its tables and read tables
by name; a table or function another login planted under one of kbdesk's names would
be used as kbdesk's own (a planted ``team_members`` would say who administers every
team). Two rules keep that from happening:

- **No one else creates objects in kbdesk's schema.** Before PostgreSQL 15 every login
  may create objects in ``public``. ``pg setup`` revokes that (``REVOKE CREATE ON
  SCHEMA … FROM PUBLIC``, and from any kbdesk user holding it), or, when its login may
  not, refuses with the statement its owner must run (:func:`secure_schema`).
- **kbdesk never adopts an object it did not make.** Every object named ``kbdesk_…``
  must belong to the owner of kbdesk's tables (the owner of ``kbdesk_migrations``, the
  first table kbdesk makes); one that belongs to anyone else is refused by name, with
  the statement that drops it, before any migration (:func:`check_not_planted`). The
  tables kbdesk trusts for who is who (``users``, ``teams``, ``team_members``) and the
  seed's tables may be a team server's own, but never a kbdesk user's.
"""

from __future__ import annotations

from kbdesk.errors import StoreError
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.rls import ROLE_ADMIN, ROLE_USER

TRUSTED_TABLES = (
    "knowledge_bases",
    "kb_documents",
    "kb_chunks",
    "channel_knowledge_bases",
    "users",
    "teams",
    "team_members",
    "channels",
)
_KINDS = {
    "r": "table",
    "p": "table",
    "v": "view",
    "m": "materialized view",
    "S": "sequence",
    "f": "foreign table",
    "i": "index",
}


def expected_owner(conn: PgConnection) -> str:
    """The role kbdesk's objects belong to: the owner of ``kbdesk_migrations`` (kbdesk
    made it first), else of ``knowledge_bases``, else whoever migrates now."""
    row = conn.execute(
        "SELECT coalesce((SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass('kbdesk_migrations')),"
        " (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass('knowledge_bases')), current_user)"
    ).fetchone()
    return str(row[0])


def planted(conn: PgConnection, owner: str | None = None) -> list[tuple[str, str, str]]:
    """(kind, name, its owner) of each object named ``kbdesk_…`` in kbdesk's schema that
    ``owner`` (default: :func:`expected_owner`) did not make."""
    owner = owner or expected_owner(conn)
    rows = conn.execute(
        "SELECT 'class:' || c.relkind::text, c.relname::text, pg_get_userbyid(c.relowner)::text FROM pg_class c "
        "WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relname LIKE 'kbdesk\\_%%' "
        "AND c.relowner <> to_regrole(%s) "
        "UNION ALL SELECT 'function', p.oid::regprocedure::text, pg_get_userbyid(p.proowner)::text FROM pg_proc p "
        "WHERE p.pronamespace = to_regnamespace(current_schema()) AND p.proname LIKE 'kbdesk\\_%%' "
        "AND p.proowner <> to_regrole(%s) "
        "UNION ALL SELECT 'type', t.typname::text, pg_get_userbyid(t.typowner)::text FROM pg_type t "
        "WHERE t.typnamespace = to_regnamespace(current_schema()) AND t.typname LIKE 'kbdesk\\_%%' "
        "AND t.typrelid = 0 AND t.typowner <> to_regrole(%s) "
        "UNION ALL SELECT 'text search configuration', c.cfgname::text, pg_get_userbyid(c.cfgowner)::text "
        "FROM pg_ts_config c WHERE c.cfgnamespace = to_regnamespace(current_schema()) "
        "AND c.cfgname LIKE 'kbdesk\\_%%' AND c.cfgowner <> to_regrole(%s) "
        "UNION ALL SELECT 'text search dictionary', d.dictname::text, pg_get_userbyid(d.dictowner)::text "
        "FROM pg_ts_dict d WHERE d.dictnamespace = to_regnamespace(current_schema()) "
        "AND d.dictname LIKE 'kbdesk\\_%%' AND d.dictowner <> to_regrole(%s) ORDER BY 2",
        (owner,) * 5,
    ).fetchall()
    out = []
    for kind, name, who in rows:
        shown = _KINDS.get(kind[6:], "relation") if kind.startswith("class:") else kind
        out.append((shown, name, who))
    return out


def _logins(conn: PgConnection) -> list[str]:
    """The logins ``pg grant`` made kbdesk users (none before row security is installed)."""
    if not conn.execute("SELECT to_regclass('kbdesk_logins') IS NOT NULL").fetchone()[0]:
        return []
    return [r[0] for r in conn.execute("SELECT login FROM kbdesk_logins ORDER BY login").fetchall()]


def kbdesk_users_owning(conn: PgConnection) -> list[tuple[str, str]]:
    """(table, owner) of the tables kbdesk trusts that belong to a kbdesk user."""
    logins = _logins(conn)
    if not logins:
        return []
    rows = conn.execute(
        "SELECT c.relname::text, pg_get_userbyid(c.relowner)::text FROM pg_class c "
        "WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relname = ANY(%s) "
        "AND pg_get_userbyid(c.relowner)::text = ANY(%s) ORDER BY 1",
        (list(TRUSTED_TABLES), logins),
    ).fetchall()
    return [(str(t), str(o)) for t, o in rows]


def check_not_planted(conn: PgConnection, label: str) -> None:
    """Refuse, naming each, objects of kbdesk's names (or tables it trusts) that
    another login made: kbdesk never uses what it did not make."""
    found = planted(conn)
    if found:
        kind, name, who = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        drop = "DROP " + ("FUNCTION" if kind == "function" else kind.upper())
        raise StoreError(
            f"{label}: the {kind} {name} belongs to '{who}', not to the owner of kbdesk's tables"
            f" ('{expected_owner(conn)}'){more}; kbdesk never uses an object it did not make: look at it, "
            f"drop it ({drop} {name};) and run again"
        )
    owned = kbdesk_users_owning(conn)
    if owned:
        table, who = owned[0]
        raise StoreError(
            f"{label}: the table {table} belongs to the kbdesk user '{who}', who could change it to suit "
            "themselves; kbdesk does not trust it: its tables must belong to the administrator's login"
        )


def creators(conn: PgConnection) -> tuple[bool, list[str]]:
    """Whether everyone (PUBLIC) may create objects in kbdesk's schema, and which kbdesk
    users may (other than through PUBLIC)."""
    public = bool(
        conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace n, aclexplode(coalesce(n.nspacl, acldefault('n', "
            "n.nspowner))) a WHERE n.oid = to_regnamespace(current_schema()) AND a.grantee = 0 "
            "AND a.privilege_type = 'CREATE')"
        ).fetchone()[0]
    )
    users = [
        r[0]
        for r in conn.execute(
            "SELECT r.rolname::text FROM pg_roles r WHERE r.rolname = ANY(%s) AND NOT r.rolsuper "
            "AND has_schema_privilege(r.oid, current_schema(), 'CREATE') ORDER BY 1",
            (_logins(conn),),
        ).fetchall()
    ]
    for role in (ROLE_USER, ROLE_ADMIN):  # the group roles themselves must not hold it either
        if conn.execute(
            "SELECT to_regrole(%s) IS NOT NULL AND has_schema_privilege(%s, current_schema(), 'CREATE')", (role, role)
        ).fetchone()[0]:
            users.append(role)
    return public, users


def secure_schema(conn: PgConnection, label: str) -> list[str]:
    """Make sure no one but its owner creates objects in kbdesk's schema: revoke CREATE
    from PUBLIC (and from kbdesk users who hold it directly); refuse in one line when
    this login may not. Returns what was repaired, each a line for the administrator."""
    import psycopg
    from psycopg import sql

    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    ident = sql.Identifier(schema)
    done: list[str] = []
    public, users = creators(conn)
    try:
        if public:
            with conn.transaction():
                conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM PUBLIC").format(ident))
            done.append(
                f"every login could create objects in schema {schema} (the default before PostgreSQL 15): "
                f"revoked (REVOKE CREATE ON SCHEMA {schema} FROM PUBLIC)"
            )
        for login in users:
            with conn.transaction():
                conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM {}").format(ident, sql.Identifier(login)))
    except psycopg.errors.InsufficientPrivilege:
        raise StoreError(
            f"{label}: every login may create objects in schema {schema}, so a user could plant tables and "
            "functions where kbdesk looks for its own; this login may not change that: the schema's owner (or a "
            f"superuser) runs REVOKE CREATE ON SCHEMA {schema} FROM PUBLIC; then run pg setup again"
        ) from None
    _, still = creators(conn)
    if still:
        raise StoreError(
            f"{label}: the kbdesk user '{still[0]}' may create objects in schema {schema} (through a role "
            f"it belongs to, or as the database's owner): take that away (REVOKE CREATE ON SCHEMA {schema} "
            "FROM …) or give that person a login of their own; then run pg setup again"
        )
    return done
