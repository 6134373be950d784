"""A hostile login on a team server: everything it tries, with raw SQL, to break, stall or
read other people's work — and other users' search, add and ``kb create`` still
succeed within a few seconds each while it holds whatever it could take.

The team server of test_pg_security.py (alice a member of Eng, bob its admin, root a
system admin, eve nobody), plus mallory: a kbdesk user with a KB of her own, who knows
SQL. A login with no grant at all (a stranger) tries what it can too.
"""

from __future__ import annotations

import time
import uuid
from contextlib import closing

import psycopg
import pytest
from test_pg_security import PASSWORD, Refused, count, names, raw
from test_pg_security import server as server

from helpers import axis
from kbdesk.errors import StoreError
from kbdesk.search import search
from kbdesk.store.postgres import locks
from kbdesk.store.postgres.admin import grant, setup
from kbdesk.store.postgres.rls import secured_tables
from pg_support import as_login, create_login, sql

FEW_SECONDS = 5.0  # what "still succeeds" means: a user's command never waits longer than this
LOCK_MODES = (
    "ACCESS EXCLUSIVE",
    "EXCLUSIVE",
    "SHARE ROW EXCLUSIVE",
    "SHARE",
    "SHARE UPDATE EXCLUSIVE",
    "ROW EXCLUSIVE",
    "ROW SHARE",
)


@pytest.fixture
def mallory(server, tmp_path):
    """A kbdesk user with a KB and a document of her own."""
    login = server.new_login("mallory")
    grant(server.uri, login)
    desk = server.desk("mallory")
    desk.create_kb("Mine", keyword_only=True)
    desk.add_document("Mine", "mine.txt", ["my own words", "more of them"])
    return server.uris["mallory"]


def attempt(uri: str, *statements: str, args: tuple = ()) -> type[BaseException] | None:
    """Run ``statements`` in one transaction of their own: the error class, or None."""
    with closing(psycopg.connect(uri)) as conn:
        try:
            for statement in statements:
                conn.execute(statement, args or None)
            conn.rollback()
        except psycopg.Error as exc:
            return type(exc)
    return None


def timed(what: str, work):
    """``work()``, refused if it takes a user longer than a few seconds."""
    started = time.monotonic()
    result = work()
    took = time.monotonic() - started
    assert took < FEW_SECONDS, f"{what} took {took:.1f} s"
    return result


def tables_of(uri: str) -> list[str]:
    return [
        r[0]
        for r in raw(
            uri,
            "SELECT relname::text FROM pg_class WHERE relnamespace = to_regnamespace(current_schema()) "
            "AND relkind IN ('r', 'p') AND has_table_privilege(oid, 'SELECT') ORDER BY 1",
        )[0]
    ]


