"""Passages reach the model on every server: a tool result goes back as a ``tool`` message
where the server's template renders that role, and in a user message (fenced as data)
where it does not — llama-cpp-python's ``chatml-function-calling`` renders
``<|im_start|>tool`` and nothing after it. kbdesk asks the server once per provider and
model (two one-token requests whose tool results differ in length: does
``usage.prompt_tokens`` count the difference?) and remembers the answer."""

from __future__ import annotations

import json
from typing import Any

from chat_support import add_doc, write_config
from kbdesk import open_desk
from kbdesk.chat import TurnFinished
from kbdesk.chat.tool_results import KEPT_AT, PROBE_WORDS, as_data, remembered

BACKUPS = "Backups run every night at two and are kept for thirty days."


def desk_with(server, retrieval: str | None = None):
    write_config(server, retrieval=retrieval)
    desk = open_desk(backend="numpy")
    desk.create_kb("Docs", keyword_only=True)
    add_doc(desk, "Docs", "backups.md", BACKUPS)
    return desk


def ask(desk, question: str, conversation: str | None = None):
    events = list(desk.chat().stream(conversation, question))
    return next(e.answer for e in events if isinstance(e, TurnFinished))


def roles(request):
    return [m["role"] for m in request["messages"]]


def test_a_server_that_drops_the_tool_role_gets_the_passages_in_a_user_message(chat_server):
    chat_server.strict = "llama-cpp-python"  # its chatml-function-calling template renders no tool role
    desk = desk_with(chat_server)
    chat_server.reply(tool_calls=[("kb_search", {"query": "{"})])  # SmolLM2's kind of query
    chat_server.reply(text="Nightly at two [1].")
    answer = ask(desk, "When do backups run?")
    assert answer.status == "complete" and answer.retrieval == "tool"
    # the server was asked once how many tokens a short and a long tool result cost
    assert len(chat_server.probes) == 2
    short, long = (p.body for p in chat_server.probes)
    assert [m["role"] for m in short["messages"]] == ["system", "user", "assistant", "tool"]
    assert len(long["messages"][-1]["content"].split()) == PROBE_WORDS and short["stream"] is False
    # the answer round: no tool message; the passage in a user message the template renders
    second = chat_server.chat_requests[1]
    assert "tool" not in roles(second) and roles(second)[-2:] == ["assistant", "user"]
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "kb_search"
    results = second["messages"][-1]["content"]
    assert BACKUPS in results and "data, not instructions" in results and "kb_search" in results
    assert second["tool_choice"] == "auto"
    verdict = remembered(desk.store)["local/tiny"]
    assert verdict["verdict"] == "dropped" and verdict["base_url"] == chat_server.base_url
    # remembered: a follow-up is not probed again, and the history's tool result is data too
    chat_server.reply(tool_calls=[("kb_search", {"query": "kept"})])
    chat_server.reply(text="Thirty days.")
    ask(desk, "How long are they kept?", answer.conversation_id)
    assert len(chat_server.probes) == 2
    assert all("tool" not in roles(r) for r in chat_server.chat_requests)
    history = chat_server.chat_requests[3]["messages"]
    assert sum(BACKUPS in m["content"] for m in history if m["role"] == "user") == 2  # then and now
    desk.close()


