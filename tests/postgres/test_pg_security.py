"""A team server where each person is their own database login: identity from the
database, seed 002's scopes enforced by row-level security.

One database after ``pg setup`` and ``pg grant``: alice (member of Eng), bob (admin of
Eng), root (system admin) and eve (no team), each a login role of their own with a
password. Every refusal is checked twice: through kbdesk (a clear one-line error) and
through raw SQL with psycopg as that login (the database itself refuses, or the
statement sees and changes no row) — what a client that ignores kbdesk would get.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from helpers import axis, pg_store
from kbdesk import open_desk
from kbdesk.config import parse_config
from kbdesk.desk import Desk
from kbdesk.errors import InvalidInputError, NotFoundError, StoreError
from kbdesk.search import search
from kbdesk.store.postgres import AccessDeniedError
from kbdesk.store.postgres.admin import TeamGrant, grant, revoke, setup, users
from kbdesk.store.postgres.rls import secured_tables
from pg_support import as_login, create_login, sql, with_database

PASSWORD = "s3cret-Pw"
PEOPLE = ("alice", "bob", "root", "eve")
Refused = psycopg.errors.InsufficientPrivilege


@dataclass
class Server:
    uri: str  # the superuser's (the tables' owner)
    admin_uri: str  # the server's postgres database, for roles
    logins: dict[str, str]
    uris: dict[str, str]
    desks: dict[str, Desk] = field(default_factory=dict)
    team: str = ""  # team Eng's id (the fixture makes the team)

    def desk(self, who: str, identity: dict | None = None):
        """``who``'s desk (one per person; a config ``[identity]`` makes a new one)."""
        if identity is not None:
            desk = open_desk(self.uris[who], config=parse_config({"identity": identity}))
            self.desks[f"{who}-{len(self.desks)}"] = desk
            return desk
        if who not in self.desks:
            self.desks[who] = open_desk(self.uris[who])
        return self.desks[who]

    def uid(self, who: str) -> str:
        return str(sql(self.uri, "SELECT user_id FROM kbdesk_logins WHERE login = %s", self.logins[who])[0][0])

    def new_login(self, name: str) -> str:
        login = f"{name}_{uuid.uuid4().hex[:8]}"
        create_login(self.admin_uri, login, PASSWORD)
        self.logins[name], self.uris[name] = login, as_login(self.uri, login, PASSWORD)
        return login


def raw(uri: str, query: str, *args):
    """One statement as that login: (rows or None, rowcount)."""
    with psycopg.connect(uri, autocommit=True) as conn:
        cur = conn.execute(query, args or None)
        return (cur.fetchall() if cur.description else None), cur.rowcount


def count(uri: str, query: str, *args) -> int:
    return raw(uri, query, *args)[0][0][0]


@pytest.fixture
def server(pg_uri, pg_server, kbdesk_home):
    setup(pg_uri)
    srv = Server(pg_uri, pg_server, {}, {})
    for name in PEOPLE:
        srv.new_login(name)
    grant(pg_uri, srv.logins["alice"], teams=[TeamGrant("Eng", "member")])
    grant(pg_uri, srv.logins["bob"], teams=[TeamGrant("Eng", "admin")])
    grant(pg_uri, srv.logins["root"], admin=True)
    grant(pg_uri, srv.logins["eve"])
    srv.team = str(sql(pg_uri, "SELECT id FROM teams WHERE name = 'Eng'")[0][0])
    yield srv
    for desk in srv.desks.values():
        desk.close()


def names(desk) -> list[str]:
    return [kb.name for kb in desk.list_kbs()]


# ── who you are ────────────────────────────────────────────────────────────────
def test_the_user_is_the_database_login_and_config_claims_gain_nothing(server):
    alice = server.desk("alice")
    who = alice.store.identity
    assert (who.username, who.admin, who.source) == (server.logins["alice"], False, "database")
    assert who.user_id == server.uid("alice") and who.teams == {server.team: "member"}
    assert server.desk("root").store.identity.admin  # membership in kbdesk_admin
    assert server.desk("bob").store.identity.teams == {server.team: "admin"}
    # a config claiming to be root, a system admin and Eng's admin changes nothing
    liar = server.desk(
        "alice",
        {"username": server.logins["root"], "user_id": server.uid("root"), "admin": True, "teams": {"Eng": "admin"}},
    )
    assert liar.store.identity == who
    assert liar.store.describe()["identity"] == "database" and liar.store.describe()["login"] == who.username
    with pytest.raises(AccessDeniedError, match=r"only a system admin.*pg grant LOGIN --admin"):
        liar.create_kb("Handbook", scope="global")
    with pytest.raises(AccessDeniedError, match="only an admin of team"):
        liar.create_kb("Runbooks", scope="team", team_id=server.team)
    # and the database agrees, whatever a raw client sends
    uri = server.uris["alice"]
    assert raw(uri, "SELECT user_id::text, admin FROM kbdesk_whoami()")[0] == [(server.uid("alice"), False)]
    with pytest.raises(Refused):
        raw(uri, "INSERT INTO knowledge_bases(name, scope) VALUES ('Mine now', 'global')")
    assert raw(alice.store.uri, "SELECT current_user")[0][0][0] == who.username