def test_no_privilege_a_user_holds_allows_a_table_lock_truncate_or_a_key_of_their_choosing(server, mallory):
    readable = tables_of(mallory)
    assert {"knowledge_bases", "kb_chunks", "kb_documents", "kbdesk_audit_log", "kbdesk_notes"} <= set(readable)
    for table in readable:
        for privilege in ("UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"):
            assert not count(mallory, "SELECT has_table_privilege(%s, %s)::int", table, privilege), (table, privilege)
        for mode in LOCK_MODES:
            assert attempt(mallory, f"LOCK TABLE {table} IN {mode} MODE") is Refused, (table, mode)
        assert attempt(mallory, f"TRUNCATE {table}") is Refused, table
    # identity columns are nobody's to write, and their sequences nobody's to move
    identity = raw(
        server.uri,
        "SELECT c.relname::text, a.attname::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "WHERE c.relnamespace = to_regnamespace(current_schema()) AND a.attidentity <> '' AND NOT a.attisdropped",
    )[0]
    assert {("kb_chunks", "seq"), ("kbdesk_audit_log", "id"), ("kbdesk_usage_log", "id")} <= set(identity)
    for table, column in identity:
        for privilege in ("INSERT", "UPDATE"):
            assert not count(mallory, "SELECT has_column_privilege(%s, %s, %s)::int", table, column, privilege)
        seq = raw(server.uri, "SELECT pg_get_serial_sequence(%s, %s)", table, column)[0][0][0]
        for statement in (f"SELECT nextval('{seq}')", f"SELECT setval('{seq}', 10000000)"):
            assert attempt(mallory, statement) is Refused, statement
    # the attacks of the report: next chunk numbers and audit ids taken in advance
    kb_id, doc_id = raw(mallory, "SELECT kb_id::text, id::text FROM kb_documents")[0][0]
    top = count(server.uri, "SELECT max(seq) FROM kb_chunks")
    chunk = "INSERT INTO kb_chunks(seq, kb_id, document_id, chunk_index, content) VALUES (%s, %s, %s, 9, 'x')"
    for seq in range(top + 1, top + 4):
        assert attempt(mallory, chunk, args=(seq, kb_id, doc_id)) is Refused
    assert attempt(mallory, "UPDATE kb_chunks SET seq = seq + 1000") is Refused
    # the vectors at each KB's width are kbdesk's triggers' to keep, never a user's to write
    assert attempt(mallory, "DELETE FROM kbdesk_chunk_vectors") is Refused
    assert attempt(mallory, "UPDATE kbdesk_chunk_vectors SET embedding = '[1,0,0]'") is Refused
    victim = count(server.uri, "SELECT coalesce(max(seq), 0) FROM kb_chunks")
    planted = "INSERT INTO kbdesk_chunk_vectors(seq, kb_id, document_id, embedding) VALUES (%s, %s, %s, '[1,0]')"
    assert attempt(mallory, planted, args=(victim + 100, kb_id, doc_id)) is Refused
    audit = count(server.uri, "SELECT coalesce(max(id), 0) FROM kbdesk_audit_log")
    forged = "INSERT INTO kbdesk_audit_log(id, user_id, action) VALUES (%s, kbdesk_uid(), 'kb.create')"
    assert attempt(mallory, forged, args=(audit + 1,)) is Refused
    alice = server.desk("alice")
    alice.create_kb("Still works", keyword_only=True)  # the audit row takes the next id, as it should
    alice.add_document("Still works", "a.txt", ["fine"])


