"""Row-level security on a team server: who a login is, and what it may read and change.

The database, not the client, decides. A kbdesk user is a database login mapped to a
user id in ``kbdesk_logins`` (``kbdesk pg grant``); admin is membership in the role
``kbdesk_admin``; team membership and team admin come from ``team_members`` (kbdesk's
own, or the server's) or, on a server whose teams table has no membership table,
``kbdesk_team_members``. Nothing a client sends (its config, a ``SET``) changes them:
the helper functions read ``session_user``, which stays the login even inside a
SECURITY DEFINER function and cannot be changed by a non-superuser.

Helper functions (SECURITY DEFINER, ``search_path`` pinned to kbdesk's schema, so
they read the mapping tables users have no privilege on, and cannot be redirected):

- ``kbdesk_uid()`` — the login's user id, or NULL for a login that is not a kbdesk user;
- ``kbdesk_is_admin()`` — a kbdesk user who is a member of ``kbdesk_admin``;
- ``kbdesk_team_ids(admin_only)`` — the user's teams (or those they administer);
- ``kbdesk_my_channel(id)`` — the channel is the user's (where channels have owners);
- ``kbdesk_whoami()`` — all of it at once, for the client to show and to word refusals;
- ``kbdesk_picker()`` — (SECURITY INVOKER) the KBs a picker shows: seed 002's
  "personal + team + discoverable global" (a system admin sees every global KB).

Policies (all ``TO PUBLIC``; every expression calls the helpers through a sub-select,
so each is evaluated once per statement, not once per row):

- ``knowledge_bases``: read personal (owner), team (members; system admins), global
  (every kbdesk user while it is discoverable; system admins always); create, change
  and delete personal (owner), team (its admins; system admins), global (system
  admins). Triggers let only the owner or a system admin change ``discoverable``, only
  a system admin give a team KB an owner, change a KB's owner or move a KB to another
  scope or team, and keep a KB's name free for all its readers (:mod:`.guards`).
- ``kb_documents``, ``kb_chunks`` and any other ``kbdesk_*`` table keyed by ``kb_id``:
  readable when the KB is, writable when the KB may be changed (a chunk only beside
  a document of its own KB).
- ``kbdesk_document_blobs``: through their document, the same way.
- ``channel_knowledge_bases``: the user's own channels, binding KBs they can read.
- the chat (``channels`` of kbdesk's own, ``kbdesk_personas``, ``kbdesk_projects``,
  ``kbdesk_notes``, ``kbdesk_user_settings``): the owner's rows only; messages through
  their channel, tool calls through their message, note vectors through their note;
  persona and project bindings are the owner's and reach only KBs they can read; a
  conversation names only its owner's persona and project.
- ``kbdesk_audit_log``: append-only, as yourself, about KBs you can read (or one just
  deleted), stamped with the database's clock; read your own entries, those of KBs
  you manage, and as a system admin those of every KB you can read (never another
  user's personal KB: its name and file names are theirs). ``kbdesk_usage_log``:
  append-only, as yourself, the same way; your own rows, or all as a system admin
  (costs).
- ``kbdesk_embedding_cache``: one cache per user (``user_id``), never shared: a
  cached vector is readable text in another form, and a shared one could be poisoned.

Superusers, roles with BYPASSRLS and the tables' owner bypass all of this (owners
unless FORCE ROW LEVEL SECURITY, which kbdesk does not set: its owner is the
administrator's login, who could switch row security off anyway). That is why
``kbdesk pg grant`` refuses such logins, and why the client honours its config's
``[identity]`` only for them.
"""

from __future__ import annotations

import kbdesk.store.postgres.guards as guards
import kbdesk.store.postgres.tombstones as tombstones
from kbdesk.store.dbapi import Connection
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.rules import (  # noqa: F401 - re-exported: the rules' names, where they always were
    ADMIN,
    ADMIN_TEAM_ROLES,
    MANAGED_KBS,
    NO_USER,
    READABLE_KBS,
    ROLE_ADMIN,
    ROLE_USER,
    UID,
    managed,
    visible,
)