def test_what_a_user_cannot_do_to_become_someone_else(server):
    uri, bob = server.uris["bob"], server.logins["bob"]
    for statement in [
        "SELECT * FROM kbdesk_logins",  # the map of logins is the functions' alone
        f"INSERT INTO kbdesk_logins(login, user_id) VALUES ('{bob}', '{server.uid('alice')}')",
        f"UPDATE kbdesk_logins SET user_id = '{server.uid('alice')}'",
        "SELECT * FROM team_members",
        f"INSERT INTO team_members(team_id, user_id, role) VALUES ('{server.team}', '{server.uid('bob')}', 'admin')",
        f'GRANT kbdesk_admin TO "{bob}"',
        "SET ROLE kbdesk_admin",
        "ALTER TABLE knowledge_bases DISABLE ROW LEVEL SECURITY",
        "DROP POLICY kbdesk_read ON knowledge_bases",
        "CREATE OR REPLACE FUNCTION kbdesk_uid() RETURNS uuid LANGUAGE sql AS $$ SELECT NULL::uuid $$",
    ]:
        with pytest.raises(Refused):
            raw(uri, statement)
    # SET ROLE to a role one has changes nothing: session_user stays the login
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET ROLE kbdesk_user")
        row = conn.execute("SELECT kbdesk_uid()::text").fetchone()
        assert row is not None and row[0] == server.uid("bob")
    # a SECURITY DEFINER function of kbdesk's that is not an identity helper cannot be called
    if sql(server.uri, "SELECT to_regprocedure('kbdesk_keyword_rebuild()')")[0][0]:
        with pytest.raises(Refused):
            raw(uri, "SELECT kbdesk_keyword_rebuild()")


# ── personal ───────────────────────────────────────────────────────────────────
@pytest.fixture
def diary(server):
    """alice's personal KB with a document, its vector, an original file and an audit trail."""
    alice = server.desk("alice")
    kb = alice.create_kb("Notes", model_id="m", dimensions=8)
    doc = alice.add_document("Notes", "diary.txt", ["my secret plans for the merger"], vectors=[axis(0)])
    sql(server.uri, "INSERT INTO kbdesk_document_blobs(document_id, data) VALUES (%s, 'secret bytes')", doc.id)
    return kb, doc


def test_a_personal_kb_is_its_owners_alone_through_kbdesk(server, diary):
    kb, doc = diary
    alice, bob, root = server.desk("alice"), server.desk("bob"), server.desk("root")
    assert names(alice) == ["Notes"] and names(bob) == [] and names(root) == []
    for other in (bob, root):
        for ref in ("Notes", kb.id, kb.id[:8]):
            with pytest.raises(NotFoundError):
                other.kb(ref)
        with pytest.raises(NotFoundError):
            other.store.get_kb(kb.id)  # not even through a binding
        assert other.store.kb_by_id(kb.id) is None
        with pytest.raises((NotFoundError, AccessDeniedError)):
            other.store.delete_kb(kb.id)
        with pytest.raises((NotFoundError, AccessDeniedError)):
            other.store.add_document(kb.id, "intrusion.txt", ["x"])
        with pytest.raises((NotFoundError, AccessDeniedError)):
            other.store.update_kb(kb.id, name="mine now")
        with pytest.raises(NotFoundError):
            other.store.delete_document(doc.id)
        assert other.store.list_documents(kb.id) == [] and other.store.document_blob(doc.id) is None
        assert search(other.store, [kb], "secret plans", mode="keyword").results == []
        with pytest.raises(InvalidInputError, match="holds vectors"):  # to bob, alice's KB holds none
            search(other.store, [kb], "x", query_vector=axis(0), mode="vector")
        assert other.store.audit_entries(kb.id) == []
    assert bob.create_kb("notes").name == "notes"  # a personal KB of the same name is bob's own business
    assert alice.search(["Notes"], "secret plans", mode="keyword").results[0].source == "diary.txt"
    assert alice.store.document_blob(doc.id) == b"secret bytes"