def test_a_hostile_login_cannot_stall_anyone(server, mallory, tmp_path):
    """mallory holds every lock she can take, in open transactions, while alice searches,
    adds a file and creates a KB, and bob creates a team KB."""
    alice, root = server.desk("alice"), server.desk("root")
    alice.create_kb("Notes", keyword_only=True)
    (tmp_path / "plan.md").write_text("# Plan\n\nThe walrus ships in May.\n")
    alice.add("Notes", [tmp_path / "plan.md"])
    hidden = root.create_kb("Legal", scope="global")
    root.edit_kb("Legal", discoverable=False)
    shown = root.create_kb("Handbook", scope="global")
    holds = []
    try:
        # every table she can read, in the strongest mode she can get (ACCESS SHARE, the
        # reader's, is all there is)
        reader = psycopg.connect(mallory)
        held = {}
        for table in tables_of(mallory):
            for mode in (*LOCK_MODES, "ACCESS SHARE"):
                try:
                    with reader.transaction():  # a savepoint: a refusal leaves the others held
                        reader.execute(f"LOCK TABLE {table} IN {mode} MODE")
                except psycopg.Error:
                    continue
                held[table] = mode
                break
        assert set(held.values()) == {"ACCESS SHARE"} and "kb_chunks" in held, held
        holds.append(reader)
        # her own KB's row, FOR UPDATE; the global KB's row, FOR KEY SHARE through a binding
        writer = psycopg.connect(mallory)
        writer.execute("SELECT * FROM knowledge_bases WHERE name = 'Mine' FOR UPDATE")
        made = writer.execute(
            "INSERT INTO channels(title, owner_id) VALUES ('x', kbdesk_uid()) RETURNING id"
        ).fetchone()
        assert made is not None
        channel = made[0]
        writer.execute("INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", (channel, shown.id))
        writer.execute("SELECT * FROM kb_chunks FOR SHARE")
        holds.append(writer)
        # advisory locks: kbdesk's old migration and name keys, the key of the name alice
        # is about to create, and the migration lock (refused)
        locker = psycopg.connect(mallory)
        with pytest.raises(Refused):
            locker.execute("LOCK TABLE kbdesk_migrations IN EXCLUSIVE MODE")
        locker.rollback()
        for key in (0x6B62_6465_736B, 0x6B62_6E61_6D65, locks.name_key("Ideas"), locks.name_key("Team ideas")):
            locker.execute("SELECT pg_advisory_lock(%s)", (key,))
        holds.append(locker)
        # a login with no grant at all takes what it can (advisory locks)
        server.new_login("stranger")
        outsider = psycopg.connect(server.uris["stranger"])
        outsider.execute("SELECT pg_try_advisory_lock(%s)", (locks.name_key("Notes"),))
        holds.append(outsider)

        # meanwhile, everyone else works as usual
        hits = timed("search", lambda: alice.search(["Notes"], "walrus", mode="keyword").results)
        assert [h.source for h in hits] == ["plan.md"]
        (tmp_path / "more.md").write_text("# More\n\nThe narwhal ships in June.\n")
        report = timed("add", lambda: alice.add("Notes", [tmp_path / "more.md"]))
        assert not report.failed and timed("search", lambda: alice.search(["Notes"], "narwhal").results)
        assert timed("kb create", lambda: alice.create_kb("Ideas", keyword_only=True)).name == "Ideas"
        bob = server.desk("bob")
        assert timed("team kb create", lambda: bob.create_kb("Team ideas", scope="team", team_id=server.team)).team_id
        timed("delete", lambda: alice.delete_kb("Ideas"))
        timed("rename", lambda: root.rename_kb("Handbook", "Staff handbook"))
        # and what she can read of the hidden KB, holding all that, is nothing
        for table, column in [("knowledge_bases", "id"), ("kb_documents", "kb_id"), ("kb_chunks", "kb_id")]:
            assert count(mallory, f"SELECT count(*) FROM {table} WHERE {column} = %s", hidden.id) == 0
    finally:
        for conn in holds:
            conn.close()


def test_a_hidden_global_kb_cannot_be_read_or_bound_by_raw_sql(server, mallory):
    root = server.desk("root")
    kb = root.create_kb("Legal", scope="global", model_id="m", dimensions=8)
    doc = root.add_document("Legal", "nda.md", ["Mutual NDAs are signed by legal."], vectors=[axis(0)])
    sql(server.uri, "INSERT INTO kbdesk_document_blobs(document_id, data) VALUES (%s, 'the nda')", doc.id)
    root.edit_kb("Legal", discoverable=False)
    for table, key, value in [
        ("knowledge_bases", "id", kb.id),
        ("kb_documents", "kb_id", kb.id),
        ("kb_chunks", "kb_id", kb.id),
        ("kbdesk_document_blobs", "document_id", doc.id),
        ("kbdesk_keyword_terms", "kb_id", kb.id),
        ("kbdesk_audit_log", "kb_id", kb.id),
    ]:
        assert count(mallory, f"SELECT count(*) FROM {table} WHERE {key} = %s", value) == 0, table
    assert count(mallory, "SELECT count(*) FROM kb_chunks WHERE content LIKE '%%NDA%%'") == 0
    assert count(mallory, "SELECT count(*) FROM kbdesk_picker() WHERE id = %s", kb.id) == 0
    channel = raw(mallory, "INSERT INTO channels(title, owner_id) VALUES ('x', kbdesk_uid()) RETURNING id::text")[0]
    persona = raw(
        mallory,
        "INSERT INTO kbdesk_personas(id, owner_id, name) VALUES (gen_random_uuid(), kbdesk_uid(), 'P') "
        "RETURNING id::text",
    )[0]
    for statement, args in [
        ("INSERT INTO channel_knowledge_bases(channel_id, kb_id) VALUES (%s, %s)", (channel[0][0], kb.id)),
        ("INSERT INTO kbdesk_persona_knowledge_bases(persona_id, kb_id) VALUES (%s, %s)", (persona[0][0], kb.id)),
    ]:
        with pytest.raises(Refused):
            raw(mallory, statement, *args)
    # kbdesk says the same, however the KB is named
    desk = server.desk("mallory")
    assert "Legal" not in names(desk)
    assert search(desk.store, [kb], "who signs NDAs", mode="keyword").results == []
    assert root.search(["Legal"], "who signs NDAs", mode="keyword").results  # the admin still reaches it


