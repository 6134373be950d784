"""Deleting a KB on a team server without waiting for anyone: the tombstones' table and
functions (the Postgres records, :mod:`.records`, write them).

A plain ``DELETE FROM knowledge_bases`` needs the KB row's ``FOR UPDATE`` lock, and any
other login can hold a lock that conflicts with it for as long as it keeps a transaction
open: inserting a row that references the KB (a document, a persona's or a channel's
binding) takes ``FOR KEY SHARE`` on it, adding a document through kbdesk takes ``FOR NO
KEY UPDATE``. A system admin's delete then waited out the lock timeout and failed,
again and again while that transaction stayed open.

So a kbdesk user's delete takes no lock on the KB's rows at all: it inserts a
**tombstone**, a row in a table of its own (``kbdesk_kb_tombstones``, no foreign key),
in one transaction with its audit row. From its commit on the KB is gone for everyone:

- row security hides a tombstoned KB (the ``knowledge_bases`` policies call
  ``kbdesk_kb_gone``), and with it everything keyed by it — documents, chunks, bindings —
  since every other table's policy reads ``knowledge_bases`` through its own; nobody can
  write to it either (the write policies are the same);
- the owner's reads through the store's scope policy (:func:`kbdesk.store.postgres.access.visible_sql`)
  leave it out too;
- its name is free: the name rule (:mod:`.guards`) does not count tombstoned KBs.

The rows themselves go when nothing holds them: right after the delete, and again at
every later delete and ``pg setup``, ``kbdesk_purge_kbs()`` deletes each tombstoned KB
whose row it can lock without waiting (``NOWAIT``; the rows under it with a short lock
wait), with its tombstone, in a subtransaction per KB — a KB still held stays
tombstoned for the next time. A crash between the two leaves a tombstone, never half a
KB: each step is one transaction.

The owner's delete (the login that owns kbdesk's tables: a single user, or ``kbdesk
serve`` acting for a token's user) is the same tombstone, written directly; the owner's
reads leave tombstoned KBs out through the scope policy and :meth:`kbdesk.store.postgres.records.PgRecords.kb_row`.
Its vector indexes go after the purge when they can go at once, else at ``pg setup``.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING

from kbdesk.store.postgres.rules import managed

if TYPE_CHECKING:
    from kbdesk.store.postgres.dbapi import PgConnection

TABLE = "kbdesk_kb_tombstones"
GONE = "kbdesk_kb_gone"  # (kb uuid) → boolean: every login may call it (row security does)
FORGET = "kbdesk_forget_kb"  # (kb uuid) → boolean: a kbdesk user's delete
PURGE = "kbdesk_purge_kbs"  # () → integer: the tombstoned KBs whose rows went
PURGE_LOCK_WAIT_MS = 200  # how long a purge waits for one row under a KB before leaving it for later


def gone_sql(column: str) -> str:
    """SQL true when the KB of ``column`` has a tombstone."""
    return f"{GONE}({column})"


def install(conn: PgConnection, path: str) -> None:
    """The table and its functions; idempotent (schema step 18 and every ``secure``).
    ``path``: the functions' fixed search_path (kbdesk's schema, then pg_temp)."""
    conn.execute(f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        id         UUID PRIMARY KEY,
        deleted_by UUID,
        deleted_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""")
    conn.execute(f"REVOKE ALL ON {TABLE} FROM PUBLIC")
    conn.execute(f"ALTER TABLE {TABLE} ENABLE ROW LEVEL SECURITY")  # no policy: read only through the functions
    definer = f"SECURITY DEFINER SET search_path = {path}"
    conn.execute(f"""CREATE OR REPLACE FUNCTION {GONE}(kb uuid) RETURNS boolean
        LANGUAGE sql STABLE {definer} AS $f$
        SELECT EXISTS (SELECT 1 FROM {TABLE} WHERE id = kb) $f$""")
    conn.execute(f"""CREATE OR REPLACE FUNCTION {FORGET}(kb uuid) RETURNS boolean
        LANGUAGE plpgsql {definer} AS $f$
        BEGIN
            IF kbdesk_uid() IS NULL THEN
                RAISE EXCEPTION 'only a kbdesk user deletes through {FORGET}' USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF NOT EXISTS (SELECT 1 FROM knowledge_bases k WHERE k.id = kb AND {managed("k.")}) THEN
                RETURN false;
            END IF;
            INSERT INTO {TABLE}(id, deleted_by) VALUES (kb, kbdesk_uid()) ON CONFLICT (id) DO NOTHING;
            RETURN FOUND;
        END $f$""")
    conn.execute(f"""CREATE OR REPLACE FUNCTION {PURGE}() RETURNS integer
        LANGUAGE plpgsql {definer} AS $f$
        DECLARE
            gone integer := 0;
            kb uuid;
        BEGIN
            FOR kb IN SELECT id FROM {TABLE} ORDER BY deleted_at LOOP
                BEGIN
                    PERFORM 1 FROM knowledge_bases WHERE id = kb FOR UPDATE NOWAIT;
                    DELETE FROM knowledge_bases WHERE id = kb;
                    DELETE FROM {TABLE} WHERE id = kb;
                    gone := gone + 1;
                EXCEPTION WHEN lock_not_available THEN
                    NULL;  -- still held by someone's open transaction: the next purge takes it
                END;
            END LOOP;
            RETURN gone;
        END $f$""")


def purge(conn: PgConnection) -> int:
    """Remove the rows of every tombstoned KB nothing holds now (its own transaction on
    ``conn``, autocommit); 0 when there is nothing to do or it cannot be done now."""
    # a purge is tidying up: it never fails the delete (or pg setup) that asked for it
    with suppress(Exception), conn.transaction():
        conn.execute(f"SET LOCAL lock_timeout = {PURGE_LOCK_WAIT_MS}")
        return int(conn.execute(f"SELECT {PURGE}()").fetchone()[0])
    return 0
