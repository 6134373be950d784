"""Filters as one line of text (the TUI's filter line, the chat's /filter): read, written
back, completed, laid over a conversation's defaults, refused in the line's own words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kbdesk.errors import InvalidInputError
from kbdesk.filters import Filters
from kbdesk.filters_text import as_filters, complete_line, format_line, overlay, parse_line


def test_a_line_reads_into_the_same_filters_as_the_json_form():
    line = 'tag:q3 path:work/** path:"My Notes/**" not:work/drafts/** type:pdf,MD since:2026-11-01 #Roadmap any:a,b'
    f = parse_line(line)
    assert f == Filters.from_dict(
        {
            "path": ["work/**", "My Notes/**"],
            "exclude": ["work/drafts/**"],
            "type": ["pdf", "md"],
            "since": "2026-11-01",
            "tags": ["q3", "roadmap"],
            "any_tags": ["a", "b"],
        }
    )
    assert parse_line(format_line(f)) == f
    assert not parse_line("") and not parse_line("   ")


def test_until_and_the_indexed_date_read_back():
    f = parse_line("until:2026-11-30 date:indexed")
    assert f.until == datetime(2026, 12, 1, tzinfo=UTC) and f.date_field == "indexed"
    assert format_line(f) == "until:2026-11-30 date:indexed"
    assert parse_line(format_line(f)) == f


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("roadmap", "'roadmap' is not key:value"),
        ("colour:red", "unknown key 'colour'"),
        ("since:yesterday", "filter since: must be a date like 2026-11-01"),
        ("date:created", "filter date: must be one of modified, indexed"),
        ("tag:", "filter: tag: needs a value"),
        ('path:"open', "a quote is not closed"),
        ("since:2026-01-01 since:2026-02-01", "since: is given twice"),
    ],
)
def test_a_bad_line_is_one_line_naming_the_word(line, says):
    with pytest.raises(InvalidInputError) as caught:
        parse_line(line)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_completion_offers_keys_tags_folders_and_types():
    known = {"tags": ["q3", "quarterly", "roadmap"], "folders": ["work", "work/plans"], "types": ["md", "pdf"]}
    assert complete_line("ta", **known) == "tag:"
    assert complete_line("tag:q", **known) == "tag:q3"
    assert complete_line("tag:q3,ro", **known) == "tag:q3,roadmap"
    assert complete_line("type:md path:wo", **known) == "type:md path:work/**"
    assert complete_line("#ro", **known) == "#roadmap"
    assert complete_line("type:p", **known) == "type:pdf"
    assert complete_line("date:i", **known) == "date:indexed"
    assert complete_line("tag:zzz", **known) is None
    assert complete_line("tag:q3 ", **known) is None


def test_a_searchs_own_filters_lie_over_a_conversations_defaults():
    base = parse_line("path:work/** tag:q3 not:work/old/**")
    assert overlay(base, None) == base and overlay(None, base) == base
    both = overlay(base, parse_line("type:md tag:roadmap not:work/tmp/**"))
    assert both.path == ("work/**",) and both.types == ("md",)
    assert both.tags == ("q3", "roadmap") and both.exclude == ("work/old/**", "work/tmp/**")
    assert overlay(base, parse_line("path:home/**")).path == ("home/**",)


def test_a_library_caller_may_pass_a_filters_a_dict_or_a_line():
    f = Filters(tags=("q3",))
    assert as_filters(f) is f and as_filters({"tags": "q3"}) == f and as_filters("tag:q3") == f
    assert as_filters(None) == Filters()
    with pytest.raises(InvalidInputError, match="filters must be an object"):
        as_filters(3)  # type: ignore[arg-type]  # a wrong type on purpose: the check under test