def test_audit_and_usage_rows_cannot_be_forged(server, mallory):
    alice = server.desk("alice")
    kb = alice.create_kb("Diary", keyword_only=True)
    her, me = server.uid("alice"), server.uid("mallory")
    refused = [
        ("INSERT INTO kbdesk_audit_log(user_id, action) VALUES (%s, 'kb.delete')", (her,)),  # as alice
        ("INSERT INTO kbdesk_audit_log(user_id, action, kb_id) VALUES (%s, 'kb.delete', %s)", (me, kb.id)),  # her KB
        ("INSERT INTO kbdesk_audit_log(user_id, action) VALUES (%s, 'kb.delete; drop everything')", (me,)),
        ("INSERT INTO kbdesk_usage_log(user_id, role) VALUES (%s, 'embedding')", (her,)),
        ("INSERT INTO kbdesk_usage_log(user_id, role, kb_id) VALUES (%s, 'embedding', %s)", (me, kb.id)),
        ("INSERT INTO kbdesk_usage_log(user_id, role, total_tokens) VALUES (%s, 'chat', -999999)", (me,)),
        ("INSERT INTO kbdesk_usage_log(user_id, role, prompt_tokens) VALUES (%s, 'chat', -1)", (me,)),
        ("INSERT INTO kbdesk_usage_log(user_id, role, inputs) VALUES (%s, 'embedding', -5)", (me,)),
        ("UPDATE kbdesk_audit_log SET action = 'kb.create'", ()),
        ("UPDATE kbdesk_usage_log SET total_tokens = 0", ()),
    ]
    for statement, args in refused:
        with pytest.raises((Refused, psycopg.errors.CheckViolation)):
            raw(mallory, statement, *args)
    # an honest row is fine, and carries the database's clock whatever the client says
    raw(
        mallory,
        "INSERT INTO kbdesk_usage_log(created_at, user_id, role, total_tokens) VALUES ('2001-01-01', %s, 'chat', 7)",
        me,
    )
    stamped = sql(
        server.uri, "SELECT created_at > now() - interval '1 hour' FROM kbdesk_usage_log WHERE user_id = %s", me
    )
    assert stamped == [(True,)]
    assert count(server.uri, "SELECT count(*) FROM kbdesk_audit_log WHERE kb_id = %s AND user_id = %s", kb.id, me) == 0