def test_a_personal_kb_is_its_owners_alone_through_raw_sql(server, diary):
    kb, doc = diary
    alice_id = server.uid("alice")
    for who in ("bob", "root", "eve"):  # a team admin, a system admin, a nobody
        uri = server.uris[who]
        for table, key in [
            ("knowledge_bases", "id"),
            ("kb_documents", "kb_id"),
            ("kb_chunks", "kb_id"),
            ("kbdesk_audit_log", "kb_id"),
        ]:
            assert count(uri, f"SELECT count(*) FROM {table} WHERE {key} = %s", kb.id) == 0, (who, table)
        assert count(uri, "SELECT count(*) FROM kb_chunks WHERE content LIKE '%%secret%%'") == 0
        assert count(uri, "SELECT count(*) FROM kbdesk_document_blobs WHERE document_id = %s", doc.id) == 0
        if sql(server.uri, "SELECT to_regclass('kbdesk_keyword_terms')")[0][0]:
            assert count(uri, "SELECT count(*) FROM kbdesk_keyword_terms WHERE kb_id = %s", kb.id) == 0
        # the seed's own similarity query, pointed straight at alice's KB
        hits, _ = raw(
            uri,
            "SELECT c.content FROM kb_chunks c JOIN knowledge_bases k ON k.id = c.kb_id "
            "WHERE c.kb_id = ANY(%s::uuid[]) ORDER BY c.embedding <=> %s::vector LIMIT 5",
            [kb.id],
            "[" + ",".join(["1"] + ["0"] * 3071) + "]",
        )
        assert hits == []
        for statement in [
            "UPDATE knowledge_bases SET name = 'pwned' WHERE id = %s",
            "UPDATE knowledge_bases SET discoverable = false WHERE id = %s",
            "UPDATE kb_documents SET filename = 'pwned' WHERE kb_id = %s",
            "UPDATE kb_chunks SET content = 'pwned' WHERE kb_id = %s",
        ]:
            assert raw(uri, statement, kb.id)[1] == 0, (who, statement)
        # users delete only through kbdesk_delete (a DELETE privilege would allow LOCK TABLE):
        # a plain DELETE is refused, and the function deletes nothing of alice's
        for table, key, value in [
            ("knowledge_bases", "id", kb.id),
            ("kb_documents", "kb_id", kb.id),
            ("kb_chunks", "kb_id", kb.id),
            ("kbdesk_document_blobs", "document_id", doc.id),
        ]:
            with pytest.raises(Refused):
                raw(uri, f"DELETE FROM {table} WHERE {key} = %s", value)
        for table, ident in [("knowledge_bases", kb.id), ("kb_documents", doc.id)]:
            gone = raw(
                uri, "SELECT kbdesk_delete(%s, jsonb_build_array(jsonb_build_object('id', %s::uuid)))", table, ident
            )
            assert gone[0] == [(0,)], (who, table)
        blob = "jsonb_build_array(jsonb_build_object('document_id', %s::uuid))"
        assert raw(uri, f"SELECT kbdesk_delete('kbdesk_document_blobs', {blob})", doc.id)[0] == [(0,)]
        for statement, args in [
            (
                "INSERT INTO kb_documents(kb_id, filename, content_type, size_bytes, storage_key, uploaded_by) "
                "VALUES (%s, 'planted.txt', 'text/plain', 1, 'k', %s)",
                (kb.id, alice_id),
            ),
            (
                "INSERT INTO kb_chunks(kb_id, document_id, chunk_index, content) VALUES (%s, %s, 9, 'planted')",
                (kb.id, doc.id),
            ),
            (
                "INSERT INTO kbdesk_document_blobs(document_id, data) VALUES (%s, 'x') ON CONFLICT (document_id) "
                "DO UPDATE SET data = excluded.data",
                (doc.id,),
            ),
            ("INSERT INTO knowledge_bases(name, scope, owner_id) VALUES ('Planted', 'personal', %s)", (alice_id,)),
            ("INSERT INTO kbdesk_audit_log(user_id, action, kb_id) VALUES (%s, 'kb.delete', %s)", (alice_id, kb.id)),
            ("INSERT INTO kbdesk_usage_log(user_id, role) VALUES (%s, 'embedding')", (alice_id,)),
        ]:
            with pytest.raises(Refused):
                raw(uri, statement, *args)
    assert sql(server.uri, "SELECT name, document_count, chunk_count FROM knowledge_bases WHERE id = %s", kb.id) == [
        ("Notes", 1, 1)
    ]
    assert sql(server.uri, "SELECT content FROM kb_chunks WHERE kb_id = %s", kb.id) == [
        ("my secret plans for the merger",)
    ]


def test_a_user_cannot_give_away_promote_or_take_over_a_kb(server):
    bob = server.desk("bob")
    kb = bob.create_kb("Scratch")
    uri = server.uris["bob"]
    for statement in [
        f"UPDATE knowledge_bases SET owner_id = '{server.uid('alice')}' WHERE id = %s",  # plant it on alice
        "UPDATE knowledge_bases SET scope = 'global', owner_id = NULL WHERE id = %s",  # make it everyone's
        "UPDATE knowledge_bases SET scope = 'team', owner_id = NULL, team_id = gen_random_uuid() WHERE id = %s",
    ]:
        with pytest.raises(Refused):
            raw(uri, statement, kb.id)
    # a team admin manages the team's KBs, but does not become their owner (whose is the
    # discoverable flag): neither by creating one owned, nor by taking one over
    team_kb = bob.create_kb("Runbooks", scope="team", team_id=server.team)
    with pytest.raises(Refused, match="only a system admin may give a team knowledge base an owner"):
        raw(
            uri,
            "INSERT INTO knowledge_bases(name, scope, team_id, owner_id) VALUES ('Mine', 'team', %s, %s)",
            server.team,
            server.uid("bob"),
        )
    with pytest.raises(Refused, match="only a system admin may change who owns"):
        raw(uri, "UPDATE knowledge_bases SET owner_id = %s WHERE id = %s", server.uid("bob"), team_kb.id)
    # nor plant a chunk of his KB beside someone else's document (or another KB's)
    doc = bob.add_document("Scratch", "mine.txt", ["mine"])
    other = bob.add_document("Runbooks", "deploy.md", ["Deploys go out on Tuesdays."])
    with pytest.raises(Refused):
        raw(
            uri,
            "INSERT INTO kb_chunks(kb_id, document_id, chunk_index, content) VALUES (%s, %s, 7, 'x')",
            kb.id,
            other.id,
        )
    raw(
        uri, "INSERT INTO kb_chunks(kb_id, document_id, chunk_index, content) VALUES (%s, %s, 7, 'more')", kb.id, doc.id
    )  # beside his own document of that KB: fine
    # a system admin may do both
    assert (
        raw(
            server.uris["root"],
            "UPDATE knowledge_bases SET owner_id = %s, discoverable = false WHERE id = %s",
            server.uid("bob"),
            team_kb.id,
        )[1]
        == 1
    )


