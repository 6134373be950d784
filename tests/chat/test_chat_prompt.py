"""The history sent to the model: whole exchanges only, notices never, newest first within a budget."""

from kbdesk.chat.prompt import history
from kbdesk.store.chat import ChatMessage, ToolCallRecord


def msg(role, content="", *, calls=(), call_id=None, status="complete"):
    return ChatMessage(
        "id", "c", role, content, call_id, status, None, [], "t", [ToolCallRecord(c, "kb_search", "{}") for c in calls]
    )


def test_failed_turns_notices_and_broken_tool_exchanges_are_left_out():
    saved = [
        msg("user", "first"),
        msg("assistant", "", calls=["a"]),
        msg("tool", "result", call_id="a"),
        msg("assistant", "answer one"),
        msg("user", "second"),
        msg("notice", "HTTP 500", status="error"),  # failed: no answer
        msg("user", "third"),
        msg("assistant", "", calls=["b", "c"]),
        msg("tool", "r", call_id="b"),
        msg("assistant", "partial", status="cancelled"),  # c never ran
    ]
    sent = history(saved)  # content is a string, never null: strict servers (llama-cpp-python) refuse null
    assert [(m["role"], m.get("content")) for m in sent] == [
        ("user", "first"),
        ("assistant", ""),
        ("tool", "result"),
        ("assistant", "answer one"),
        ("user", "third"),
        ("assistant", "partial"),
    ]
    assert sent[1]["tool_calls"][0]["id"] == "a" and sent[2]["tool_call_id"] == "a"
    # a model without tools gets the text only
    assert [m["role"] for m in history(saved, tools=False)] == ["user", "assistant", "user", "assistant"]


def test_budget_keeps_the_newest_exchanges():
    saved = []
    for i in range(10):
        saved += [msg("user", f"q{i} " + "x" * 100), msg("assistant", f"a{i} " + "y" * 100)]
    sent = history(saved, budget=500)
    assert [m["content"][:2] for m in sent] == ["q8", "a8", "q9", "a9"]
    assert [m["content"][:2] for m in history(saved, budget=10)] == ["q9", "a9"]
