"""The retrieval policy: a question asked with KBs attached is answered from them (auto),
and the user always sees whether the KBs were searched."""

from __future__ import annotations

import pytest

from chat_support import add_doc, write_config
from kbdesk import open_desk
from kbdesk.chat import Retrieval, TextDelta, TurnFinished, Waiting

BACKUPS = "Backups run every night at two and are kept for thirty days."


def desk_with(server, retrieval: str | None, extra: str = ""):
    write_config(server, retrieval=retrieval, extra=extra)
    desk = open_desk(backend="numpy")
    desk.create_kb("Docs", keyword_only=True)
    add_doc(desk, "Docs", "backups.md", BACKUPS)
    return desk


def turn(desk, question: str, **kwargs):
    events = list(desk.chat().stream(None, question, **kwargs))
    answer = next(e.answer for e in events if isinstance(e, TurnFinished))
    said = [e for e in events if isinstance(e, Retrieval)]
    return events, answer, said


def test_auto_tells_the_model_to_search_first(chat_server):
    desk = desk_with(chat_server, None)  # kbdesk's default policy: auto
    chat_server.reply(tool_calls=[("kb_search", {"query": "backup schedule"})])
    chat_server.reply(text="They run nightly at two.")
    _events, answer, said = turn(desk, "When do backups run?")
    first = chat_server.chat_requests[0]
    assert first["tool_choice"] == {"type": "function", "function": {"name": "kb_search"}}
    assert chat_server.chat_requests[1]["tool_choice"] == "auto"  # the answer round is free: "auto", said
    assert answer.text == "They run nightly at two." and answer.retrieval == "tool"
    assert [s.how for s in said] == ["tool"] and "searched Docs" in said[0].text
    assert [s.source for s in answer.sources] == ["backups.md"]
    desk.close()


def test_auto_searches_itself_when_the_model_ignores_the_forced_tool(chat_server):
    desk = desk_with(chat_server, None)
    chat_server.reply(text="I think backups run weekly.")  # a small model: answers, never calls a tool
    chat_server.reply(text="Backups run nightly at two.")
    events, answer, said = turn(desk, "When do backups run?")
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "weekly" not in shown and answer.text == "Backups run nightly at two."  # the guess never reached the user
    second = chat_server.chat_requests[1]
    assert BACKUPS in second["messages"][0]["content"]  # asked again with the passages
    assert answer.retrieval == "auto" and said[0].how == "auto"
    # it remembers: the next turn searches first and asks once, without forcing
    chat_server.reply(text="Thirty days.")
    events, answer, said = turn(desk, "How long are backups kept?")
    assert len(chat_server.chat_requests) == 3 and chat_server.chat_requests[2]["tool_choice"] == "auto"
    assert BACKUPS in chat_server.chat_requests[2]["messages"][0]["content"]
    assert answer.retrieval == "auto"
    desk.close()


def test_tool_policy_says_when_the_model_did_not_search(chat_server):
    desk = desk_with(chat_server, "tool")
    chat_server.reply(text="From memory: weekly.")
    _events, answer, said = turn(desk, "When do backups run?")
    assert chat_server.chat_requests[0]["tool_choice"] == "auto" and chat_server.chat_requests[0]["tools"]
    assert answer.retrieval == "skipped" and said[0].text == "the model did not search Docs"
    desk.close()


def test_always_searches_before_every_answer_and_off_never(chat_server):
    desk = desk_with(chat_server, "always")
    chat_server.reply(text="Nightly.")
    _, answer, said = turn(desk, "When do backups run?")
    assert BACKUPS in chat_server.chat_requests[0]["messages"][0]["content"] and answer.retrieval == "auto"
    chat_server.reply(text="No idea.")
    _, answer, said = turn(desk, "When do backups run?", retrieval="off")  # this turn only
    request = chat_server.chat_requests[1]
    assert "tools" not in request and BACKUPS not in request["messages"][0].get("content", "")
    assert answer.retrieval == "off" and "retrieval is off" in said[0].text
    desk.close()


def test_a_conversation_and_a_persona_choose_their_policy(chat_server):
    desk = desk_with(chat_server, None)
    chat = desk.chat()
    chat.create_persona("Terse", "Be brief.", retrieval="off", max_tokens=64)
    conv = chat.new_conversation(persona="Terse")
    assert chat.retrieval_policy(conv.id) == "off"
    chat_server.reply(text="Hi.")
    chat.ask(conv.id, "hello")
    assert chat_server.chat_requests[0]["max_tokens"] <= 64 and "tools" not in chat_server.chat_requests[0]
    chat.set_retrieval(conv.id, "always")  # the conversation's own choice wins over the persona's
    assert chat.retrieval_policy(conv.id) == "always"
    with pytest.raises(Exception, match="retrieval must be one of"):
        chat.set_retrieval(conv.id, "sometimes")
    desk.close()


def test_a_kb_without_searchable_documents_is_not_offered(chat_server):
    write_config(chat_server, retrieval=None)
    desk = open_desk(backend="numpy")
    desk.create_kb("Empty", keyword_only=True)
    chat_server.reply(text="Hello!")
    _, answer, said = turn(desk, "hi")
    request = chat_server.chat_requests[0]
    assert "tools" not in request and "Empty" not in request["messages"][0].get("content", "")
    assert answer.retrieval == "none" and said[0].how == "none"
    desk.close()


def test_an_answer_cut_at_the_length_limit_says_so(chat_server):
    desk = desk_with(chat_server, "tool", extra="max_tokens = 200\n")
    chat_server.reply(text="Backups run every", finish="length")
    _events, answer, _ = turn(desk, "When do backups run?")
    assert chat_server.chat_requests[0]["max_tokens"] <= 200
    assert answer.cut and answer.finish_reason == "length"
    assert any("cut at the length limit" in n for n in answer.notices)
    assert answer.to_dict()["cut"] is True
    desk.close()


def test_the_turn_says_it_is_waiting_for_a_silent_model(chat_server):
    desk = desk_with(chat_server, "tool")
    chat_server.reply(text="Late but here.", delay=1.3, pieces=1)
    events, answer, _ = turn(desk, "hello")
    waits = [e for e in events if isinstance(e, Waiting)]
    assert waits and waits[0].seconds >= 1.0 and answer.text == "Late but here."
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert max(i for i, e in enumerate(events) if isinstance(e, Waiting)) < first_text
    desk.close()


def test_a_server_that_fails_on_a_forced_tool_choice_gets_the_passages_instead(chat_server):
    """llama-cpp-python answers tool_choice "required" with a bare HTTP 500: the turn does
    not fail; kbdesk searches, asks again without forcing, and does so from then on."""
    write_config(chat_server, retrieval=None)
    desk = open_desk(backend="numpy")
    desk.create_kb("Docs", keyword_only=True)
    add_doc(desk, "Docs", "backups.md", BACKUPS)
    chat_server.error(500, "")
    chat_server.reply(text="Nightly at two.")
    _, answer, _said = turn(desk, "When do backups run?")
    assert answer.status == "complete" and answer.text == "Nightly at two." and answer.retrieval == "auto"
    assert (
        chat_server.chat_requests[0]["tool_choice"] != "auto" and chat_server.chat_requests[1]["tool_choice"] == "auto"
    )
    assert BACKUPS in chat_server.chat_requests[1]["messages"][0]["content"]
    chat_server.reply(text="Thirty days.")
    turn(desk, "How long are they kept?")
    assert chat_server.chat_requests[2]["tool_choice"] == "auto"  # remembered
    desk.close()
