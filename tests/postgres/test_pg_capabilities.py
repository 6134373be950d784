"""What the Postgres engine declares it can do, and a clear line for what a database cannot."""

import pytest

from kbdesk import open_desk
from kbdesk.errors import StoreError
from kbdesk.store.api import BLOBS, CHAT, TEAM, Store
from pg_support import sql


def test_the_postgres_engine_is_a_store_with_chat(pg_uri, kbdesk_home):
    with open_desk(pg_uri) as desk:
        assert isinstance(desk.store, Store) and desk.store.kind == "postgres"
        assert desk.store.capabilities == {CHAT, BLOBS, TEAM}
        conv = desk.chat().new_conversation("hello")
        assert desk.chat().conversation(conv.id[:8]).title == "hello"


def test_a_team_servers_own_channels_table_is_left_alone_and_chat_says_so(empty_pg_uri, kbdesk_home):
    sql(empty_pg_uri, "CREATE TABLE channels (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), name TEXT)")
    with open_desk(empty_pg_uri) as desk:
        assert desk.store.capabilities == {BLOBS, TEAM}
        assert sorted(
            r[0]
            for r in sql(
                empty_pg_uri,
                "SELECT attname::text FROM pg_attribute WHERE attrelid = 'channels'::regclass AND attnum > 0",
            )
        ) == ["id", "name"]
        with pytest.raises(StoreError, match=r"keeps no conversations.*channels table is a team server's own"):
            desk.chat()
        from kbdesk.chat.notes import NoteService

        with pytest.raises(StoreError, match="keeps no conversations"):
            NoteService(desk)
        desk.create_kb("Handbook")  # everything else works
        assert [kb.name for kb in desk.list_kbs()] == ["Handbook"]


def test_the_sqlite_engine_has_chat(tmp_path):
    with open_desk(tmp_path / "kb.db") as desk:
        assert isinstance(desk.store, Store) and CHAT in desk.store.capabilities
        assert TEAM not in desk.store.capabilities  # one person's file: no users, teams or scopes
        desk.chat().new_conversation("hello")
