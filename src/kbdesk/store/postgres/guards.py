"""What the database itself refuses on a team server, beyond who sees which row (:mod:`.rls`).

**No table-level UPDATE or DELETE for users.** ``LOCK TABLE … IN ACCESS EXCLUSIVE
MODE`` needs only table-level UPDATE, DELETE or TRUNCATE, and row security does not
stop it: a login holding such a privilege could freeze everyone's searches. So users
get UPDATE on columns only (every column but identity and generated ones, which
nobody writes: the integer keys ``kb_chunks.seq``, the audit and usage ids, message
and note order), and delete through :func:`kbdesk_delete(table, keys)`, a SECURITY
DEFINER function that deletes the given rows only where the same rule as row
security's holds — written out here without relying on row security (the function
runs as the tables' owner), for every table a user deletes from:
:func:`delete_conditions`. The store calls it for a kbdesk user's deletes
(:meth:`kbdesk.store.postgres.engine.PostgresEngine.delete`); the owner deletes
directly.

**Names.** A KB's name is unique (any case) among the KBs each of its readers sees
(``kbdesk_check_kb_name``, before insert and before a change of name or scope): a
team KB's name is free for every member of the team, a global KB's for everyone.
A team admin, who cannot see members' personal KBs, learns only that the name is
taken.

**Audit and usage rows** are written as yourself (row security), about KBs you can
read (or one just deleted), with the database's clock (``kbdesk_stamp``) and counts
that are not negative (CHECK constraints, schema step ``hostile_logins``).
"""

from __future__ import annotations

import kbdesk.store.postgres.tombstones as tombstones
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.rules import ADMIN_TEAM_ROLES, MANAGED_KBS, UID, managed

DELETE_FUNCTION = "kbdesk_delete"
NAME_CONSTRAINT = "kbdesk_kb_name"  # the constraint name the name rule's errors carry


def delete_conditions(own_channels: bool, chat: bool) -> dict[str, str]:
    """For each table a user deletes from: when a row may go, written without help from
    row security (``kbdesk_delete`` runs as the owner)."""
    mine = f"owner_id = {UID}"
    out = {
        "knowledge_bases": managed(),
        "kb_documents": f"kb_id = ANY ({MANAGED_KBS})",
        "kb_chunks": f"kb_id = ANY ({MANAGED_KBS})",
        "kbdesk_document_blobs": "EXISTS (SELECT 1 FROM kb_documents d WHERE d.id = document_id "
        f"AND d.kb_id = ANY ({MANAGED_KBS}))",
        "channel_knowledge_bases": "kbdesk_my_channel(channel_id)",
        "kbdesk_embedding_cache": f"user_id = {UID}",
    }
    if own_channels:
        out["channels"] = mine
    if chat:
        for table in ("kbdesk_personas", "kbdesk_projects", "kbdesk_notes", "kbdesk_user_settings"):
            out[table] = mine
        for owner in ("persona", "project"):
            out[f"kbdesk_{owner}_knowledge_bases"] = (
                f"EXISTS (SELECT 1 FROM kbdesk_{owner}s p WHERE p.id = {owner}_id AND p.owner_id = {UID})"
            )
        out["kbdesk_chat_messages"] = "kbdesk_my_channel(channel_id)"
        out["kbdesk_chat_tool_calls"] = (
            "EXISTS (SELECT 1 FROM kbdesk_chat_messages m WHERE m.id = message_id AND kbdesk_my_channel(m.channel_id))"
        )
        out["kbdesk_note_vectors"] = (
            f"EXISTS (SELECT 1 FROM kbdesk_notes n WHERE n.id = note_id AND n.owner_id = {UID})"
        )
    return out


def primary_key(conn: PgConnection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(%s) AND i.indisprimary ORDER BY a.attnum",
        (table,),
    ).fetchall()
    return [r[0] for r in rows]


