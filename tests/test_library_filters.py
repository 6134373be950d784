"""The library face: ``desk.search(…, filters=…)`` takes a Filters, its JSON form or a
filter line alike; a bad one is one line naming the field; ``desk.filter_hints`` says
what a filter on some KBs can name (the TUI completes from it)."""

from __future__ import annotations

import pytest

from kbdesk import open_desk
from kbdesk.errors import InvalidInputError
from kbdesk.filters import Filters
from vault_support import MATCHING, vault_kb


@pytest.fixture
def desk():
    d = open_desk()
    vault_kb(d)
    yield d
    d.close()


@pytest.mark.parametrize(
    "filters",
    [
        Filters(tags=("q3",), path=("work/**",)),
        {"tags": ["q3"], "path": "work/**"},
        "tag:q3 path:work/**",
    ],
)
def test_search_takes_filters_in_every_form(desk, filters):
    response = desk.search(["notes"], "roadmap", limit=10, filters=filters)
    assert {r.source for r in response.results} == MATCHING
    assert response.to_dict()["filters"] == {"path": ["work/**"], "tags": ["q3"]}


def test_a_bad_filter_is_one_line_naming_the_field(desk):
    with pytest.raises(InvalidInputError, match="filters: 'until' must be a date"):
        desk.search(["notes"], "roadmap", filters={"until": "later"})
    with pytest.raises(InvalidInputError, match="filters must be an object"):
        desk.search(["notes"], "roadmap", filters=42)


def test_filter_hints_name_the_tags_folders_and_types(desk):
    hints = desk.filter_hints(["notes"])
    assert hints.tags == ("draft", "planning", "q2", "q3")
    assert hints.folders == ("home", "work", "work/plans")
    assert hints.types == ("md", "pdf")


def test_filter_hints_read_the_kept_facts_and_name_what_the_documents_do(engine_desk):
    """The same tags, folders and types as the documents' own rows say (with the parents
    of nested tags), from the facts the store keeps for filtering; a new document shows."""
    from kbdesk.filters import with_parents

    desk = engine_desk
    vault_kb(desk)
    desk.add_document("notes", "ops/runbooks/db.md", ["The database runbook."], properties={"tags": ["ops/db"]})
    desk.create_kb("other")
    desk.add_document("other", "top.csv", ["a,b"], properties={"tags": ["Data"]})

    def from_rows(*kbs):
        tags: set[str] = set()
        folders: set[str] = set()
        types: set[str] = set()
        for kb in kbs:
            for doc in desk.documents(kb):
                tags |= with_parents(doc.tags)
                types |= {doc.file_type} - {""}
                parts = doc.path.split("/")[:-1]
                folders |= {"/".join(parts[: i + 1]) for i in range(len(parts))}
        return tuple(sorted(tags)), tuple(sorted(folders)), tuple(sorted(types))

    hints = desk.filter_hints(["notes", "other"])
    assert (hints.tags, hints.folders, hints.types) == from_rows("notes", "other")
    assert "ops" in hints.tags and "ops/db" in hints.tags and "ops/runbooks" in hints.folders
    desk.add_document("notes", "later/new.pdf", ["New."], properties={"tags": ["fresh"]})
    again = desk.filter_hints(["notes"])
    assert (
        "fresh" in again.tags
        and "later" in again.folders
        and (again.tags, again.folders, again.types) == (from_rows("notes"))
    )