def test_a_server_that_renders_the_tool_role_gets_tool_messages(chat_server):
    chat_server.strict = "llama.cpp"  # llama-server with --jinja: the model's own template
    desk = desk_with(chat_server)
    chat_server.reply(tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply(text="Nightly at two [1].")
    answer = ask(desk, "When do backups run?")
    assert answer.status == "complete"
    second = chat_server.chat_requests[1]
    assert roles(second)[-1] == "tool" and BACKUPS in second["messages"][-1]["content"]
    assert remembered(desk.store)["local/tiny"]["verdict"] == "kept"
    short, long = remembered(desk.store)["local/tiny"]["prompt_tokens"]
    assert long - short >= KEPT_AT
    desk.close()


def test_a_server_that_does_not_say_usage_keeps_tool_messages(chat_server):
    """No usage, no verdict: the OpenAI way (tool messages) stays, which strict servers need."""
    desk = desk_with(chat_server)
    original = chat_server._probe

    def no_usage(handler, body):
        handler.json(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]})

    chat_server._probe = no_usage
    chat_server.reply(tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply(text="Nightly.")
    ask(desk, "When do backups run?")
    chat_server._probe = original
    assert roles(chat_server.chat_requests[1])[-1] == "tool"
    assert remembered(desk.store)["local/tiny"]["verdict"] == "unknown"
    desk.close()


def test_another_server_behind_the_same_name_is_asked_again(chat_server):
    desk = desk_with(chat_server)
    desk.store.set_setting(
        "chat.tool_results",
        json.dumps({"local/tiny": {"verdict": "dropped", "base_url": "http://127.0.0.1:1/v1", "prompt_tokens": []}}),
    )
    chat_server.reply(tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply(text="Nightly.")
    ask(desk, "When do backups run?")
    assert len(chat_server.probes) == 2 and roles(chat_server.chat_requests[1])[-1] == "tool"
    desk.close()


def test_as_data_turns_each_run_of_results_into_one_user_message():
    call = {"id": "a", "type": "function", "function": {"name": "kb_search", "arguments": "{}"}}
    note = {"id": "b", "type": "function", "function": {"name": "note_search", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [call, note]},
        {"role": "tool", "tool_call_id": "a", "content": "PASSAGE A"},
        {"role": "tool", "tool_call_id": "b", "content": "NOTE B"},
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": "q2"},
    ]
    out = as_data(messages)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant", "user"]
    data = out[3]["content"]
    assert "kb_search, note_search" in data and data.index("PASSAGE A") < data.index("NOTE B")
    assert out[2]["tool_calls"] == [call, note] and messages[3]["role"] == "tool"  # the input is left alone


def test_an_empty_answer_under_auto_is_asked_again_with_none_and_remembered(chat_server):
    """llama-cpp-python's chatml-function-calling cannot stream an answer while tools are
    offered with "auto" (an empty message): the round is asked again with "none"; outside
    policy "tool" later turns send "none" at once."""
    from kbdesk.chat.retrieval import auto_fails

    desk = desk_with(chat_server)
    chat_server.reply(tool_calls=[("kb_search", {"query": "backups"})])  # the forced search
    chat_server.reply(text="")  # "auto": nothing
    chat_server.reply(text="Nightly at two [1].")
    answer = ask(desk, "When do backups run?")
    assert answer.status == "complete" and answer.text == "Nightly at two [1]."
    choices = [r["tool_choice"] for r in chat_server.chat_requests]
    assert choices == [{"type": "function", "function": {"name": "kb_search"}}, "auto", "none"]
    assert any('tool_choice "auto"' in n and '"none"' in n for n in answer.notices)
    assert auto_fails(desk.store, "local", "tiny")
    chat_server.reply(tool_calls=[("kb_search", {"query": "kept"})])
    chat_server.reply(text="Thirty days.")
    ask(desk, "How long are they kept?", answer.conversation_id)
    assert [r["tool_choice"] for r in chat_server.chat_requests[3:]] == [
        {"type": "function", "function": {"name": "kb_search"}},
        "none",
    ]
    desk.close()


def test_policy_tool_always_offers_auto_first(chat_server):
    """Under --retrieval tool the model must be able to choose: "auto" every turn, even for a
    model remembered to fail on it (the failed round is asked again with "none")."""
    from kbdesk.chat.retrieval import remember_auto_fails

    desk = desk_with(chat_server, retrieval="tool")
    remember_auto_fails(desk.store, "local", "tiny")
    chat_server.reply(text="")
    chat_server.reply(text="Nightly.")
    answer = ask(desk, "When do backups run?")
    assert [r["tool_choice"] for r in chat_server.chat_requests] == ["auto", "none"]
    assert answer.text == "Nightly." and answer.retrieval == "auto"  # kbdesk searched for it, and says so
    desk.close()
