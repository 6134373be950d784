"""Filters in the chat: a model narrows its own kb_search (the tool schema says how), a
malformed filter from a model is a tool result it can read (never a failed turn), and a
conversation or persona carries default filters that every search of its turns keeps to
— kbdesk's own search with the question too — shown in the retrieval line."""

from __future__ import annotations

import json
import re

import pytest

from kbdesk.chat.events import ChatEvent, Retrieval
from kbdesk.chat.tools import KB_SEARCH_TOOL
from kbdesk.errors import InvalidInputError
from kbdesk.filter_fields import FIELDS
from kbdesk.filters import DATE_FIELDS, Filters
from vault_support import MATCHING, vault_kb


def tool_payload(content: str) -> dict:
    match = re.search(r"(?m)^(`{3,})json[^\n]*\n(.*)\n\1\Z", content, re.S)
    assert match, content
    return json.loads(match.group(2))


def tool_results(chat_server) -> list[dict]:
    """The tool messages kbdesk sent back to the model, as JSON."""
    last = chat_server.chat_requests[-1]["messages"]
    return [
        tool_payload(m["content"]) if "```" in m["content"] else json.loads(m["content"])
        for m in last
        if m["role"] == "tool"
    ]


def test_the_tool_schema_tells_a_model_how_to_filter():
    spec = KB_SEARCH_TOOL["function"]["parameters"]["properties"]["filters"]
    assert spec["type"] == "object" and "Example" in spec["description"]
    assert set(spec["properties"]) == {f.key for f in FIELDS}
    assert tuple(spec["properties"]["date"]["enum"]) == DATE_FIELDS
    assert Filters.from_dict({"date": "document", "since": "2026-01-01"}).date_field == "document"


def test_a_model_narrows_its_own_search(any_cdesk, chat_server):
    vault_kb(any_cdesk)
    call = {"query": "roadmap", "max_results": 10, "filters": {"tags": "q3", "path": "work/**"}}
    chat_server.reply("", tool_calls=[("kb_search", call)])
    chat_server.reply("The roadmap says so [1].")
    answer = any_cdesk.chat().ask(None, "What does the roadmap say?")
    assert answer.status == "complete"
    (result,) = tool_results(chat_server)
    assert {r["source"] for r in result["results"]} == MATCHING
    assert result["filters"] == {"path": ["work/**"], "tags": ["q3"]}


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        ({"since": "last week"}, "'since' must be a date like 2026-11-01"),
        ({"folder": "work"}, "unknown field 'folder'"),
        ('{"tags": ', "filters is not valid JSON"),
        ([1, 2], "filters must be an object"),
        ({"path": "*?" * 30 + "Z"}, "'path' has a glob with 60 wildcards (at most 32)"),
        ({"exclude": "**/" * 500}, "'exclude' has a glob of 1500 characters (at most 256)"),
    ],
    ids=["date", "field", "json", "list", "wildcards", "long"],
)
def test_a_malformed_filter_is_a_tool_result_the_model_reads(cdesk, chat_server, filters, says):
    vault_kb(cdesk)
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap", "filters": filters})])
    chat_server.reply("Sorry, let me answer without it.")
    answer = cdesk.chat().ask(None, "What does the roadmap say?")
    assert answer.status == "complete"
    (result,) = tool_results(chat_server)
    assert says in result["error"] and "\n" not in result["error"]
    assert answer.tool_calls[0].ok is False and says in (answer.tool_calls[0].error or "")


def test_a_glob_that_would_freeze_a_regex_matcher_is_answered_at_once(cdesk, chat_server):
    from deadline_support import answers

    vault_kb(cdesk)
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap", "filters": {"path": "*?" * 14 + "Z"}})])
    chat_server.reply("Nothing there.")
    answer = answers(cdesk.chat().ask, None, "What does the roadmap say?")
    assert answer.status == "complete"
    (result,) = tool_results(chat_server)
    assert result["results"] == [] and result["filters"] == {"path": ["*?" * 14 + "Z"]}