def test_pg_setup_refuses_a_schema_open_to_all_and_never_adopts_a_planted_table(server, mallory):
    # as before PostgreSQL 15: every login may create objects in public
    sql(server.uri, "GRANT CREATE ON SCHEMA public TO PUBLIC")
    for statement in [
        "CREATE TABLE kbdesk_trap (kb_id uuid, secret text)",  # a kbdesk-looking table with a kb_id
        "CREATE FUNCTION kbdesk_helper() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    ]:
        raw(mallory, statement)
    with pytest.raises(
        StoreError, match=r"kbdesk_helper\(\) belongs to 'mallory_\w+'.*never uses an object it did not make"
    ):
        setup(server.uri)
    # the schema was repaired first: nobody plants anything any more
    assert attempt(mallory, "CREATE TABLE kbdesk_more (x int)") is Refused
    owner = psycopg.connect(server.uri, autocommit=True)
    with closing(owner):
        assert "kbdesk_trap" not in secured_tables(owner)
    assert not count(server.uri, "SELECT has_table_privilege('kbdesk_user', 'kbdesk_trap', 'SELECT')::int")
    assert not count(server.uri, "SELECT relrowsecurity::int FROM pg_class WHERE relname = 'kbdesk_trap'")
    sql(server.uri, "DROP TABLE kbdesk_trap; DROP FUNCTION kbdesk_helper()")
    report = setup(server.uri)
    assert report["warnings"] == [] and report["users"] == 5


def test_a_wait_for_a_lock_gives_up_and_says_who_held_it(server, monkeypatch):
    """The owner (the one login that may) holds kb_chunks; alice's search gives up within
    the lock timeout with the login and pid that held it."""
    monkeypatch.setattr(locks, "LOCK_TIMEOUT_MS", 1000)
    alice = server.desk("alice")
    alice.create_kb("Notes", keyword_only=True)
    alice.add_document("Notes", "a.txt", ["the walrus ships in May"])
    alice.close()
    server.desks.pop("alice")
    alice = server.desk("alice")  # connections made with the shorter timeout
    holder = psycopg.connect(server.uri)
    try:
        pid = holder.info.backend_pid
        holder.execute("LOCK TABLE kb_chunks IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        held = (
            r"gave up after waiting 1 s for a lock held by the login '\w+' "
            + rf"\(pid {pid}, AccessExclusiveLock on kb_chunks"
        )
        with pytest.raises(locks.LockWaitTimeout, match=held):
            alice.search(["Notes"], "walrus", mode="keyword")
        assert time.monotonic() - started < FEW_SECONDS
    finally:
        holder.close()
    assert alice.search(["Notes"], "walrus", mode="keyword").results  # released: works again


def test_a_runaway_statement_is_stopped_with_a_clear_message(server):
    alice = server.desk("alice")
    conn = alice.store.connection()
    conn.execute("SET statement_timeout = 200")
    try:
        with pytest.raises(locks.StatementTimeout, match=r"a statement ran longer than .* and was stopped"):
            conn.execute("SELECT pg_sleep(5)")
    finally:
        conn.execute("RESET statement_timeout")


def test_a_user_holding_a_table_delays_pg_setup_with_a_message_naming_them(server, mallory, monkeypatch):
    monkeypatch.setattr(locks, "MAINTENANCE_LOCK_TIMEOUT_MS", 1000)
    holder = psycopg.connect(mallory)
    try:
        holder.execute("SELECT count(*) FROM kb_chunks")  # an open transaction, reading
        login = server.logins["mallory"]
        with pytest.raises(StoreError, match=rf"held by the login '{login}' \(pid \d+, AccessShareLock on"):
            setup(server.uri)
    finally:
        holder.close()
    assert setup(server.uri)["users"] == 5


def test_a_stranger_gets_nothing(server):
    login = f"stranger_{uuid.uuid4().hex[:8]}"
    create_login(server.admin_uri, login, PASSWORD)
    uri = as_login(server.uri, login, PASSWORD)
    for table in ("knowledge_bases", "kb_chunks", "kbdesk_migrations", "kbdesk_audit_log"):
        assert attempt(uri, f"SELECT 1 FROM {table} LIMIT 1") is Refused, table
        assert attempt(uri, f"LOCK TABLE {table} IN ACCESS SHARE MODE") is Refused, table
    assert attempt(uri, "SELECT kbdesk_delete('knowledge_bases', '[]')") is Refused
    assert attempt(uri, "SELECT * FROM kbdesk_team_members(gen_random_uuid())") is Refused
    assert attempt(uri, "LOCK TABLE kbdesk_migrations IN EXCLUSIVE MODE") is Refused
    with closing(psycopg.connect(uri)) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (0x6B62_6465_736B,))  # the old migration lock: harmless
        last = count(server.uri, "SELECT max(version) FROM kbdesk_migrations")
        sql(server.uri, "DELETE FROM kbdesk_migrations WHERE version = %s", last)
        timed("pg setup", lambda: setup(server.uri))  # migrates while the stranger holds all it can
    assert count(server.uri, "SELECT max(version) FROM kbdesk_migrations") == last


