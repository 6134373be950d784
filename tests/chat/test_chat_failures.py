"""Every failure becomes a clear message in the conversation: never a traceback, never a key."""

import logging
import socket

import pytest

from chat_support import write_config
from kbdesk import open_desk
from kbdesk.chat import Notice
from kbdesk.chat.events import ChatEvent

SECRET = "sk-very-secret-4242"


def ask(desk, question="Hello?"):
    events: list[ChatEvent] = []
    answer = desk.chat().ask(None, question, on_event=events.append)
    return answer, events


def saved(desk, answer):
    return [(m.role, m.status, m.content) for m in desk.chat().messages(answer.conversation_id)]


@pytest.mark.parametrize(
    "script, expected",
    [
        (lambda s: s.error(500, "The server had an error"), "HTTP 500: The server had an error"),
        (lambda s: s.error(404, "model 'tiny' not found"), "was not found (HTTP 404)"),
        (lambda s: s.error(400, "messages: field required"), "rejected the request (HTTP 400)"),
        (lambda s: s.raw(["data: {not json at all"]), "malformed answer stream: a data line is not JSON"),
        (lambda s: s.raw(['data: {"choices": [{"delta": {"content": "Hal"}}]}']), "the answer was interrupted"),
        (lambda s: s.raw(['data: {"error": {"message": "model overloaded"}}']), "mid-answer: model overloaded"),
        (lambda s: s.drop("Half an ans"), "connection dropped in the middle of the answer"),
    ],
)
def test_server_failures_are_messages(cdesk, chat_server, script, expected):
    script(chat_server)
    answer, events = ask(cdesk)
    assert answer.status == "error" and expected in answer.error, answer.error
    assert isinstance(events[-2], Notice) and events[-2].level == "error"
    rows = saved(cdesk, answer)
    assert rows[0][0] == "user" and rows[-1][:2] == ("notice", "error") and expected in rows[-1][2]
    assert "Traceback" not in answer.error


def test_partial_answer_is_kept_when_the_connection_drops(cdesk, chat_server):
    chat_server.drop("Half an ans")
    answer, _ = ask(cdesk)
    assert answer.text == "Half an ans"
    assert ("assistant", "error", "Half an ans") in saved(cdesk, answer)


def test_unreachable_server(kbdesk_home):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    write_config(type("S", (), {"base_url": f"http://127.0.0.1:{port}/v1"})())
    with open_desk(backend="numpy") as desk:
        answer, _ = ask(desk)
    assert answer.status == "error" and "could not connect to http://127.0.0.1" in answer.error


def test_rate_limit_is_retried_then_answered(chat_server, kbdesk_home):
    write_config(chat_server, max_retries=2)
    chat_server.error(429, "slow down", retry_after="0")
    chat_server.reply("Made it.")
    with open_desk(backend="numpy") as desk:
        answer, _ = ask(desk)
    assert answer.status == "complete" and answer.text == "Made it."
    assert len(chat_server.chat_requests) == 2


def test_a_server_that_ignores_stream_still_answers(cdesk, chat_server):
    chat_server.whole("All in one piece.")
    answer, _ = ask(cdesk)
    assert answer.status == "complete" and answer.text == "All in one piece."


def test_no_chat_model_is_a_notice_not_a_crash(kbdesk_home):
    with open_desk(backend="numpy") as desk:
        answer, _events = ask(desk)
        assert answer.status == "error" and "no chat model is set" in answer.error
        assert saved(desk, answer)[-1][0] == "notice"


def test_the_key_never_reaches_db_logs_errors_or_transcript(chat_server, kbdesk_home, monkeypatch, caplog):
    monkeypatch.setenv("CHAT_KEY", SECRET)
    write_config(chat_server, api_key_env="CHAT_KEY")
    caplog.set_level(logging.DEBUG)
    chat_server.error(401, f"Incorrect API key provided: {SECRET}")
    chat_server.raw([f'data: {{"error": {{"message": "key {SECRET} is over quota"}}}}'])
    chat_server.reply("fine")
    with open_desk(backend="numpy") as desk:
        first, _ = ask(desk)
        second, _ = ask(desk)
        third, _ = ask(desk)
        db_path = desk.db_path
        transcript = repr([desk.chat().messages(a.conversation_id) for a in (first, second, third)])
    assert chat_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"  # it was used...
    assert "refused the API key (HTTP 401)" in first.error and "CHAT_KEY" in first.error
    assert "over quota" in second.error and third.status == "complete"
    for text in (first.error, second.error, transcript, caplog.text):
        assert SECRET not in text  # ...and shown nowhere
    for path in db_path.parent.glob(db_path.name + "*"):
        assert SECRET.encode() not in path.read_bytes()