def test_a_filter_line_from_a_small_model_is_read_too(cdesk, chat_server):
    vault_kb(cdesk)
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap", "filters": "tag:q3 path:work/**"})])
    chat_server.reply("Done.")
    cdesk.chat().ask(None, "roadmap?")
    (result,) = tool_results(chat_server)
    assert {r["source"] for r in result["results"]} == MATCHING


def test_a_conversations_filters_hold_for_kbdesks_own_search_and_the_models(any_cdesk, chat_server):
    vault_kb(any_cdesk)
    chat = any_cdesk.chat()
    conv = chat.new_conversation()
    chat.set_filters(conv.id, "path:work/** tag:q3")
    assert chat.conversation(conv.id).filters == {"path": ["work/**"], "tags": ["q3"]}
    assert chat.context(conv.id).filters == Filters(path=("work/**",), tags=("q3",))

    # kbdesk searches first (always): with the question, inside the conversation's filters
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap", "max_results": 10})])
    chat_server.reply("From the work notes [1].")
    events: list[ChatEvent] = []
    answer = chat.ask(conv.id, "What does the roadmap say?", retrieval="always", on_event=events.append)
    assert answer.status == "complete"
    assert {s.source for s in answer.sources} == MATCHING
    (result,) = tool_results(chat_server)  # the model's own call keeps to them too
    assert {r["source"] for r in result["results"]} == MATCHING
    line = next(e for e in events if isinstance(e, Retrieval)).text
    assert "within path work/** · tags q3" in line

    # a model's filter lies over the defaults: its tags add up
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap", "filters": {"tags": "draft"}})])
    chat_server.reply("Only the draft.")
    chat.ask(conv.id, "And the draft?")
    assert {r["source"] for r in tool_results(chat_server)[-1]["results"]} == {"work/plans/roadmap-draft.md"}

    chat.set_filters(conv.id, None)
    assert chat.conversation(conv.id).filters is None and not chat.filters(conv.id)


def test_a_personas_filters_apply_to_its_conversations(any_cdesk, chat_server):
    vault_kb(any_cdesk)
    chat = any_cdesk.chat()
    persona = chat.create_persona("Planner", "Plan.", filters={"tags": ["q3"], "path": "home/**"})
    assert persona.filters == {"path": ["home/**"], "tags": ["q3"]}
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap"})])
    chat_server.reply("At home [1].")
    answer = chat.ask(None, "roadmap?", persona="Planner")
    assert {s.source for s in answer.sources} == {"home/roadmap.md"}
    assert chat.filters(answer.conversation_id) == Filters(path=("home/**",), tags=("q3",))
    # the conversation's own filters win over the persona's
    chat.set_filters(answer.conversation_id, {"type": "pdf"})
    assert chat.filters(answer.conversation_id) == Filters(types=("pdf",))
    assert chat.edit_persona("Planner", filters=None).filters is None


def test_bad_default_filters_are_refused_naming_the_field(cdesk):
    chat = cdesk.chat()
    conv = chat.new_conversation()
    with pytest.raises(InvalidInputError, match="filter since: must be a date"):
        chat.set_filters(conv.id, "since:someday")
    with pytest.raises(InvalidInputError, match="'until' must be a date"):
        chat.create_persona("X", filters={"until": "soon"})


def test_under_auto_a_bad_filter_still_brings_the_questions_passages_and_says_why(cdesk, chat_server):
    vault_kb(cdesk)
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap", "filters": {"since": "soon"}})])
    chat_server.reply("From what was found [1].")
    answer = cdesk.chat().ask(None, "What does the roadmap say?", retrieval="auto")
    assert answer.status == "complete" and answer.sources  # kbdesk's own search with the question
    (result,) = tool_results(chat_server)
    assert "'since' must be a date" in result["filters_error"] and result["results"]
