"""The Postgres store is composed as the SQLite one: its methods are its repositories',
its KB delete its own records' (a tombstone), its identities a repository of their own."""

from __future__ import annotations

import types

import pytest

from helpers import pg_store
from kbdesk.desk import Desk
from kbdesk.errors import NotFoundError
from kbdesk.store.postgres.records import PgRecords


def bound_to(method: object) -> object:
    assert isinstance(method, types.MethodType)
    return method.__self__


def test_the_postgres_store_answers_from_its_repositories(pg_desk: Desk) -> None:
    store = pg_store(pg_desk)
    assert isinstance(store.records, PgRecords)
    assert bound_to(store.delete_kb) is store.records  # the tombstone delete, not a base class's
    assert bound_to(store.keyword_candidates) is store.lookup
    assert bound_to(store.login_identity) is store.identities
    assert bound_to(store.team_name) is store.identities
    kb = store.create_kb("Composed")
    assert store.delete_kb(kb.id).name == "Composed"
    assert store.kb_by_id(kb.id) is None  # tombstoned: the owner's reads leave it out
    with pytest.raises(NotFoundError):
        store.get_kb(kb.id)
    assert store.login_identity("nobody_at_all") is None
