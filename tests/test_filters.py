"""The filter language: read from its JSON form, written back, described, refused clearly."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kbdesk.errors import InvalidInputError
from kbdesk.filters import DocumentFacts, Filters, with_parents


def test_the_json_form_reads_and_writes_back():
    f = Filters.from_dict(
        {"path": "projects/**", "type": "PDF, .md", "since": "2026-11-01", "until": "2026-11-30", "tags": ["#Q3"]}
    )
    assert f.path == ("projects/**",) and f.types == ("pdf", "md") and f.tags == ("q3",)
    assert f.since == datetime(2026, 11, 1, tzinfo=UTC)
    assert f.until == datetime(2026, 12, 1, tzinfo=UTC)  # the whole of the last day
    assert Filters.from_dict(f.to_dict()) == f
    assert (
        f.describe()
        == "path projects/** · type pdf, md · modified since 2026-11-01 · modified until 2026-11-30 · tags q3"
    )


def test_an_empty_filter_narrows_nothing():
    assert not Filters() and not Filters.from_dict({}) and not Filters.from_dict(None)
    assert Filters.from_dict({"any_tags": "a,b"}).any_tags == ("a", "b")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"paths": "x"}, "unknown field 'paths'"),
        ({"type": [1]}, "'type' must be a string or a list"),
        ({"since": "last week"}, "'since' must be a date like 2026-11-01"),
        ({"date": "created"}, "'date' must be one of modified, indexed, document"),
        ("path=x", "filters must be an object"),
    ],
)
def test_a_bad_filter_is_one_line_naming_the_field(data, says):
    with pytest.raises(InvalidInputError, match=says):
        Filters.from_dict(data)


def test_a_nested_tag_counts_as_each_of_its_parents():
    assert with_parents(["work/infra/db", "home", "/odd//tag/"]) == {
        "work",
        "work/infra",
        "work/infra/db",
        "home",
        "odd",
        "odd/tag",
    }
    doc = DocumentFacts("n.md", tags=with_parents(["work/infra"]))
    assert Filters.from_dict({"tags": "work"}).admits(doc)
    assert Filters.from_dict({"tags": "#Work/Infra/"}).admits(doc)
    assert not Filters.from_dict({"tags": "work/infra/db"}).admits(doc)
    assert not Filters.from_dict({"tags": "work/infra"}).admits(DocumentFacts("w.md", tags=with_parents(["work"])))
    with pytest.raises(InvalidInputError, match="'tags' must name tags"):
        Filters.from_dict({"tags": "#"})