def install_delete_function(conn: PgConnection, path: str, conditions: dict[str, str]) -> list[str]:
    """``kbdesk_delete(table text, keys jsonb) → bigint``: delete the rows of ``table``
    whose primary keys ``keys`` (a JSON array of objects) names, where the table's
    condition allows. Returns the tables it covers."""
    branches, covered = [], []
    for table, condition in conditions.items():
        key = primary_key(conn, table)
        if not key:
            continue  # no primary key (a team server's own table): users cannot delete there
        cols = ", ".join(key)
        picked = ", ".join(f"k.{c}" for c in key)
        branches.append(
            f"WHEN '{table}' THEN DELETE FROM {table} WHERE ({cols}) IN (SELECT {picked} FROM "
            f"jsonb_populate_recordset(NULL::{table}, p_keys) k) AND ({condition});"
        )
        covered.append(table)
    conn.execute(f"""CREATE OR REPLACE FUNCTION {DELETE_FUNCTION}(p_table text, p_keys jsonb) RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $f$
        DECLARE gone bigint;
        BEGIN
            IF kbdesk_uid() IS NULL THEN
                RAISE EXCEPTION 'only a kbdesk user deletes through {DELETE_FUNCTION}'
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            CASE p_table
            {" ".join(branches)}
            ELSE RAISE EXCEPTION 'kbdesk users do not delete from %', p_table USING ERRCODE = 'insufficient_privilege';
            END CASE;
            GET DIAGNOSTICS gone = ROW_COUNT;
            RETURN gone;
        END $f$""")
    conn.execute(f"REVOKE ALL ON FUNCTION {DELETE_FUNCTION}(text, jsonb) FROM PUBLIC")
    return covered


def install_name_rule(conn: PgConnection, path: str, members: str) -> None:
    """A KB's name is free for everyone who reads it (see the module doc)."""
    same = (  # a tombstoned KB's name is free (.tombstones)
        "lower(k.name) = lower(NEW.name) AND k.id IS DISTINCT FROM NEW.id "
        f"AND NOT EXISTS (SELECT 1 FROM {tombstones.TABLE} g WHERE g.id = k.id)"
    )
    raise_taken = (
        "RAISE EXCEPTION USING ERRCODE = 'unique_violation', CONSTRAINT = '" + NAME_CONSTRAINT + "', MESSAGE = "
    )
    conn.execute(f"""CREATE OR REPLACE FUNCTION kbdesk_check_kb_name() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $f$
        BEGIN
            IF NEW.scope = 'global' THEN
                IF EXISTS (SELECT 1 FROM knowledge_bases k WHERE {same}) THEN
                    {raise_taken} format('a knowledge base named ''%s'' already exists (a global knowledge base is '
                        'seen by everyone, so its name must be free for all)', NEW.name);
                END IF;
            ELSIF NEW.scope = 'team' THEN
                IF EXISTS (SELECT 1 FROM knowledge_bases k WHERE {same} AND (k.scope = 'global'
                        OR (k.scope = 'team' AND (k.team_id = NEW.team_id OR k.team_id IN (
                            SELECT m2.team_id FROM {members} m1 JOIN {members} m2 ON m2.user_id = m1.user_id
                            WHERE m1.team_id = NEW.team_id)))
                        OR (k.scope = 'personal' AND k.owner_id IN (
                            SELECT m.user_id FROM {members} m WHERE m.team_id = NEW.team_id)))) THEN
                    {raise_taken} format('the name ''%s'' is taken: a member of team ''%s'' already sees a '
                        'knowledge base of that name; choose another', NEW.name,
                        (SELECT coalesce(to_jsonb(t)->>'name', t.id::text) FROM teams t WHERE t.id = NEW.team_id));
                END IF;
            ELSIF NEW.scope = 'personal' THEN
                IF EXISTS (SELECT 1 FROM knowledge_bases k WHERE {same} AND (k.scope = 'global'
                        OR (k.scope = 'personal' AND k.owner_id = NEW.owner_id)
                        OR (k.scope = 'team' AND k.team_id IN (
                            SELECT m.team_id FROM {members} m WHERE m.user_id = NEW.owner_id)))) THEN
                    {raise_taken} format('a knowledge base named ''%s'' already exists', NEW.name);
                END IF;
            END IF;
            RETURN NEW;
        END $f$""")
    conn.execute("REVOKE ALL ON FUNCTION kbdesk_check_kb_name() FROM PUBLIC")
    for statement in [
        "DROP TRIGGER IF EXISTS kbdesk_name_insert ON knowledge_bases",
        "DROP TRIGGER IF EXISTS kbdesk_name_update ON knowledge_bases",
        "CREATE TRIGGER kbdesk_name_insert BEFORE INSERT ON knowledge_bases FOR EACH ROW "
        "EXECUTE FUNCTION kbdesk_check_kb_name()",
        "CREATE TRIGGER kbdesk_name_update BEFORE UPDATE OF name, scope, team_id, owner_id ON knowledge_bases "
        "FOR EACH ROW WHEN (lower(OLD.name) IS DISTINCT FROM lower(NEW.name) OR OLD.scope IS DISTINCT FROM NEW.scope "
        "OR OLD.team_id IS DISTINCT FROM NEW.team_id OR OLD.owner_id IS DISTINCT FROM NEW.owner_id) "
        "EXECUTE FUNCTION kbdesk_check_kb_name()",
    ]:
        conn.execute(statement)