KB_KEYED = ("kb_documents", "kb_chunks")  # plus any kbdesk_* table with a kb_id column
# the chat's tables (store/postgres/chat_tables.py): every row is one user's
CHAT_TABLES = (
    "kbdesk_personas",
    "kbdesk_persona_knowledge_bases",
    "kbdesk_projects",
    "kbdesk_project_knowledge_bases",
    "kbdesk_chat_messages",
    "kbdesk_chat_tool_calls",
    "kbdesk_notes",
    "kbdesk_note_vectors",
    "kbdesk_user_settings",
)
SPECIAL = {
    "kbdesk_audit_log",
    "kbdesk_usage_log",
    "kbdesk_embedding_cache",
    "kbdesk_document_blobs",
    "kbdesk_settings",
    "kbdesk_migrations",
    "kbdesk_logins",
    "kbdesk_team_members",
    *CHAT_TABLES,
}


def install_row_security(conn: PgConnection) -> None:
    """Mapping tables, helper functions, policies; idempotent (the migration step
    ``row_security`` runs it, ``kbdesk pg setup`` runs it again to repair)."""
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    path = f"{_ident(conn, schema)}, pg_temp"
    conn.execute("""CREATE TABLE IF NOT EXISTS kbdesk_logins (
        login      TEXT PRIMARY KEY,
        user_id    UUID NOT NULL UNIQUE,
        granted_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""")
    members, has_role = membership_table(conn, create=True)
    _functions(conn, path, members, has_role)
    _embedding_cache_per_user(conn)
    guards.install_kb_exists(conn, path)
    tombstones.install(conn, path)  # before the policies that call kbdesk_kb_gone
    for table, policies in _policies(conn).items():
        conn.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        known = {
            r[0]
            for r in conn.execute(
                "SELECT policyname FROM pg_policies WHERE schemaname = current_schema() "
                "AND tablename = %s AND policyname LIKE 'kbdesk\\_%%'",
                (table,),
            )
        }
        for name in known - {p[0] for p in policies}:
            conn.execute(f"DROP POLICY IF EXISTS {name} ON {table}")
        for name, command, using, check in policies:
            conn.execute(f"DROP POLICY IF EXISTS {name} ON {table}")
            conn.execute(
                f"CREATE POLICY {name} ON {table} FOR {command}"
                + (f" USING ({using})" if using else "")
                + (f" WITH CHECK ({check})" if check else "")
            )
    for statement in [
        "DROP TRIGGER IF EXISTS kbdesk_guard_insert ON knowledge_bases",
        "DROP TRIGGER IF EXISTS kbdesk_guard_update ON knowledge_bases",
        "CREATE TRIGGER kbdesk_guard_insert BEFORE INSERT ON knowledge_bases FOR EACH ROW "
        "WHEN (NEW.scope <> 'personal' AND NEW.owner_id IS NOT NULL) EXECUTE FUNCTION kbdesk_guard_kb()",
        "CREATE TRIGGER kbdesk_guard_update BEFORE UPDATE OF owner_id, discoverable, scope, team_id "
        "ON knowledge_bases FOR EACH ROW "
        "WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id OR OLD.discoverable IS DISTINCT FROM NEW.discoverable "
        "OR OLD.scope IS DISTINCT FROM NEW.scope OR OLD.team_id IS DISTINCT FROM NEW.team_id) "
        "EXECUTE FUNCTION kbdesk_guard_kb()",
    ]:
        conn.execute(statement)
    guards.install_name_rule(conn, path, members)
    guards.install_stamps(conn, path)
    guards.install_team_members(conn, path, members, has_role)
    guards.install_delete_function(
        conn, path, guards.delete_conditions("channels" in own_tables(conn), _exists(conn, "kbdesk_notes"))
    )


