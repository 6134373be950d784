"""What the chat client sends, judged the way real servers judge it (strict_servers.py).

Each strict flavour of the scripted server refuses what that server refuses, with that
server's status and words; the client's requests must pass all of them.
"""

from __future__ import annotations

import json

import httpx
import pytest

from kbdesk.providers.chat import ChatClient, Completion, ProviderRequestError, ToolsRejectedError
from kbdesk.providers.chat_wire import chat_payload
from kbdesk.providers.settings import ProviderSettings
from kbdesk.providers.sse import ToolCall

FLAVOURS = ["llama-cpp-python", "llama.cpp", "openai", "vllm"]
KB_SEARCH = {
    "type": "function",
    "function": {
        "name": "kb_search",
        "description": "Search the KBs",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}


def client(server, **settings):
    return ChatClient("local", ProviderSettings(base_url=server.base_url, max_retries=3, retry_budget=10, **settings))


def answer(server, messages, **options):
    with client(server) as chat:
        items = list(chat.stream(messages, "tiny", **options))
    assert isinstance(items[-1], Completion)
    return items[-1]


def round_two(content=None, **call):
    """A second round as an engine builds it: the assistant's tool call (content None, as
    a model that only calls a tool produces it) and the tool's result."""
    wire_call = {
        "id": "call__0_kb_search_cmpl-7f3a",
        "type": "function",
        "function": {"name": "kb_search", "arguments": '{"query": "backups"}'},
        **call,
    }
    return [
        {"role": "system", "content": "Answer from the knowledge bases."},
        {"role": "user", "content": "When do backups run?"},
        {"role": "assistant", "content": content, "tool_calls": [wire_call]},
        {"role": "tool", "tool_call_id": wire_call.get("id"), "content": "Backups run nightly at 02:00 — “ok”."},
    ]


def test_llama_cpp_python_really_refuses_a_null_content():
    """The rule the issue was about, checked on the scripted server itself: the exact
    request kbdesk used to send is refused with HTTP 500 and pydantic's words."""
    from fake_chat import FakeChat

    with FakeChat() as server:
        server.strict = "llama-cpp-python"
        body = {"model": "tiny", "stream": True, "messages": round_two(None)}
        response = httpx.post(server.base_url + "/chat/completions", json=body)
    assert response.status_code == 500 and "Input should be a valid string" in response.json()["error"]["message"]
    assert "'content'" in response.json()["error"]["message"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_tool_round_trip_passes_every_strict_server(chat_server, flavour):
    chat_server.strict = flavour
    chat_server.reply("Backups run nightly.")
    completion = answer(chat_server, round_two(None), tools=[KB_SEARCH])
    assert completion.content == "Backups run nightly." and completion.finish == "stop"
    sent = chat_server.chat_requests[-1]["messages"]
    assert sent[2]["content"] == "" and sent[3]["content"].endswith("“ok”.")
    # the id is echoed exactly as the server gave it, in the call and in the result
    assert sent[2]["tool_calls"] == [
        {
            "id": "call__0_kb_search_cmpl-7f3a",
            "type": "function",
            "function": {"name": "kb_search", "arguments": '{"query": "backups"}'},
        }
    ]
    assert sent[3]["tool_call_id"] == "call__0_kb_search_cmpl-7f3a"
    assert len(chat_server.chat_requests) == 1


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_messages_a_server_would_refuse_are_mended_before_they_are_sent(chat_server, flavour):
    chat_server.strict = flavour
    messages = round_two(None, function={"name": "kb_search", "arguments": '{"query": "back'})  # malformed
    del messages[2]["content"]  # no content key at all
    messages[3]["name"] = None  # a null llama.cpp would read into a string
    messages.append({"role": "assistant", "content": None, "tool_calls": []})  # an empty list: OpenAI refuses
    messages.append({"role": "user", "content": [{"type": "text", "text": "And "}, {"type": "text", "text": "why?"}]})
    completion = answer(chat_server, messages, tools=[{"type": "function", "function": {"name": "kb_search"}}])
    assert completion.content == "ok"
    sent = chat_server.chat_requests[-1]
    assert sent["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert "name" not in sent["messages"][3] and "tool_calls" not in sent["messages"][4]
    assert all(isinstance(m["content"], str) for m in sent["messages"])
    assert sent["messages"][5]["content"] == "And why?"
    assert sent["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {}}


def test_tool_calls_given_as_objects_or_with_dict_arguments_become_json_text(chat_server):
    chat_server.strict = "llama.cpp"
    messages = round_two(None)
    messages[2]["tool_calls"] = [
        ToolCall("c1", "kb_search", '{"query": "x"}'),
        {"id": "c2", "function": {"name": "kb_search", "arguments": {"query": "é"}}},
    ]
    answer(chat_server, messages)
    calls = chat_server.chat_requests[-1]["messages"][2]["tool_calls"]
    assert [c["type"] for c in calls] == ["function", "function"]
    assert calls[0]["function"]["arguments"] == '{"query": "x"}'
    assert json.loads(calls[1]["function"]["arguments"]) == {"query": "é"}


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        (None, "auto"),
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("kb_search", {"type": "function", "function": {"name": "kb_search"}}),
    ],
)
def test_tool_choice_is_always_sent_with_tools(chat_server, choice, sent):
    """llama-cpp-python reads a missing tool_choice as "none" and never shows the model the
    tools: "auto" is said, never left to the server."""
    chat_server.strict = "llama-cpp-python"
    answer(chat_server, [{"role": "user", "content": "hi"}], tools=[KB_SEARCH], tool_choice=choice)
    assert chat_server.chat_requests[-1].get("tool_choice") == sent


def test_vllm_without_auto_tool_choice_refuses_tools_and_says_so(chat_server):
    """vLLM started without --enable-auto-tool-choice refuses offered tools whether
    tool_choice is "auto" or missing (it reads missing as "auto"): a ToolsRejectedError the
    turn answers without tools."""
    chat_server.strict = "vllm-plain"
    with pytest.raises(ToolsRejectedError, match="enable-auto-tool-choice"):
        answer(chat_server, [{"role": "user", "content": "hi"}], tools=[KB_SEARCH])
    assert chat_server.chat_requests[-1]["tool_choice"] == "auto"


def test_tool_choice_without_tools_is_not_sent(chat_server):
    chat_server.strict = "openai"
    answer(chat_server, [{"role": "user", "content": "hi"}], tool_choice="required")
    assert "tool_choice" not in chat_server.chat_requests[-1] and "tools" not in chat_server.chat_requests[-1]


def test_max_tokens_is_sent_and_a_cut_answer_says_length(chat_server):
    chat_server.strict = "llama-cpp-python"
    chat_server.reply("Backups run nightly at", finish="length")
    completion = answer(chat_server, [{"role": "user", "content": "hi"}], max_tokens=5)
    assert chat_server.chat_requests[-1]["max_tokens"] == 5
    assert completion.finish == completion.finish_reason == "length" and completion.content == "Backups run nightly at"
    answer(chat_server, [{"role": "user", "content": "hi"}])
    assert "max_tokens" not in chat_server.chat_requests[-1]
    with pytest.raises(ValueError, match="max_tokens"):
        answer(chat_server, [{"role": "user", "content": "hi"}], max_tokens=0)


def test_openai_itself_gets_max_completion_tokens():
    body = chat_payload(
        [{"role": "user", "content": "hi"}],
        "gpt-4o-mini",
        kind="openai",
        base_url="https://api.openai.com/v1",
        max_tokens=300,
    )
    assert body["max_completion_tokens"] == 300 and "max_tokens" not in body
    body = chat_payload(
        [{"role": "user", "content": "hi"}], "m", kind="openai", base_url="http://127.0.0.1:9/v1", max_tokens=300
    )
    assert body["max_tokens"] == 300


@pytest.mark.parametrize(
    ("kind", "asks_usage"),
    [("ollama", True), ("vllm", True), ("lmstudio", False), ("llamacpp", False), ("custom", False)],
)
def test_stream_options_only_where_documented(chat_server, kind, asks_usage):
    with ChatClient("local", ProviderSettings(kind=kind, base_url=chat_server.base_url)) as chat:
        list(chat.stream([{"role": "user", "content": "hi"}], "tiny"))
    assert ("stream_options" in chat_server.chat_requests[-1]) is asks_usage


def test_a_validation_error_is_one_line_and_never_sent_again(chat_server):
    chat_server.error(
        500,
        "1 validation error:\n  {'type': 'string_type', 'loc': ('body', 'messages', 2, "
        "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid "
        "string', 'input': None}\n",
    )
    with client(chat_server) as chat, pytest.raises(ProviderRequestError) as caught:
        list(chat.stream(round_two(""), "tiny", tools=[KB_SEARCH]))
    message = str(caught.value)
    assert not isinstance(caught.value, ToolsRejectedError)  # the tools are fine: retrying without them won't help
    assert "\n" not in message and "provider 'local', model 'tiny'" in message and "HTTP 500" in message
    assert "Input should be a valid string" in message and len(chat_server.chat_requests) == 1


def test_a_refused_tool_choice_says_so(chat_server):
    chat_server.error(400, "tool_choice 'required' is not supported by this model")
    with client(chat_server) as chat, pytest.raises(ToolsRejectedError) as caught:
        list(chat.stream([{"role": "user", "content": "hi"}], "tiny", tools=[KB_SEARCH], tool_choice="required"))
    assert caught.value.choice
    chat_server.rejects_tools = True
    with client(chat_server) as chat, pytest.raises(ToolsRejectedError) as caught:
        list(chat.stream([{"role": "user", "content": "hi"}], "tiny", tools=[KB_SEARCH]))
    assert not caught.value.choice
