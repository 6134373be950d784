"""The store is composed of repositories: its methods are theirs, on the real SQLite store."""

from __future__ import annotations

import inspect
import types
from pathlib import Path

import pytest

from kbdesk.store import open_sqlite_store
from kbdesk.store.api import ChatStore
from kbdesk.store.core.compose import Via, via
from kbdesk.store.core.notes import Notes
from kbdesk.store.postgres import PostgresStore
from kbdesk.store.sqlite import SqliteStore


def bound_to(method: object) -> object:
    """The object a bound method belongs to."""
    assert isinstance(method, types.MethodType)
    return method.__self__


def test_every_method_of_the_protocols_answers_on_the_store(tmp_path: Path) -> None:
    store = open_sqlite_store(tmp_path / "kb.sqlite")
    try:
        missing = [
            name
            for name, member in inspect.getmembers(ChatStore)
            if not name.startswith("_") and callable(member) and not callable(getattr(store, name, None))
        ]
        assert missing == []
        # a method offered through via() is the repository's own, bound to the repository
        assert bound_to(store.create_note) is store.notes
        assert bound_to(store.add_document) is store.documents
        assert bound_to(store.import_documents) is store.transfer
        assert bound_to(store.cached_vectors) is store.cache
        assert bound_to(store.create_kb) is store.records
        assert bound_to(store.audit) is store.audit_log
        assert bound_to(store.filter_documents) is store.facts
        assert bound_to(store.keyword_candidates) is store.lookup
        assert bound_to(store.vector_candidates) is store.lookup
        note = store.create_note("composed stores keep their surface", "via")
        assert store.notes.find_note(note.id).content == "composed stores keep their surface"
    finally:
        store.close()


def test_via_names_the_repositorys_method_under_its_own_name() -> None:
    assert isinstance(SqliteStore.create_note, Via)  # on the class: the delegation itself
    with pytest.raises((TypeError, RuntimeError)) as caught:  # Python 3.11 wraps it in a RuntimeError

        class Wrong:
            add_note = via("notes", Notes.create_note)

    error = caught.value.__cause__ or caught.value
    assert "Wrong.add_note is via() of Notes.create_note: the names must match" in str(error)


@pytest.mark.parametrize("store_class", [SqliteStore, PostgresStore])
def test_a_store_inherits_no_behaviour_only_its_surfaces(store_class: type) -> None:
    # every class a store inherits offers repositories' methods (via()) and builds them,
    # nothing else: what a store does is in its repositories, none reached by base order
    for base in store_class.__mro__[1:-1]:
        own = {
            name: member
            for name, member in vars(base).items()
            if not name.startswith("__") and (callable(member) or isinstance(member, Via))
        }
        assert own, base
        behaviour = [name for name, member in own.items() if not isinstance(member, Via) and name[:8] != "compose_"]
        assert behaviour == [], f"{base.__name__} holds {behaviour}"