def membership_table(conn: Connection, *, create: bool = False) -> tuple[str, bool]:
    """(table, has a role column) where team membership lives.

    ``team_members`` when the database has one (kbdesk's own beside its own teams, or
    the team server's); otherwise kbdesk keeps it in ``kbdesk_team_members``.
    """
    if _exists(conn, "team_members"):
        cols = _columns(conn, "team_members")
        missing = {"team_id", "user_id"} - cols
        if missing:
            from kbdesk.errors import StoreError

            raise StoreError(
                f"the server's team_members table has no {', '.join(sorted(missing))} column: "
                "kbdesk cannot read team membership from it"
            )
        return "team_members", "role" in cols
    if create:
        from kbdesk.store.postgres.seed import team_members_ddl

        conn.execute(team_members_ddl("kbdesk_team_members"))
    return "kbdesk_team_members", True


def _functions(conn: PgConnection, path: str, members: str, has_role: bool) -> None:
    definer = f"LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {path}"
    admin_roles = ", ".join(f"'{r}'" for r in ADMIN_TEAM_ROLES)
    role = f"CASE WHEN role IN ({admin_roles}) THEN 'admin' ELSE 'member' END" if has_role else "'member'"
    admin_only = f"role IN ({admin_roles})" if has_role else "false"
    owned_channels = "owner_id" in _columns(conn, "channels")
    for ddl in [
        f"""CREATE OR REPLACE FUNCTION kbdesk_uid() RETURNS uuid {definer} AS $$
            SELECT user_id FROM kbdesk_logins WHERE login = session_user::text $$""",
        f"""CREATE OR REPLACE FUNCTION kbdesk_is_admin() RETURNS boolean {definer} AS $$
            SELECT kbdesk_uid() IS NOT NULL AND EXISTS (
                SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = '{ROLE_ADMIN}'
                AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')) $$""",
        f"""CREATE OR REPLACE FUNCTION kbdesk_team_ids(admin_only boolean) RETURNS uuid[] {definer} AS $$
            SELECT coalesce(array_agg(team_id), '{{}}') FROM {members}
            WHERE user_id = kbdesk_uid() AND (NOT admin_only OR {admin_only}) $$""",
        f"""CREATE OR REPLACE FUNCTION kbdesk_my_channel(channel uuid) RETURNS boolean {definer} AS $$
            SELECT kbdesk_uid() IS NOT NULL AND """
        + (
            "EXISTS (SELECT 1 FROM channels WHERE id = channel AND owner_id = kbdesk_uid())"
            if owned_channels
            else "channel IS NOT NULL"
        )
        + " $$",
        f"""CREATE OR REPLACE FUNCTION kbdesk_whoami(OUT user_id uuid, OUT login text, OUT admin boolean,
                                                     OUT teams jsonb) {definer} AS $$
            SELECT kbdesk_uid(), session_user::text, kbdesk_is_admin(),
                   (SELECT coalesce(jsonb_object_agg(team_id::text, {role}), '{{}}') FROM {members}
                    WHERE user_id = kbdesk_uid()) $$""",
        f"""CREATE OR REPLACE FUNCTION kbdesk_picker() RETURNS SETOF knowledge_bases
            LANGUAGE sql STABLE SET search_path = {path} AS $$
            SELECT * FROM knowledge_bases WHERE scope <> 'global' OR discoverable OR kbdesk_is_admin() $$""",
        # who owns a KB decides who may hide it: only a system admin gives a team or
        # global KB an owner, changes one or moves a KB across scopes (a personal KB
        # made a team KB would keep its owner), only the owner or a system admin the flag
        f"""CREATE OR REPLACE FUNCTION kbdesk_guard_kb() RETURNS trigger
            LANGUAGE plpgsql SET search_path = {path} AS $$
            BEGIN
                IF kbdesk_uid() IS NULL OR kbdesk_is_admin() THEN
                    RETURN NEW;
                END IF;
                IF TG_OP = 'INSERT' THEN
                    RAISE EXCEPTION 'only a system admin may give a % knowledge base an owner', NEW.scope
                        USING ERRCODE = 'insufficient_privilege';
                END IF;
                IF NEW.owner_id IS DISTINCT FROM OLD.owner_id THEN
                    RAISE EXCEPTION 'only a system admin may change who owns ''%''', OLD.name
                        USING ERRCODE = 'insufficient_privilege';
                END IF;
                IF NEW.scope IS DISTINCT FROM OLD.scope OR NEW.team_id IS DISTINCT FROM OLD.team_id THEN
                    RAISE EXCEPTION 'only a system admin may move ''%'' to another scope or team', OLD.name
                        USING ERRCODE = 'insufficient_privilege';
                END IF;
                IF OLD.owner_id IS DISTINCT FROM kbdesk_uid() THEN
                    RAISE EXCEPTION 'only the owner of ''%'' or a system admin may change whether it is discoverable',
                        OLD.name USING ERRCODE = 'insufficient_privilege';
                END IF;
                RETURN NEW;
            END $$""",
    ]:
        conn.execute(ddl)


