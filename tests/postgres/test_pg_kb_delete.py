"""A KB delete on a team server that nobody's open transaction can hold up (issue 35).

The team server of test_pg_security.py (alice a member of Eng, bob its admin, root a
system admin). Someone inserts a row that references a team KB — alice a persona's
binding to it, bob a document in it — and leaves the transaction open, as a psql
session left at ``BEGIN`` does. Their insert holds the KB row ``FOR KEY SHARE`` (the
foreign key) and, for a document with a source, ``FOR NO KEY UPDATE`` (the one-name
rule): a plain ``DELETE`` of the KB waits for them and gave up after the lock timeout.
root's delete must succeed at once, the KB be gone for everyone (the holder too, inside
their open transaction, and the tables' owner), its name free, and its rows purged by
the next delete or ``pg setup`` once nothing holds them.
"""

from __future__ import annotations

import uuid
from contextlib import closing

import psycopg
import pytest
from test_pg_security import count, names
from test_pg_security import server as server

from helpers import pg_store
from kbdesk import open_desk
from kbdesk.errors import NotFoundError
from kbdesk.store.postgres.admin import setup

pytestmark = pytest.mark.slow  # logins, pg setup and a second connection per test


def hold_a_binding(server, kb_id: str) -> psycopg.Connection:
    """alice binds the KB to a persona of hers in a transaction she leaves open."""
    persona = server.desk("alice").store.create_persona("Helper")
    conn = psycopg.connect(server.uris["alice"])
    conn.execute("INSERT INTO kbdesk_persona_knowledge_bases(persona_id, kb_id) VALUES (%s, %s)", (persona.id, kb_id))
    return conn


def hold_a_document(server, kb_id: str) -> psycopg.Connection:
    """bob adds a document to the KB (with a source: the one-name rule locks the KB row
    FOR NO KEY UPDATE) in a transaction he leaves open."""
    conn = psycopg.connect(server.uris["bob"])
    conn.execute(
        "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, uploaded_by, "
        "source_path) VALUES (%s, %s, 'notes.txt', 'text/plain', 5, '', %s, '/home/bob/notes.txt')",
        (str(uuid.uuid4()), kb_id, server.uid("bob")),
    )
    return conn


def rows_of(server, kb_id: str) -> dict[str, int]:
    """What the tables' owner (no row security) still finds of a KB."""
    return {
        table: count(server.uri, f"SELECT count(*) FROM {table} WHERE kb_id = %s", kb_id)
        for table in ("kb_documents", "kbdesk_persona_knowledge_bases")
    } | {"knowledge_bases": count(server.uri, "SELECT count(*) FROM knowledge_bases WHERE id = %s", kb_id)}


def purge_by_next_delete(server) -> None:
    root = server.desk("root")
    root.create_kb("Scratch", scope="team", team_id=server.team, keyword_only=True)
    root.delete_kb("Scratch")


def purge_by_pg_setup(server) -> None:
    setup(server.uri)


def as_login(server, kb_id: str):
    """root deletes through their own login (the CLI, the TUI)."""
    return server.desk("root").delete_kb(kb_id)


def as_served(server, kb_id: str):
    """root deletes through kbdesk serve: the tables' owner acting as root's identity."""
    with closing(open_desk(server.uri)) as owner:
        pg = pg_store(owner)
        store = pg.as_user(pg.login_identity(server.logins["root"]))
        try:
            return store.delete_kb(kb_id)
        finally:
            store.close()