# ── team ───────────────────────────────────────────────────────────────────────
def test_team_kbs_are_read_by_members_and_managed_by_team_admins(server):
    alice, bob, root, eve = (server.desk(w) for w in PEOPLE)
    team = server.team
    with pytest.raises(AccessDeniedError, match="only an admin of team"):
        alice.create_kb("Runbooks", scope="team", team_id=team)
    with pytest.raises(Refused):
        raw(server.uris["alice"], "INSERT INTO knowledge_bases(name, scope, team_id) VALUES ('R', 'team', %s)", team)
    kb = bob.create_kb("Runbooks", scope="team", team_id=team, model_id="m", dimensions=8)
    bob.add_document("Runbooks", "deploy.md", ["Deploys go out on Tuesdays."], vectors=[axis(0)])
    assert names(alice) == ["Runbooks"] and names(root) == ["Runbooks"] and names(eve) == []
    assert alice.search(["Runbooks"], "when do deploys go out", mode="keyword").results[0].source == "deploy.md"
    assert alice.search(["Runbooks"], "x", query_vector=axis(0), mode="vector").results[0].source == "deploy.md"
    with pytest.raises(NotFoundError):
        eve.kb("Runbooks")
    with pytest.raises(AccessDeniedError, match="only an admin of team 'Eng' may change it"):
        alice.rename_kb("Runbooks", "Mine now")
    with pytest.raises(AccessDeniedError, match="only an admin of team 'Eng' may change it"):
        alice.add_document("Runbooks", "x.md", ["x"], vectors=[axis(1)])
    with pytest.raises(AccessDeniedError):
        alice.delete_kb("Runbooks")
    # raw SQL: a member reads, and changes nothing
    uri = server.uris["alice"]
    assert count(uri, "SELECT count(*) FROM kb_chunks WHERE kb_id = %s", kb.id) == 1
    doc_id = raw(uri, "SELECT id::text FROM kb_documents WHERE kb_id = %s", kb.id)[0][0][0]
    for statement in [
        "UPDATE knowledge_bases SET name = 'Mine now' WHERE id = %s",
        "UPDATE kb_chunks SET content = 'Deploys never go out.' WHERE kb_id = %s",
    ]:
        assert raw(uri, statement, kb.id)[1] == 0, statement
    for table, key in [("kb_chunks", "kb_id"), ("kb_documents", "kb_id"), ("knowledge_bases", "id")]:
        rows = raw(uri, f"SELECT jsonb_agg(jsonb_build_object('id', id)) FROM {table} WHERE {key} = %s", kb.id)[0]
        assert raw(uri, "SELECT kbdesk_delete(%s, %s)", table, Jsonb(rows[0][0]))[0] == [(0,)], table
    with pytest.raises(Refused):
        raw(
            uri,
            "INSERT INTO kb_chunks(kb_id, document_id, chunk_index, content) VALUES (%s, %s, 5, 'x')",
            kb.id,
            doc_id,
        )
    assert count(server.uris["eve"], "SELECT count(*) FROM kb_chunks WHERE kb_id = %s", kb.id) == 0
    # the team admin manages it, and so does a system admin
    assert (
        raw(server.uris["bob"], "UPDATE knowledge_bases SET description = 'how we ship' WHERE id = %s", kb.id)[1] == 1
    )
    assert alice.kb("Runbooks").description == "how we ship"
    root.add_document("Runbooks", "rollback.md", ["Roll back with the previous tag."], vectors=[axis(2)])
    assert root.create_kb("Oncall", scope="team", team_id=team).scope == "team"
    # a member promoted to team admin may manage it at once (the database reads membership live)
    grant(server.uri, server.logins["alice"], teams=[TeamGrant("Eng", "admin")])
    assert raw(uri, "UPDATE knowledge_bases SET description = 'ours' WHERE id = %s", kb.id)[1] == 1


# ── global ─────────────────────────────────────────────────────────────────────
def test_global_kbs_are_read_by_all_and_managed_by_system_admins(server):
    alice, root, eve = server.desk("alice"), server.desk("root"), server.desk("eve")
    with pytest.raises(AccessDeniedError, match="only a system admin"):
        alice.create_kb("Handbook", scope="global")
    kb = root.create_kb("Handbook", scope="global")
    root.add_document("Handbook", "leave.md", ["Holidays are booked in the portal."])
    assert "Handbook" in names(alice) and "Handbook" in names(eve)
    assert eve.search(["Handbook"], "book holidays", mode="keyword").results[0].source == "leave.md"
    with pytest.raises(AccessDeniedError, match="only a system admin"):
        alice.rename_kb("Handbook", "Mine")
    with pytest.raises(AccessDeniedError):
        eve.delete_kb("Handbook")
    for who in ("alice", "bob", "eve"):
        uri = server.uris[who]
        assert count(uri, "SELECT count(*) FROM kb_chunks WHERE kb_id = %s", kb.id) == 1
        assert raw(uri, "UPDATE knowledge_bases SET name = 'Mine' WHERE id = %s", kb.id)[1] == 0
        keys = raw(uri, "SELECT jsonb_agg(jsonb_build_object('id', id)) FROM kb_chunks WHERE kb_id = %s", kb.id)[0]
        assert raw(uri, "SELECT kbdesk_delete('kb_chunks', %s)", Jsonb(keys[0][0]))[0] == [
            (0,)
        ]  # seen, not theirs to delete
    assert raw(server.uris["root"], "UPDATE knowledge_bases SET description = 'HR' WHERE id = %s", kb.id)[1] == 1
    # taking admin back takes the power with it, at once
    revoke(server.uri, server.logins["root"], admin_only=True)
    assert raw(server.uris["root"], "UPDATE knowledge_bases SET description = 'x' WHERE id = %s", kb.id)[1] == 0
    with pytest.raises(AccessDeniedError, match="only a system admin"):
        server.desk("root", {}).create_kb("Policies", scope="global")