def test_team_admins_work_from_the_cli(server):
    """A team admin makes the team's KBs and sees its members from the CLI; a system admin
    makes and hides global KBs; every refusal is one line naming the team by name."""
    import json

    from click.testing import CliRunner

    from kbdesk.cli.main import cli

    def run(who, *args):
        result = CliRunner().invoke(cli, ["--db", server.uris[who], *args])
        assert "Traceback" not in result.output, result.output
        return result

    assert run("alice", "kb", "create", "Notes").exit_code == 0  # alice's personal KB
    made = run("bob", "kb", "create", "Runbooks", "--team", "Eng", "--keyword-only", "--json")
    assert made.exit_code == 0 and json.loads(made.stdout)["scope"] == "team", made.output
    taken = run("bob", "kb", "create", "notes", "--team", "Eng")  # a member's personal KB's name
    assert taken.exit_code == 1 and taken.output.count("\n") == 1
    assert "the name 'notes' is taken: a member of team 'Eng' already sees" in taken.output
    refused = run("alice", "kb", "create", "Ideas", "--team", "Eng")
    assert refused.exit_code == 1 and "only an admin of team 'Eng'" in refused.output, refused.output
    shown = json.loads(run("bob", "team", "show", "Eng", "--json").stdout)
    assert [kb["name"] for kb in shown["kbs"]] == ["Runbooks"] and shown["role"] == "admin"
    assert {(m["login"], m["role"]) for m in shown["members"]} == {
        (server.logins["alice"], "member"),
        (server.logins["bob"], "admin"),
    }
    assert "Runbooks" in run("bob", "team", "show", "Eng").output
    as_member = json.loads(run("alice", "team", "show", "Eng", "--json").stdout)
    assert as_member["members"] is None and [kb["name"] for kb in as_member["kbs"]] == ["Runbooks"]
    assert json.loads(run("alice", "team", "list", "--json").stdout)["data"] == [
        {"id": server.team, "name": "Eng", "role": "member"}
    ]
    # and the database shows members to team admins (and system admins) only
    assert raw(server.uris["alice"], "SELECT * FROM kbdesk_team_members(%s)", server.team)[0] == []
    assert len(raw(server.uris["bob"], "SELECT * FROM kbdesk_team_members(%s)", server.team)[0]) == 2
    assert run("eve", "team", "show", "Eng").exit_code == 1
    # global KBs: a system admin makes them, and hides them from everyone else
    assert run("root", "kb", "create", "Handbook", "--scope", "global").exit_code == 0
    assert "Handbook" in run("alice", "kb", "list").output
    assert run("alice", "kb", "discoverable", "Handbook", "no").exit_code == 1  # only an owner or system admin
    assert "is hidden" in run("root", "kb", "discoverable", "Handbook", "no").output
    assert "Handbook" not in run("alice", "kb", "list").output
    assert "Handbook" in run("root", "kb", "list").output
    assert run("alice", "kb", "create", "Mine", "--scope", "global").exit_code == 1


def test_a_user_deletes_a_kb_the_owner_indexed_and_pg_setup_drops_the_index(server):
    """The owner builds a KB's vector index (users cannot); its user still deletes the KB
    (the index is not theirs to drop) and the next pg setup removes the index left."""
    import numpy as np

    alice = server.desk("alice")
    data = np.random.default_rng(5).standard_normal((1000, 8)).astype(np.float32)
    kb = alice.create_kb("Big", model_id="m", dimensions=8)
    alice.add_document("Big", "big.txt", [f"row {i}" for i in range(1000)], vectors=data)
    assert setup(server.uri)["indexes_built"] == 1
    name = f"kbvec_{uuid.UUID(kb.id).hex}_8"
    assert count(server.uri, "SELECT count(*) FROM pg_class WHERE relname = %s", name) == 1
    timed("delete", lambda: alice.delete_kb("Big"))
    assert "Big" not in names(alice)
    setup(server.uri)
    assert count(server.uri, "SELECT count(*) FROM pg_class WHERE relname = %s", name) == 0
