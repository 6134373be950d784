"""What the Postgres engine declares it can do, and a clear line for what it cannot yet."""

import pytest

from kbdesk import open_desk
from kbdesk.errors import StoreError
from kbdesk.store.api import CHAT, Store


def test_the_engine_is_a_store_and_says_chat_is_not_here_yet(pg_uri, kbdesk_home):
    with open_desk(pg_uri) as desk:
        assert isinstance(desk.store, Store) and desk.store.kind == "postgres"
        assert CHAT not in desk.store.capabilities
        with pytest.raises(StoreError, match="live in the SQLite file; this postgres store does not hold them yet"):
            desk.chat()
        from kbdesk.chat.notes import NoteService

        with pytest.raises(StoreError, match="does not hold them yet"):
            NoteService(desk)


def test_the_sqlite_engine_has_chat(tmp_path):
    with open_desk(tmp_path / "kb.db") as desk:
        assert isinstance(desk.store, Store) and CHAT in desk.store.capabilities
        desk.chat().new_conversation("hello")