def _embedding_cache_per_user(conn: PgConnection) -> None:
    """Give the cache a user column (existing rows: the owner's) and key rows by it."""
    conn.execute(
        f"ALTER TABLE kbdesk_embedding_cache ADD COLUMN IF NOT EXISTS user_id UUID NOT NULL "
        f"DEFAULT coalesce(kbdesk_uid(), '{NO_USER}'::uuid)"
    )
    key = conn.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
        "'kbdesk_embedding_cache'::regclass AND contype = 'p'"
    ).fetchone()
    if key is None or "user_id" not in key[0]:
        conn.execute(
            "ALTER TABLE kbdesk_embedding_cache DROP CONSTRAINT IF EXISTS kbdesk_embedding_cache_pkey, "
            "ADD CONSTRAINT kbdesk_embedding_cache_pkey PRIMARY KEY (model, text_hash, user_id)"
        )


Policy = tuple[str, str, str | None, str | None]  # name, command, USING, WITH CHECK


def _policies(conn: PgConnection) -> dict[str, list[Policy]]:
    def per_kb(read: str, write: str) -> list[Policy]:
        return [
            ("kbdesk_read", "SELECT", read, None),
            ("kbdesk_add", "INSERT", None, write),
            ("kbdesk_change", "UPDATE", write, write),
            ("kbdesk_remove", "DELETE", write, None),
        ]

    kb_read, kb_write = f"kb_id = ANY ({READABLE_KBS})", f"kb_id = ANY ({MANAGED_KBS})"
    # a tombstoned KB (a user deleted it, its rows not yet purged: .tombstones) is gone for everyone
    here = f"NOT {tombstones.gone_sql('id')}"
    out: dict[str, list[Policy]] = {"knowledge_bases": per_kb(f"{visible()} AND {here}", f"{managed()} AND {here}")}
    for table in KB_KEYED + tuple(kbdesk_kb_tables(conn)):
        out[table] = per_kb(kb_read, kb_write)
    # a chunk belongs to a document of its own KB (never planted beside another's document)
    out["kb_chunks"] = per_kb(
        kb_read,
        f"{kb_write} AND EXISTS (SELECT 1 FROM kb_documents d "
        "WHERE d.id = kb_chunks.document_id AND d.kb_id = kb_chunks.kb_id)",
    )
    out["kbdesk_document_blobs"] = per_kb(
        "EXISTS (SELECT 1 FROM kb_documents d WHERE d.id = document_id)",
        f"EXISTS (SELECT 1 FROM kb_documents d WHERE d.id = document_id AND d.kb_id = ANY ({MANAGED_KBS}))",
    )
    binding = f"kb_id = ANY ({READABLE_KBS}) AND kbdesk_my_channel(channel_id)"
    out["channel_knowledge_bases"] = [("kbdesk_bindings", "ALL", binding, binding)]
    mine = f"user_id = {UID}"
    # about a KB you can read, or one gone (deleted in this very transaction)
    about = f"(kb_id IS NULL OR kb_id = ANY ({READABLE_KBS}) OR NOT kbdesk_kb_exists(kb_id))"
    out["kbdesk_audit_log"] = [
        (
            "kbdesk_read",
            "SELECT",
            f"{mine} OR kb_id = ANY ({MANAGED_KBS}) OR ({ADMIN} AND (kb_id IS NULL OR kb_id = ANY ({READABLE_KBS})))",
            None,
        ),
        ("kbdesk_add", "INSERT", None, f"{mine} AND {about}"),
    ]
    out["kbdesk_usage_log"] = [
        ("kbdesk_read", "SELECT", f"{mine} OR {ADMIN}", None),
        ("kbdesk_add", "INSERT", None, f"{mine} AND {about}"),
    ]
    out["kbdesk_embedding_cache"] = [("kbdesk_own", "ALL", mine, mine)]
    if "channels" in own_tables(conn):
        out["channels"] = [("kbdesk_own", "ALL", f"owner_id = {UID}", f"owner_id = {UID}")]
    if _exists(conn, "kbdesk_notes"):  # the chat step has run
        out.update(_chat_policies("persona_id" in _columns(conn, "channels") and "channels" in out))
    return out


