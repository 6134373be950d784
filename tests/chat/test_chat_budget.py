"""The context budget: a long conversation is trimmed to the model's window (oldest
questions first, the user told), an overflow the server reports is retried without the
history, and the answer keeps room."""

from __future__ import annotations

from typing import Any

from chat_support import write_config
from kbdesk import open_desk
from kbdesk.chat import TurnFinished
from kbdesk.chat.budget import MIN_ANSWER, fit, message_tokens
from kbdesk.store.chat import ChatMessage

OVERFLOW = "This model's maximum context length is 2048 tokens. However, your messages resulted in 5000 tokens."


def ask(desk, conv, question):
    events = list(desk.chat().stream(conv, question))
    return next(e.answer for e in events if isinstance(e, TurnFinished))


def test_a_long_conversation_is_trimmed_to_the_window(chat_server):
    write_config(chat_server, extra="context_window = 1500\nmax_tokens = 300\n")
    desk = open_desk(backend="numpy")
    chat = desk.chat()
    conv = chat.new_conversation()
    for i in range(8):  # each exchange ~1,000 characters: the window holds only the newest few
        chat_server.reply(text=f"answer {i} " + "word " * 180)
        ask(desk, conv.id, f"question {i} " + "filler " * 20)
    chat_server.reply(text="The last answer.")
    answer = ask(desk, conv.id, "And now?")
    sent = chat_server.chat_requests[-1]
    questions = [m["content"] for m in sent["messages"] if m["role"] == "user"]
    assert questions[-1] == "And now?" and not any(q.startswith("question 0") for q in questions)
    assert answer.trimmed >= 4 and any("left out to fit the model's context" in n for n in answer.notices)
    assert message_tokens(sent["messages"]) + sent["max_tokens"] <= 1500
    assert sent["max_tokens"] >= MIN_ANSWER
    desk.close()


def test_an_overflow_the_server_reports_is_retried_without_the_history(chat_server):
    write_config(chat_server)
    desk = open_desk(backend="numpy")
    chat = desk.chat()
    conv = chat.new_conversation()
    chat_server.reply(text="first answer")
    ask(desk, conv.id, "first question")
    chat_server.error(400, OVERFLOW)
    chat_server.reply(text="Fits now.")
    answer = ask(desk, conv.id, "second question")
    retry = chat_server.chat_requests[-1]
    assert [m["content"] for m in retry["messages"] if m["role"] == "user"] == ["second question"]
    assert answer.status == "complete" and answer.text == "Fits now."
    assert any("did not fit the model's context" in n for n in answer.notices)
    chat_server.error(400, OVERFLOW)  # nothing left to drop: said as an overflow, in one line
    chat_server.error(400, OVERFLOW)
    conv2 = chat.new_conversation()
    answer = ask(desk, conv2.id, "a question")
    assert answer.status == "error" and "context" in answer.error and "\n" not in answer.error
    desk.close()


def _msg(role, content, n):
    return ChatMessage(f"m{n}", "c", role, content, None, "complete", None, [], f"2026-01-01T00:00:{n:02d}Z")


def test_tool_results_are_shortened_before_the_history_goes():
    previous = [_msg("user", "old question", 1), _msg("assistant", "old answer", 2)]
    exchange: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "kb_search", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "passage " * 2000},
    ]
    fitted = fit("system", previous, "new question", exchange, None, window=2000, max_tokens=256)
    tool = next(m for m in fitted.messages if m["role"] == "tool")
    assert tool["content"].endswith("[shortened to fit the model's context]") and fitted.shortened == 1
    assert [m["content"] for m in fitted.messages if m["role"] == "user"] == ["old question", "new question"]
    assert fitted.prompt_tokens + fitted.max_tokens <= 2000