# ── discoverable ───────────────────────────────────────────────────────────────
def test_a_hidden_global_kb_is_not_there_for_anyone_but_system_admins(server):
    """discoverable = false: not in the picker, not by name or id, not through a binding,
    not by raw SQL — for everyone but a system admin (a global KB has no owner)."""
    alice, bob, root = server.desk("alice"), server.desk("bob"), server.desk("root")
    kb = root.create_kb("Legal", scope="global")
    root.add_document("Legal", "nda.md", ["Mutual NDAs are signed by legal."])
    with pytest.raises(AccessDeniedError, match="only the owner"):
        alice.edit_kb("Legal", discoverable=False)
    root.edit_kb("Legal", discoverable=False)
    assert "Legal" not in names(alice) and "Legal" in names(root)
    for ref in ("Legal", kb.id, kb.id[:8]):
        with pytest.raises(NotFoundError):
            alice.kb(ref)
    with pytest.raises(NotFoundError):
        alice.store.get_kb(kb.id)  # what a persona or channel binding resolves
    assert search(alice.store, [kb], "who signs NDAs", mode="keyword").results == []
    assert root.search(["Legal"], "who signs NDAs", mode="keyword").results[0].source == "nda.md"
    # the database says the same to raw SQL: no row of the KB, its documents or chunks
    uri = server.uris["alice"]
    assert "Legal" not in {r[0] for r in raw(uri, "SELECT name FROM kbdesk_picker()")[0]}
    assert "Legal" in {r[0] for r in raw(server.uris["root"], "SELECT name FROM kbdesk_picker()")[0]}
    for table, key in [("knowledge_bases", "id"), ("kb_documents", "kb_id"), ("kb_chunks", "kb_id")]:
        assert count(uri, f"SELECT count(*) FROM {table} WHERE {key} = %s", kb.id) == 0, table
    # only the owner or a system admin changes the flag: a team admin may change their
    # team's KB, but not whether it is discoverable; a hidden team KB stays its members'
    team_kb = bob.create_kb("Team docs", scope="team", team_id=server.team)
    with pytest.raises(AccessDeniedError, match="only the owner"):
        bob.edit_kb("Team docs", discoverable=False)
    with pytest.raises(Refused, match="only the owner"):
        raw(server.uris["bob"], "UPDATE knowledge_bases SET discoverable = false WHERE id = %s", team_kb.id)
    assert raw(server.uris["bob"], "UPDATE knowledge_bases SET name = 'Team wiki' WHERE id = %s", team_kb.id)[1] == 1
    assert root.store.update_kb(team_kb.id, discoverable=False).discoverable is False
    assert "Team wiki" in names(alice) and count(uri, "SELECT count(*) FROM knowledge_bases WHERE id = %s", team_kb.id)
    alice.create_kb("Private")
    assert alice.edit_kb("Private", discoverable=False).discoverable is False  # the owner's own
    assert "Private" in names(alice)


def test_channel_bindings_are_the_channel_owners_and_reach_only_readable_kbs(server, diary):
    kb, _ = diary
    root = server.desk("root")
    legal = root.create_kb("Legal", scope="global")
    root.edit_kb("Legal", discoverable=False)
    alice_uri, bob_uri = server.uris["alice"], server.uris["bob"]
    channel = raw(
        alice_uri, "INSERT INTO channels(title, owner_id) VALUES ('chat', %s) RETURNING id::text", server.uid("alice")
    )[0][0][0]
    raw(alice_uri, "INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", channel, kb.id)
    with pytest.raises(Refused):  # a hidden global KB is not hers to bind
        raw(alice_uri, "INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", channel, legal.id)
    raw(server.uris["root"], "UPDATE knowledge_bases SET discoverable = true WHERE id = %s", legal.id)
    raw(alice_uri, "INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", channel, legal.id)
    bobs = raw(
        bob_uri, "INSERT INTO channels(title, owner_id) VALUES ('mine', %s) RETURNING id::text", server.uid("bob")
    )[0][0][0]
    for statement, args in [
        ("INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", (bobs, kb.id)),  # her KB
        ("INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", (channel, legal.id)),  # her chat
        ("INSERT INTO channels(title, owner_id) VALUES ('planted', %s)", (server.uid("alice"),)),
    ]:
        with pytest.raises(Refused):
            raw(bob_uri, statement, *args)
    assert count(bob_uri, "SELECT count(*) FROM channel_knowledge_bases") == 0
    assert count(bob_uri, "SELECT count(*) FROM channels WHERE id = %s", channel) == 0
    their_binding = f"jsonb_build_array(jsonb_build_object('channel_id', '{channel}', 'kb_id', '{kb.id}'))"
    assert raw(bob_uri, f"SELECT kbdesk_delete('channel_knowledge_bases', {their_binding})")[0] == [(0,)]
    assert count(alice_uri, "SELECT count(*) FROM channel_knowledge_bases WHERE channel_id = %s", channel) == 2
    # hidden again, the KB is gone from her conversation too (its binding row with it)
    raw(server.uris["root"], "UPDATE knowledge_bases SET discoverable = false WHERE id = %s", legal.id)
    assert count(alice_uri, "SELECT count(*) FROM channel_knowledge_bases WHERE channel_id = %s", channel) == 1


