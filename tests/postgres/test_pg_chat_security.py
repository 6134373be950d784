"""A team server's chat: every conversation, message, tool call, persona, project, note,
note vector and setting is one user's alone — through kbdesk and through raw SQL.

The same server as test_pg_security.py (alice, bob, root the system admin, eve, each a
login of their own after ``pg setup`` and ``pg grant``).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb
from test_pg_security import Refused, count, raw
from test_pg_security import server as server

from helpers import chat_store
from kbdesk import open_desk
from kbdesk.config import parse_config
from kbdesk.errors import NotFoundError, StoreError
from kbdesk.store.notes import note_text
from kbdesk.store.postgres.rls import CHAT_TABLES, secured_tables
from pg_support import sql

VECTOR = np.eye(8, dtype=np.float32)[2]


@pytest.fixture
def alices(server):
    """alice's chat: a conversation bound to her KB, with her persona and project, a
    message asking for a tool, a note with its vector, a setting."""
    alice = server.desk("alice")
    kb = alice.create_kb("Diary")
    s = alice.store
    persona = s.create_persona("Ops", "my secret prompt")
    s.update_persona(persona.id, kbs=[(kb.id, True)])
    project = s.create_project("Merger")
    s.update_project(project.id, kbs=[kb.id])
    conv = s.create_conversation("secret plans", persona_id=persona.id, project_id=project.id)
    s.set_channel_kb(conv.id, kb.id, True)
    s.add_message(conv.id, "user", "my secret plan for the merger")
    asked = s.add_message(conv.id, "assistant", "", tool_calls=[("c1", "kb_search", '{"query": "merger"}')])
    note = s.create_note("the merger closes in May", "Merger")
    assert s.put_note_vectors("m", [(note.id, note_text(note.title, note.content), VECTOR)]) == 1
    s.set_setting("chat.remembered", "alice's")
    return SimpleNamespace(
        store=s, kb=kb, persona=persona, project=project, conv=conv, message=asked, note=note, uid=server.uid("alice")
    )


def whole(store, a) -> tuple:
    """What alice has, read through kbdesk."""
    conv = store.find_conversation(a.conv.id)
    return (
        conv.title,
        conv.message_count,
        conv.persona_id,
        conv.project_id,
        [m.content for m in store.messages(conv.id)],
        store.messages(conv.id)[1].tool_calls[0].call_id,
        store.find_persona(a.persona.id).kbs,
        store.find_project(a.project.id).kbs,
        [b["kb_id"] for b in store.channel_kbs(conv.id)],
        store.find_note(a.note.id).content,
        store.note_keyword_candidates("merger", 5)[0][0],
        store.note_vector_candidates("m", VECTOR, 5),
        store.get_setting("chat.remembered"),
    )


def test_a_users_chat_is_theirs_alone_through_kbdesk(server, alices):
    a = alices
    before = whole(a.store, a)
    for who in ("bob", "root"):  # another member, and a system admin
        other = server.desk(who).store
        assert other.list_conversations() == [] and other.list_personas() == [] and other.list_projects() == []
        assert other.list_notes() == [] and other.note_count() == 0
        for find, ref in [
            (other.find_conversation, a.conv.id),
            (other.find_conversation, "secret plans"),
            (other.find_conversation, a.conv.id[:8]),
            (other.get_message, a.message.id),
            (other.find_persona, a.persona.id),
            (other.find_persona, "Ops"),
            (other.find_project, a.project.id),
            (other.find_note, a.note.id),
        ]:
            with pytest.raises(NotFoundError):
                find(ref)
        assert other.messages(a.conv.id) == [] and other.channel_kbs(a.conv.id) == []
        assert other.note_keyword_candidates("merger", 5) == []
        assert other.note_vector_candidates("m", VECTOR, 5) == [] and other.notes_by_id([a.note.id]) == {}
        assert other.get_setting("chat.remembered") is None
        with pytest.raises(NotFoundError):
            other.update_conversation(a.conv.id, title="mine now")
        with pytest.raises(NotFoundError):
            other.delete_note(a.note.id)
        for write in (
            lambda other=other: other.add_message(a.conv.id, "user", "planted"),
            lambda other=other: other.set_channel_kb(a.conv.id, a.kb.id, False),
        ):
            with pytest.raises(StoreError):  # the database refuses what kbdesk was not asked to check
                write()
        assert other.put_note_vectors("m", [(a.note.id, note_text(a.note.title, a.note.content), VECTOR)]) == 0
    # the tables' owner, which row security does not restrict, acts as its config's identity: kbdesk
    # shows it that identity's rows, not alice's
    owner = open_desk(server.uri, config=parse_config({"identity": {"username": "ops", "admin": True}}))
    try:
        kept = chat_store(owner)
        assert kept.list_conversations() == [] and kept.list_notes() == []
        assert kept.messages(a.conv.id) == [] and kept.channel_kbs(a.conv.id) == []
        assert kept.list_personas() == [] and kept.note_keyword_candidates("merger", 5) == []
        with pytest.raises(NotFoundError):
            kept.find_note(a.note.id)
        assert kept.get_setting("chat.remembered") is None
    finally:
        owner.close()
    # names are per user: bob has an "Ops" and a "Merger" of his own; his setting is his
    bob = server.desk("bob").store
    assert bob.create_persona("Ops").id != a.persona.id and bob.create_project("Merger").id != a.project.id
    bob.set_setting("chat.remembered", "bob's")
    assert bob.get_setting("chat.remembered") == "bob's"
    assert whole(a.store, a) == before


def test_a_users_chat_is_theirs_alone_through_raw_sql(server, alices):
    a = alices
    tables = {"channels": "title", "channel_knowledge_bases": "enabled", **dict.fromkeys(CHAT_TABLES)}
    assert set(CHAT_TABLES) <= set(secured_tables(psycopg.connect(server.uri, autocommit=True)))
    mine = {t: count(server.uris["alice"], f"SELECT count(*) FROM {t}") for t in tables}
    assert all(mine.values()), mine  # alice reads every row of hers
    bob_uri, bob = server.uris["bob"], server.uid("bob")
    for table in tables:
        assert count(bob_uri, f"SELECT count(*) FROM {table}") == 0, table
        with pytest.raises(Refused):  # users delete only through kbdesk_delete (DELETE would allow LOCK TABLE)
            raw(bob_uri, f"DELETE FROM {table}")
        keys = raw(server.uri, f"SELECT jsonb_agg(to_jsonb(t)) FROM {table} t")[0][0][0]  # every row, the owner's view
        assert raw(bob_uri, "SELECT kbdesk_delete(%s, %s)", table, Jsonb(keys))[0] == [(0,)], table
    for table, column in [
        ("channels", "title"),
        ("kbdesk_chat_messages", "content"),
        ("kbdesk_personas", "name"),
        ("kbdesk_projects", "name"),
        ("kbdesk_notes", "content"),
        ("kbdesk_user_settings", "value"),
        ("kbdesk_chat_tool_calls", "arguments"),
    ]:
        assert raw(bob_uri, f"UPDATE {table} SET {column} = 'bob was here'")[1] == 0, table
    bobs_kb = server.desk("bob").create_kb("Bob's")
    bobs_persona = raw(
        bob_uri,
        "INSERT INTO kbdesk_personas(id, owner_id, name) VALUES (gen_random_uuid(), %s, 'Mine') RETURNING id::text",
        bob,
    )[0][0][0]
    bobs_channel = raw(bob_uri, "INSERT INTO channels(title, owner_id) VALUES ('mine', %s) RETURNING id::text", bob)[0][
        0
    ][0]
    for statement, args in [
        ("INSERT INTO kbdesk_chat_messages(id, channel_id, role) VALUES (gen_random_uuid(), %s, 'user')", (a.conv.id,)),
        (
            "INSERT INTO kbdesk_chat_tool_calls(id, message_id, position, call_id, name) "
            "VALUES (gen_random_uuid(), %s, 9, 'c9', 'kb_search')",
            (a.message.id,),
        ),
        ("INSERT INTO kbdesk_personas(id, owner_id, name) VALUES (gen_random_uuid(), %s, 'Planted')", (a.uid,)),
        ("INSERT INTO kbdesk_projects(id, owner_id, name) VALUES (gen_random_uuid(), %s, 'Planted')", (a.uid,)),
        ("INSERT INTO kbdesk_notes(id, owner_id, content) VALUES (gen_random_uuid(), %s, 'planted')", (a.uid,)),
        (
            "INSERT INTO kbdesk_note_vectors(note_id, model, dimensions, embedding) VALUES (%s, 'm', 1, '\\x00000000')",
            (a.note.id,),
        ),
        ("INSERT INTO kbdesk_user_settings(owner_id, key, value) VALUES (%s, 'chat.remembered', 'evil')", (a.uid,)),
        # bindings: his persona to her KB, her persona or project to his KB
        ("INSERT INTO kbdesk_persona_knowledge_bases(persona_id, kb_id) VALUES (%s, %s)", (bobs_persona, a.kb.id)),
        ("INSERT INTO kbdesk_persona_knowledge_bases(persona_id, kb_id) VALUES (%s, %s)", (a.persona.id, bobs_kb.id)),
        ("INSERT INTO kbdesk_project_knowledge_bases(project_id, kb_id) VALUES (%s, %s)", (a.project.id, bobs_kb.id)),
        # a conversation of his naming her persona or project
        ("UPDATE channels SET persona_id = %s WHERE id = %s", (a.persona.id, bobs_channel)),
        ("INSERT INTO channels(title, owner_id, project_id) VALUES ('x', %s, %s)", (bob, a.project.id)),
        ("INSERT INTO channels(title, owner_id) VALUES ('planted', %s)", (a.uid,)),
    ]:
        with pytest.raises(Refused):
            raw(bob_uri, statement, *args)
    assert {t: count(server.uris["alice"], f"SELECT count(*) FROM {t}") for t in tables} == mine
    assert sql(server.uri, "SELECT content FROM kbdesk_notes WHERE id = %s", a.note.id) == [(a.note.content,)]