def _chat_policies(own_channels: bool) -> dict[str, list[Policy]]:
    """Each row of the chat's tables is its user's alone: by ``owner_id``, or through the
    row it belongs to (a row that row security hides is not there for the EXISTS);
    persona and project bindings reach only KBs the user can read."""

    def only(condition: str) -> list[Policy]:
        return [("kbdesk_own", "ALL", condition, condition)]

    def of(parent: str, key: str) -> str:
        return f"EXISTS (SELECT 1 FROM {parent} p WHERE p.id = {key})"

    mine, readable = f"owner_id = {UID}", f"kb_id = ANY ({READABLE_KBS})"
    out = {t: only(mine) for t in ("kbdesk_personas", "kbdesk_projects", "kbdesk_notes", "kbdesk_user_settings")}
    out["kbdesk_persona_knowledge_bases"] = only(f"{of('kbdesk_personas', 'persona_id')} AND {readable}")
    out["kbdesk_project_knowledge_bases"] = only(f"{of('kbdesk_projects', 'project_id')} AND {readable}")
    out["kbdesk_chat_messages"] = only("kbdesk_my_channel(channel_id)")
    out["kbdesk_chat_tool_calls"] = only(of("kbdesk_chat_messages", "message_id"))
    out["kbdesk_note_vectors"] = only(of("kbdesk_notes", "note_id"))
    if own_channels:  # a conversation names only the user's own persona and project
        out["channels"] = [
            (
                "kbdesk_own",
                "ALL",
                mine,
                f"{mine} AND (persona_id IS NULL OR "
                f"{of('kbdesk_personas', 'persona_id')}) AND (project_id IS NULL OR "
                f"{of('kbdesk_projects', 'project_id')})",
            )
        ]
    return out


def kbdesk_kb_tables(conn: PgConnection) -> list[str]:
    """kbdesk's own tables keyed by KB that have no policies of their own here (say,
    keyword statistics): they get the documents' rules. Only tables of the owner of
    kbdesk's tables: one another login planted is never adopted."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
        "WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relkind IN ('r', 'p') "
        "AND c.relname LIKE 'kbdesk\\_%' AND a.attname = 'kb_id' AND NOT a.attisdropped "
        "AND c.relowner = (SELECT relowner FROM pg_class WHERE oid = to_regclass('knowledge_bases')) "
        "ORDER BY c.relname"
    ).fetchall()
    return [r[0] for r in rows if r[0] not in SPECIAL]


def secured_tables(conn: PgConnection) -> list[str]:
    """Every table that carries kbdesk's policies."""
    return list(_policies(conn))


def own_tables(conn: PgConnection) -> set[str]:
    """The seed-side tables kbdesk made itself (users, teams, channels) in this database."""
    row = conn.execute("SELECT value FROM kbdesk_settings WHERE key = 'own_tables'").fetchone()
    return set(row[0].split(",")) if row and row[0] else set()


def _exists(conn: Connection, table: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]


def _columns(conn: Connection, table: str) -> set[str]:
    rows = conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
        (table,),
    ).fetchall()
    return {r[0] for r in rows}


def _ident(conn: PgConnection, name: str) -> str:
    return conn.execute("SELECT quote_ident(%s)", (name,)).fetchone()[0]