# ── kbdesk's own tables ────────────────────────────────────────────────────────
def test_the_embedding_cache_and_usage_log_are_per_user(server):
    alice, bob, root = server.desk("alice"), server.desk("bob"), server.desk("root")
    mine, theirs = np.eye(8, dtype=np.float32)[0], np.eye(8, dtype=np.float32)[1]
    alice.store.put_cached_vectors("m", [("h1", mine)])
    bob.store.put_cached_vectors("m", [("h1", theirs), ("h2", theirs)])  # the same text: no clash, no overwrite
    assert np.frombuffer(alice.store.cached_vectors("m", ["h1", "h2"])["h1"], dtype=np.float32)[0] == 1.0
    assert set(alice.store.cached_vectors("m", ["h1", "h2"])) == {"h1"}
    assert np.frombuffer(bob.store.cached_vectors("m", ["h1"])["h1"], dtype=np.float32)[1] == 1.0
    assert count(server.uris["bob"], "SELECT count(*) FROM kbdesk_embedding_cache") == 2
    everyone = raw(
        server.uri,
        "SELECT jsonb_agg(jsonb_build_object('model', model, 'text_hash', text_hash, 'user_id', user_id)) "
        "FROM kbdesk_embedding_cache",
    )[0][0][0]
    assert len(everyone) == 3
    assert raw(server.uris["bob"], "SELECT kbdesk_delete('kbdesk_embedding_cache', %s)", Jsonb(everyone))[0] == [(2,)]
    assert set(alice.store.cached_vectors("m", ["h1"])) == {"h1"}
    alice.store.log_usage("embedding", provider="p", model="m", inputs=3)
    assert count(server.uris["bob"], "SELECT count(*) FROM kbdesk_usage_log") == 0
    assert count(server.uris["alice"], "SELECT count(*) FROM kbdesk_usage_log") == 1
    assert count(server.uris["root"], "SELECT count(*) FROM kbdesk_usage_log") == 1  # a system admin sees all
    root.store.log_usage("chat", provider="p", model="m")


def test_a_user_exports_a_local_kb_to_the_server_as_themselves(server, tmp_path):
    """Export writes through row security like any write: a personal KB of its owner,
    chunks and vectors staged and checked (COPY cannot write a table under row security)."""
    from kbdesk.transfer import export_kb, import_kb

    with open_desk(tmp_path / "laptop.db") as laptop:
        laptop.create_kb("Field notes", model_id="m", dimensions=8)
        laptop.add_document(
            "Field notes",
            "owls.txt",
            ["Barn owls nest in the old mill.", "They hunt at dusk."],
            vectors=[axis(0), axis(1)],
        )
        report = export_kb(laptop, "Field notes", server.uris["alice"])
        assert report.copied_chunks == 2
        assert export_kb(laptop, "Field notes", server.uris["alice"]).copied_chunks == 0  # idempotent
    alice = server.desk("alice")
    kb = alice.kb("Field notes")
    assert kb.owner_id == server.uid("alice") and kb.chunk_count == 2
    assert (
        alice.search(["Field notes"], "x", query_vector=axis(1), mode="vector").results[0].content
        == "They hunt at dusk."
    )
    assert names(server.desk("bob")) == []
    assert count(server.uris["bob"], "SELECT count(*) FROM kb_chunks WHERE kb_id = %s", kb.id) == 0
    with open_desk(tmp_path / "bob.db") as bobs_laptop, pytest.raises(NotFoundError):  # bob cannot import it
        import_kb(bobs_laptop, server.uris["bob"], "Field notes")


# ── who gets in ────────────────────────────────────────────────────────────────
def test_a_login_that_is_not_a_kbdesk_user_is_refused_in_one_line(server, diary):
    login = server.new_login("mallory")
    with pytest.raises(StoreError, match=f"the login '{login}' is not a kbdesk user.*pg grant {login}"):
        open_desk(server.uris["mallory"])
    with pytest.raises(Refused):
        raw(server.uris["mallory"], "SELECT count(*) FROM kb_chunks")
    # revoked, alice is out; granted again, she is back with her KBs (same user id)
    server.desk("alice").close()
    server.desks.pop("alice")
    revoke(server.uri, server.logins["alice"])
    with pytest.raises(StoreError, match="is not a kbdesk user"):
        open_desk(server.uris["alice"])
    with pytest.raises(Refused):
        raw(server.uris["alice"], "SELECT count(*) FROM knowledge_bases")
    grant(server.uri, server.logins["alice"])
    assert names(server.desk("alice")) == ["Notes"]


