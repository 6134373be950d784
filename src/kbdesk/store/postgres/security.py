"""Team servers: who a connection is, and what kbdesk users may do on each table.

On a team server every person connects with a database login of their own. The
administrator prepares the database once (``kbdesk pg setup``, :mod:`.admin`) and
makes each existing login a kbdesk user (``kbdesk pg grant``); from then on the
database decides what each login reads and changes (:mod:`.rls`).

A connection is one of three kinds (:func:`session`):

- a **kbdesk user** (a login ``kbdesk pg grant`` mapped): who they are comes from the
  database (:func:`database_identity`); their config's ``[identity]`` is ignored;
- the **owner** (a superuser, a role with BYPASSRLS, or the tables' owner): row
  security does not apply to it, so kbdesk acts as its config's ``[identity]`` and
  checks the rules itself — a local single-user server, or the administrator;
- anyone else: refused, with the command that would let them in.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbdesk.errors import StoreError
from kbdesk.store.postgres.access import Identity
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.rls import (
    CHAT_TABLES,
    ROLE_ADMIN,
    ROLE_USER,
    install_row_security,
    kbdesk_kb_tables,
    own_tables,
)
from kbdesk.store.postgres.schema import MIGRATIONS, _first_line, current_version

# what a kbdesk user may do on each table (row security decides which rows)
READ_WRITE = (
    "knowledge_bases",
    "kb_documents",
    "kb_chunks",
    "channel_knowledge_bases",
    "kbdesk_document_blobs",
    "kbdesk_embedding_cache",
    *CHAT_TABLES,
)
APPEND_ONLY = ("kbdesk_audit_log", "kbdesk_usage_log")
READ_ONLY = ("kbdesk_settings", "kbdesk_migrations")
# SECURITY DEFINER helpers every login may call (row security's policies call them)
USER_FUNCTIONS = (
    "kbdesk_uid",
    "kbdesk_is_admin",
    "kbdesk_team_ids",
    "kbdesk_my_channel",
    "kbdesk_whoami",
    "kbdesk_kb_exists",
    "kbdesk_kb_gone",
)
# … and those only kbdesk users may call
USER_ONLY_FUNCTIONS = (
    "kbdesk_delete(text,jsonb)",
    "kbdesk_team_members(uuid)",
    "kbdesk_forget_kb(uuid)",
    "kbdesk_purge_kbs()",
)


def writable_columns(conn: PgConnection, table: str) -> list[str]:
    """The columns a user may write: all but identity and generated ones."""
    rows = conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped "
        "AND attidentity = '' AND attgenerated = '' ORDER BY attnum",
        (table,),
    ).fetchall()
    return [r[0] for r in rows]


@dataclass(frozen=True)
class Session:
    """What the server says about this connection."""

    login: str  # session_user: the login, whatever SET ROLE says
    superuser: bool
    bypass: bool  # row security does not apply: superuser, BYPASSRLS, or the tables' owner
    tables: bool  # kbdesk's schema is there
    owner: str | None  # the role owning kbdesk's tables
    secured: bool  # row security is installed (the migration step row_security ran)
    user_id: str | None  # the login's kbdesk user id; None: not a kbdesk user

    @property
    def kind(self) -> str:
        return "user" if self.user_id else "owner" if self.bypass or not self.tables else "stranger"


def session(conn: PgConnection) -> Session:
    row = conn.execute(
        "SELECT session_user::text, r.rolsuper, r.rolsuper OR r.rolbypassrls OR coalesce(pg_has_role(current_user, "
        "c.relowner, 'USAGE'), false), c.oid IS NOT NULL, pg_get_userbyid(c.relowner)::text, "
        "to_regprocedure('kbdesk_uid()') IS NOT NULL FROM pg_roles r "
        "LEFT JOIN pg_class c ON c.oid = to_regclass('knowledge_bases') WHERE r.rolname = current_user"
    ).fetchone()
    login, superuser, bypass, tables, owner, secured = row
    user_id = None
    if secured:
        found = conn.execute("SELECT kbdesk_uid()").fetchone()[0]
        user_id = str(found) if found else None
    return Session(login, bool(superuser), bool(bypass), bool(tables), owner, bool(secured), user_id)


def check_can_open(conn: PgConnection, who: Session, label: str) -> None:
    """Refuse, in one line naming the fix, a login row security would show nothing to."""
    if who.bypass or not who.tables:
        return  # the owner (or the first opener, who becomes it)
    if not who.secured:
        raise StoreError(
            f"{label} has not been prepared for kbdesk users yet (row-level security), which only "
            f"the owner of its tables ({who.owner}) may do: ask an administrator to run kbdesk pg setup"
        )
    if who.user_id is None:
        raise StoreError(
            f"the login '{who.login}' is not a kbdesk user of {label}: an administrator makes it one "
            f"with kbdesk --db URI pg grant {who.login}"
        )
    if current_version(conn) < len(MIGRATIONS):
        raise StoreError(
            f"{label} needs kbdesk's schema update, which only the owner of its tables ({who.owner}) "
            "may apply: ask an administrator to run kbdesk pg setup"
        )


def database_identity(conn: PgConnection) -> Identity:
    """The kbdesk user this login is: id, name, admin and teams, all from the server."""
    user_id, login, admin, teams = conn.execute("SELECT user_id, login, admin, teams FROM kbdesk_whoami()").fetchone()
    if user_id is None:
        raise StoreError(f"the login '{login}' is not a kbdesk user of this database")
    return Identity(
        str(user_id), login, bool(admin), {str(k).lower(): v for k, v in (teams or {}).items()}, source="database"
    )


def roles_exist(conn: PgConnection) -> bool:
    row = conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = ANY(%s)", ([ROLE_USER, ROLE_ADMIN],)).fetchone()
    return row[0] == 2


def secure(conn: PgConnection) -> None:
    """Policies again, and (once ``pg setup`` made the roles) grants: after any schema
    change, so a table a newer step added is covered before a user meets it."""
    from kbdesk.store.postgres.locks import migration_lock

    with conn.transaction():
        migration_lock(conn)
        install_row_security(conn)
        if roles_exist(conn):
            apply_grants(conn)


def apply_grants(conn: PgConnection) -> list[str]:
    """What ``kbdesk_user`` may do on each table (row security decides which rows).

    Never a table-level UPDATE, DELETE or TRUNCATE: any of them lets a login ``LOCK
    TABLE … IN ACCESS EXCLUSIVE MODE`` and freeze everyone. Users update columns (all
    but identity and generated ones: the keys nobody writes by hand), insert the same
    columns, and delete through ``kbdesk_delete`` (:mod:`.guards`); they get no
    privilege on sequences (an identity column's default needs none).

    Returns what could not be granted (a team server's own ``teams`` table this owner
    does not own, say), each as a line for the administrator.
    """
    from psycopg import sql

    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    user = sql.Identifier(ROLE_USER)
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), user))
    own = own_tables(conn)
    read_write = list(READ_WRITE) + (["channels"] if "channels" in own else [])
    plan = [(t, True, True) for t in read_write]
    plan += [(t, True, False) for t in APPEND_ONLY] + [(t, False, False) for t in READ_ONLY]
    # kbdesk's other per-KB tables (keyword statistics…) are kept by its own triggers:
    # users read those of the KBs they can read, and write none
    plan += [(t, False, False) for t in kbdesk_kb_tables(conn)]
    for table, insert, update in plan:
        if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]:
            continue
        ident = sql.Identifier(table)
        conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(ident, user))  # column grants go with it
        conn.execute(sql.SQL("REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON {} FROM PUBLIC").format(ident))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(ident, user))
        writable = sql.SQL(", ").join(sql.Identifier(c) for c in writable_columns(conn, table))
        if insert:
            conn.execute(sql.SQL("GRANT INSERT ({}) ON {} TO {}").format(writable, ident, user))
        if update:
            conn.execute(sql.SQL("GRANT UPDATE ({}) ON {} TO {}").format(writable, ident, user))
        for (seq,) in conn.execute(
            "SELECT pg_get_serial_sequence(%s, attname) FROM pg_attribute WHERE attrelid = "
            "to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
            (table, table),
        ).fetchall():
            if seq:
                conn.execute(sql.SQL("REVOKE ALL ON SEQUENCE {} FROM {}").format(sql.SQL(seq), user))
    # a SECURITY DEFINER function runs as its owner: users call only the identity helpers
    for (signature,) in conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = to_regnamespace(current_schema()) "
        "AND p.proname LIKE 'kbdesk\\_%%' AND p.prosecdef AND NOT p.proname = ANY(%s)",
        (list(USER_FUNCTIONS),),
    ).fetchall():
        conn.execute(sql.SQL("REVOKE EXECUTE ON FUNCTION " + signature + " FROM PUBLIC"))
    for signature in USER_ONLY_FUNCTIONS:
        if conn.execute("SELECT to_regprocedure(%s) IS NOT NULL", (signature,)).fetchone()[0]:
            conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION " + signature + " TO {}").format(user))
    missed = []
    try:  # team names: for creating team KBs and naming teams; a server's own table may not be ours to share
        with conn.transaction():
            conn.execute(sql.SQL("GRANT SELECT ON teams TO {}").format(user))
    except Exception as exc:  # noqa: BLE001 - reported to the administrator
        missed.append(
            f"kbdesk users cannot read the teams table ({_first_line(exc)}): its owner may run "
            f"GRANT SELECT ON teams TO {ROLE_USER}"
        )
    return missed