@pytest.mark.parametrize(
    ("hold", "delete", "purge"),
    [
        (hold_a_binding, as_login, purge_by_next_delete),
        (hold_a_document, as_login, purge_by_pg_setup),
        (hold_a_document, as_served, purge_by_next_delete),
    ],
)
def test_an_open_transaction_holding_a_kb_does_not_block_a_system_admins_delete(server, hold, delete, purge):
    root, alice, bob = server.desk("root"), server.desk("alice"), server.desk("bob")
    kb = root.create_kb("Runbooks", scope="team", team_id=server.team, keyword_only=True)
    root.add_document("Runbooks", "oncall.txt", ["page the walrus on call"])
    assert "Runbooks" in names(alice) and "Runbooks" in names(bob)

    with closing(hold(server, kb.id)) as holder:
        holder_pid = holder.info.backend_pid
        assert delete(server, kb.id).id == kb.id  # the lock timeout (5 s) used to fail it here

        # gone for everyone at once: the holder (in their still open transaction), the
        # others, and the tables' owner
        assert holder.execute("SELECT count(*) FROM knowledge_bases WHERE id = %s", (kb.id,)).fetchone()[0] == 0
        assert holder.execute("SELECT count(*) FROM kb_chunks WHERE kb_id = %s", (kb.id,)).fetchone()[0] == 0
        for desk in (root, alice, bob):
            assert "Runbooks" not in names(desk)
            with pytest.raises(NotFoundError):
                desk.kb("Runbooks")
        with closing(open_desk(server.uri)) as owner:
            assert "Runbooks" not in names(owner)
            assert owner.store.kb_by_id(kb.id) is None
        # nobody writes to it any more
        late = (
            "INSERT INTO kb_documents(kb_id, filename, content_type, size_bytes, storage_key, uploaded_by) "
            "VALUES (%s, 'late.txt', 'text/plain', 1, '', %s)"
        )
        with closing(psycopg.connect(server.uris["bob"])) as other, pytest.raises(psycopg.errors.InsufficientPrivilege):
            other.execute(late, (kb.id, server.uid("bob")))
        # its name is free while the holder still holds the old one
        again = root.create_kb("Runbooks", scope="team", team_id=server.team, keyword_only=True)
        assert again.id != kb.id and [k.id for k in alice.list_kbs() if k.name == "Runbooks"] == [again.id]
        # the holder's transaction is untouched: still open, still theirs to commit
        assert count(server.uri, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", holder_pid) == 1
        holder.commit()

    # its rows were held then; the next delete (or pg setup) purges them
    assert rows_of(server, kb.id)["knowledge_bases"] == 1
    purge(server)
    assert rows_of(server, kb.id) == {"kb_documents": 0, "kbdesk_persona_knowledge_bases": 0, "knowledge_bases": 0}
    assert count(server.uri, "SELECT count(*) FROM kbdesk_kb_tombstones") == 0
    assert [k.id for k in alice.list_kbs() if k.name == "Runbooks"] == [again.id]


def test_a_delete_nothing_holds_removes_the_rows_at_once(server):
    root = server.desk("root")
    kb = root.create_kb("Runbooks", scope="team", team_id=server.team, keyword_only=True)
    root.add_document("Runbooks", "oncall.txt", ["page the walrus on call"])
    root.delete_kb("Runbooks")
    assert rows_of(server, kb.id) == {"kb_documents": 0, "kbdesk_persona_knowledge_bases": 0, "knowledge_bases": 0}
    assert count(server.uri, "SELECT count(*) FROM kbdesk_kb_tombstones") == 0
    assert count(server.uri, "SELECT count(*) FROM kbdesk_audit_log WHERE action = 'kb.delete' AND kb_id = %s", kb.id)


def test_a_member_cannot_delete_a_kb_they_only_read_through_the_tombstone(server):
    """kbdesk_forget_kb checks the same rule as any change: alice, a member, may not."""
    kb = server.desk("bob").create_kb("Runbooks", scope="team", team_id=server.team, keyword_only=True)
    with closing(psycopg.connect(server.uris["alice"], autocommit=True)) as conn:
        row = conn.execute("SELECT kbdesk_forget_kb(%s)", (kb.id,)).fetchone()
        assert row is not None and row[0] is False
    assert "Runbooks" in names(server.desk("alice"))


def test_a_purge_that_meets_a_held_row_leaves_the_kb_whole_for_the_next_one(server):
    """bob holds one document row (not the KB's): the purge gets the KB row, then waits
    briefly on that document and gives up — the KB's rows stay whole (never half
    deleted: one subtransaction per KB), hidden, until a later purge takes them all."""
    root = server.desk("root")
    kb = root.create_kb("Runbooks", scope="team", team_id=server.team, keyword_only=True)
    first = root.add_document("Runbooks", "a.txt", ["page the walrus on call"])
    root.add_document("Runbooks", "b.txt", ["the walrus sleeps at noon", "and wakes at four"])
    before = {
        "documents": count(server.uri, "SELECT count(*) FROM kb_documents WHERE kb_id = %s", kb.id),
        "chunks": count(server.uri, "SELECT count(*) FROM kb_chunks WHERE kb_id = %s", kb.id),
    }
    assert before == {"documents": 2, "chunks": 3}
    with closing(psycopg.connect(server.uris["bob"])) as holder:
        holder.execute("SELECT 1 FROM kb_documents WHERE id = %s FOR UPDATE", (first.id,))
        root.delete_kb("Runbooks")
        assert "Runbooks" not in names(server.desk("bob"))
        after = {
            "documents": count(server.uri, "SELECT count(*) FROM kb_documents WHERE kb_id = %s", kb.id),
            "chunks": count(server.uri, "SELECT count(*) FROM kb_chunks WHERE kb_id = %s", kb.id),
        }
        assert after == before and rows_of(server, kb.id)["knowledge_bases"] == 1
        holder.rollback()
    purge_by_pg_setup(server)
    assert rows_of(server, kb.id)["knowledge_bases"] == 0
    assert count(server.uri, "SELECT count(*) FROM kb_chunks WHERE kb_id = %s", kb.id) == 0