def test_a_user_never_migrates_and_is_told_who_must(server):
    alice = server.uris["alice"]
    last = sql(server.uri, "SELECT max(version) FROM kbdesk_migrations")[0][0]
    sql(server.uri, "DELETE FROM kbdesk_migrations WHERE version = %s", last)  # as if kbdesk were upgraded
    with pytest.raises(StoreError, match=r"needs kbdesk's schema update.*pg setup"):
        open_desk(alice)
    setup(server.uri)  # the administrator brings it up to date
    assert pg_store(open_desk(alice)).identity.source == "database"


def test_the_owner_keeps_the_configs_identity(server, diary):
    """The superuser (like a local single-user server's owner) bypasses row security:
    kbdesk acts as its config's [identity] and checks the rules itself."""
    _kb, _ = diary
    owner = open_desk(server.uri, config=parse_config({"identity": {"username": "ops", "admin": True}}))
    try:
        who = pg_store(owner).identity
        assert (who.username, who.admin, who.source) == ("ops", True, "config")
        assert pg_store(owner).describe()["identity"] == "config"
        with pytest.raises(NotFoundError):
            owner.kb("Notes")  # alice's personal KB: not in ops's picker
        assert owner.create_kb("Ops handbook", scope="global").scope == "global"
    finally:
        owner.close()
    assert "Ops handbook" in names(server.desk("alice"))


# ── the administrator's commands ───────────────────────────────────────────────
def test_setup_is_idempotent_and_secures_every_table(server):
    again = setup(server.uri)
    assert again["roles_created"] == [] and again["users"] == 4
    tables = secured_tables(psycopg.connect(server.uri, autocommit=True))
    assert {
        "knowledge_bases",
        "kb_documents",
        "kb_chunks",
        "channel_knowledge_bases",
        "kbdesk_document_blobs",
        "kbdesk_audit_log",
        "kbdesk_usage_log",
        "kbdesk_embedding_cache",
    } <= set(tables)
    flags = dict(sql(server.uri, "SELECT relname::text, relrowsecurity FROM pg_class WHERE relname = ANY(%s)", tables))
    assert all(flags[t] for t in tables), flags
    listed = {u["login"]: u for u in users(server.uri)}
    assert listed[server.logins["bob"]]["teams"] == {"Eng": "admin"} and listed[server.logins["root"]]["admin"]
    assert listed[server.logins["alice"]]["user_id"] == server.uid("alice")


def test_only_an_owner_runs_the_admin_commands_and_bad_logins_are_refused(server):
    alice = server.uris["alice"]
    with pytest.raises(AccessDeniedError, match="only a database owner can run pg setup"):
        setup(alice)
    with pytest.raises(AccessDeniedError, match="only a database owner can run pg grant"):
        grant(alice, server.logins["alice"], admin=True)
    with pytest.raises(AccessDeniedError, match="only a database owner can run pg revoke"):
        revoke(alice, server.logins["bob"])
    with pytest.raises(NotFoundError, match=r"no role 'nobody_here'.*CREATE ROLE"):
        grant(server.uri, "nobody_here")
    superuser = sql(server.uri, "SELECT current_user")[0][0]
    with pytest.raises(InvalidInputError, match="bypasses row-level security"):
        grant(server.uri, superuser)
    sql(server.admin_uri, f"CREATE ROLE readers_group_{uuid.uuid4().hex[:6]} NOLOGIN")
    group = sql(server.admin_uri, "SELECT rolname FROM pg_roles WHERE rolname LIKE 'readers_group_%%'")[0][0]
    with pytest.raises(InvalidInputError, match="cannot log in"):
        grant(server.uri, group)
    with pytest.raises(NotFoundError, match="is not a kbdesk user"):
        revoke(server.uri, "nobody_here")


def test_pg_grant_on_a_fresh_database_needs_setup_first(pg_uri, pg_server):
    login = f"early_{uuid.uuid4().hex[:8]}"
    create_login(pg_server, login, PASSWORD)
    with pytest.raises(StoreError, match="run kbdesk pg setup first"):
        grant(pg_uri, login)
    with pytest.raises(StoreError, match="is not a kbdesk user"):
        open_desk(as_login(pg_uri, login, PASSWORD))


def test_users_search_through_an_index_the_owner_builds(server):
    """Users cannot build a KB's vector index (that needs the tables' owner): pg setup
    builds it, and a user's search then goes through it, under row security."""
    root = server.desk("root")
    data = np.random.default_rng(3).standard_normal((1000, 8)).astype(np.float32)
    root.create_kb("Big", model_id="m", dimensions=8, scope="global")
    root.add_document("Big", "big.txt", [f"row {i}" for i in range(1000)], vectors=data)
    kb = root.kb("Big")
    assert setup(server.uri)["indexes_built"] == 1
    alice = server.desk("alice").store
    q = data[0] / np.linalg.norm(data[0])
    assert "Index Scan using kbvec" in alice.vectors.explain(kb.id, 8, q, 10)
    top = alice.vectors.search(kb.id, 8, q, 5)
    assert top[0][1] == pytest.approx(1.0, abs=1e-5)


