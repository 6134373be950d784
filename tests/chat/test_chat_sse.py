"""The streaming client on its own: SSE framing, tool-call fragments, tool rejection."""

import pytest

from kbdesk.providers.chat import ChatClient, Completion, ToolsRejectedError, says_tools_rejected
from kbdesk.providers.settings import ProviderSettings
from kbdesk.providers.sse import ToolCallAssembler


def assemble(*fragments):
    assembler = ToolCallAssembler()
    for fragment in fragments:
        assembler.add(fragment)
    return [(c.id, c.name, c.arguments) for c in assembler.calls()]


def test_fragments_join_by_index():
    assert assemble(
        {"index": 0, "id": "a", "type": "function", "function": {"name": "kb_search", "arguments": ""}},
        {"index": 1, "id": "b", "function": {"name": "note_search", "arguments": '{"q'}},
        {"index": 0, "function": {"arguments": '{"query": '}},
        {"index": 1, "function": {"arguments": 'uery": "x"}'}},
        {"index": 0, "function": {"arguments": '"y"}'}},
    ) == [("a", "kb_search", '{"query": "y"}'), ("b", "note_search", '{"query": "x"}')]


def test_server_quirks():
    # parallel calls all at index 0, told apart by a new id with a new name
    assert assemble(
        {"index": 0, "id": "a", "function": {"name": "kb_search", "arguments": "{}"}},
        {"index": 0, "id": "b", "function": {"name": "kb_search", "arguments": "{}"}},
    ) == [("a", "kb_search", "{}"), ("b", "kb_search", "{}")]
    # arguments as an object, the whole name repeated on every fragment, an id repeated
    assert assemble(
        {"index": 0, "id": "a", "function": {"name": "kb_search", "arguments": {"query": "z"}}},
        {"index": 0, "id": "a", "function": {"name": "kb_search"}},
    ) == [("a", "kb_search", '{"query": "z"}')]
    # no index at all, no id: one call; a missing id gets one
    assert assemble(
        {"function": {"name": "kb_", "arguments": "{"}}, {"function": {"name": "search", "arguments": "}"}}
    ) == [("call_0", "kb_search", "{}")]


@pytest.mark.parametrize(
    "message",
    [
        "registry.ollama.ai/library/tiny:latest does not support tools",
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        "tools param requires --jinja flag",
    ],
)
def test_tool_refusals_are_recognised(message):
    assert says_tools_rejected(message)


def test_other_errors_are_not_tool_refusals():
    assert not says_tools_rejected("model 'x' not found")
    assert not says_tools_rejected("Rate limit reached")


def test_sse_framing_comments_and_crlf(chat_server):
    chat_server.raw(
        [
            ": keep-alive",
            "event: message",
            'data: {"choices": [{"delta": {"content": "Hel"}}]}\r',
            "",
            'data:{"choices": [{"delta": {"content": "lo"}, "finish_reason": "stop"}]}',
            "data: [DONE]",
        ]
    )
    with ChatClient("local", ProviderSettings(base_url=chat_server.base_url, max_retries=0)) as client:
        items = list(client.stream([{"role": "user", "content": "hi"}], "tiny"))
    assert items[:-1] == ["Hel", "lo"]
    assert isinstance(items[-1], Completion) and items[-1].content == "Hello" and items[-1].finish_reason == "stop"
    assert chat_server.requests[-1].headers["accept"] == "text/event-stream"


def test_tool_rejection_is_its_own_error(chat_server):
    chat_server.rejects_tools = True
    with ChatClient("local", ProviderSettings(base_url=chat_server.base_url, max_retries=0)) as client:
        with pytest.raises(ToolsRejectedError, match="does not support tools"):
            list(client.stream([{"role": "user", "content": "hi"}], "tiny", tools=[{"type": "function"}]))
        last = list(client.stream([{"role": "user", "content": "hi"}], "tiny"))[-1]
        assert isinstance(last, Completion) and last.content == "ok"