def install_stamps(conn: PgConnection, path: str) -> None:
    """Audit and usage rows a user writes carry the database's clock, not theirs."""
    conn.execute(f"""CREATE OR REPLACE FUNCTION kbdesk_stamp() RETURNS trigger
        LANGUAGE plpgsql SET search_path = {path} AS $f$
        BEGIN
            IF kbdesk_uid() IS NOT NULL THEN
                NEW.created_at := now();
            END IF;
            RETURN NEW;
        END $f$""")
    for table in ("kbdesk_audit_log", "kbdesk_usage_log"):
        conn.execute(f"DROP TRIGGER IF EXISTS kbdesk_stamp ON {table}")
        conn.execute(
            f"CREATE TRIGGER kbdesk_stamp BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION kbdesk_stamp()"
        )


def install_kb_exists(conn: PgConnection, path: str) -> None:
    """``kbdesk_kb_exists(id)``: whether a KB of that id exists at all (an audit row of a
    KB deleted in the same transaction is allowed; one about a KB you cannot read is not)."""
    conn.execute(f"""CREATE OR REPLACE FUNCTION kbdesk_kb_exists(kb uuid) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {path} AS $f$
        SELECT EXISTS (SELECT 1 FROM knowledge_bases WHERE id = kb) $f$""")


def database_refusal(exc: BaseException) -> Exception | None:
    """kbdesk's error for a refusal of the database's own rules (raw SQL gets the
    database's error; kbdesk words it as its own checks would): None for any other."""
    from kbdesk.errors import AccessDeniedError, ConflictError

    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) or ""
    if getattr(exc, "sqlstate", None) == "23505" and getattr(diag, "constraint_name", None) == NAME_CONSTRAINT:
        return ConflictError(primary)
    if getattr(exc, "sqlstate", None) == "42501" and primary.startswith("only "):
        return AccessDeniedError(primary)
    return None


def install_team_members(conn: PgConnection, path: str, members: str, has_role: bool) -> None:
    """``kbdesk_team_members(team)``: a team's members (login, user id, role) for its
    admins and system admins; nobody else gets a row."""
    admin_roles = ", ".join(f"'{r}'" for r in ADMIN_TEAM_ROLES)
    role = f"CASE WHEN m.role IN ({admin_roles}) THEN 'admin' ELSE 'member' END" if has_role else "'member'"
    conn.execute(f"""CREATE OR REPLACE FUNCTION kbdesk_team_members(team uuid)
        RETURNS TABLE (login text, user_id uuid, role text)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {path} AS $f$
        SELECT coalesce(l.login, (SELECT to_jsonb(u)->>'username' FROM users u WHERE u.id = m.user_id),
                        m.user_id::text), m.user_id, {role}
        FROM {members} m LEFT JOIN kbdesk_logins l ON l.user_id = m.user_id
        WHERE m.team_id = team AND kbdesk_uid() IS NOT NULL
          AND (kbdesk_is_admin() OR team = ANY (kbdesk_team_ids(true)))
        ORDER BY 1 $f$""")
    conn.execute("REVOKE ALL ON FUNCTION kbdesk_team_members(uuid) FROM PUBLIC")