def test_the_pg_commands(pg_uri, pg_server, kbdesk_home, tmp_path):
    """How a team server hands out logins, through the CLI; every refusal is one line."""
    import json

    from click.testing import CliRunner

    from kbdesk.cli.main import cli

    runner = CliRunner()

    def run(*args):
        result = runner.invoke(cli, list(args))
        assert "Traceback" not in result.output
        return result

    ann, ben = (f"{n}_{uuid.uuid4().hex[:8]}" for n in ("ann", "ben"))
    for login in (ann, ben):
        create_login(pg_server, login, PASSWORD)
    r = run("--db", pg_uri, "pg", "setup")
    assert r.exit_code == 0, r.output
    assert "ready for kbdesk users: row-level security on" in r.output and "pg grant LOGIN" in r.output
    assert run("--db", pg_uri, "pg", "setup").exit_code == 0  # again: nothing to do, no error
    r = run("--db", pg_uri, "pg", "grant", ann, "--team", "Eng:admin", "--team", "Ops")
    assert r.exit_code == 0, r.output
    assert f"{ann} is a kbdesk user" in r.output and "Eng (admin), Ops" in r.output
    r = run("--db", pg_uri, "pg", "grant", ben, "--admin", "--json")
    assert json.loads(r.stdout)["admin"] is True
    listed = json.loads(run("--db", pg_uri, "pg", "users", "--json").stdout)
    assert {u["login"] for u in listed["data"]} == {ann, ben}
    assert ann in run("--db", pg_uri, "pg", "users").output

    ann_uri, ben_uri = as_login(pg_uri, ann, PASSWORD), as_login(pg_uri, ben, PASSWORD)
    assert run("--db", ann_uri, "kb", "create", "Mine").exit_code == 0
    assert "Mine" not in run("--db", ben_uri, "kb", "list").output
    r = run("--db", ann_uri, "pg", "setup")
    assert r.exit_code == 1 and r.output.count("\n") == 1
    assert "only a database owner can run pg setup" in r.output
    for args, message in [
        (("--db", pg_uri, "pg", "grant", "nobody_here"), "no role 'nobody_here'"),
        (("--db", ann_uri, "pg", "grant", ann, "--admin"), "only a database owner can run pg grant"),
        (("--db", str(tmp_path / "local.db"), "pg", "setup"), "kbdesk pg works on a PostgreSQL server"),
        (("--db", pg_uri, "pg", "grant", ann, "--user-id", "nope"), "--user-id must be a UUID"),
    ]:
        r = run(*args)
        assert r.exit_code == 1 and message in r.output and r.output.count("\n") == 1, r.output
    r = run("--db", pg_uri, "pg", "revoke", ann)
    assert r.exit_code == 0 and "no longer a kbdesk user" in r.output
    r = run("--db", ann_uri, "kb", "list")
    assert r.exit_code == 1 and f"pg grant {ann}" in r.output
    assert run("--db", pg_uri, "pg", "revoke", ben, "--admin").exit_code == 0
    assert json.loads(run("--db", pg_uri, "pg", "users", "--json").stdout)["data"][0]["admin"] is False


def test_a_table_owner_who_is_not_a_superuser_runs_the_server(pg_server, kbdesk_home):
    """The usual production shape: a login that owns the database (not a superuser)
    creates kbdesk's tables on first use, runs pg setup and pg grant; row security binds
    its users, not itself."""
    tag = uuid.uuid4().hex[:8]
    owner, alice = f"kbowner_{tag}", f"alice_{tag}"
    create_login(pg_server, owner, PASSWORD)
    create_login(pg_server, alice, PASSWORD)
    sql(pg_server, f'ALTER ROLE "{owner}" CREATEROLE')
    sql(pg_server, f'CREATE DATABASE team_{tag} OWNER "{owner}" TEMPLATE template0')
    database = with_database(pg_server, f"team_{tag}")
    sql(database, "CREATE EXTENSION vector")  # pgvector is not a trusted extension: the superuser enables it
    for role in ("kbdesk_user", "kbdesk_admin"):  # the server's roles, as another database's setup left them
        sql(pg_server, f"DO $$ BEGIN CREATE ROLE {role} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    owner_uri, alice_uri = as_login(database, owner, PASSWORD), as_login(database, alice, PASSWORD)
    with open_desk(owner_uri) as first:  # first use: the owner's kbdesk makes the schema
        assert pg_store(first).identity.source == "config"
    assert sql(database, "SELECT tableowner FROM pg_tables WHERE tablename = 'kb_chunks'") == [(owner,)]
    assert setup(owner_uri)["roles_created"] == []
    with pytest.raises(AccessDeniedError, match="WITH ADMIN OPTION"):
        grant(owner_uri, alice)
    sql(pg_server, f'GRANT kbdesk_user, kbdesk_admin TO "{owner}" WITH ADMIN OPTION')
    grant(owner_uri, alice, teams=[TeamGrant("Eng", "admin")])
    with open_desk(alice_uri) as desk:
        assert pg_store(desk).identity.source == "database"
        desk.create_kb("Mine")
        desk.add_document("Mine", "a.txt", ["alice's own words"])
    with pytest.raises(AccessDeniedError, match="only a database owner can run pg grant"):
        grant(alice_uri, alice, admin=True)
    with pytest.raises(Refused):
        raw(alice_uri, "ALTER TABLE kb_chunks DISABLE ROW LEVEL SECURITY")
    # the owner is not bound (its kbdesk checks the rules for its config's identity)
    assert count(owner_uri, "SELECT count(*) FROM kb_chunks") == 1
    with open_desk(owner_uri) as admin_desk:
        assert [kb.name for kb in admin_desk.list_kbs()] == []
