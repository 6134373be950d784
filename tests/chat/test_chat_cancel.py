"""Stop works at any moment, and a silent model is waited for (and said so), never asked twice.

Real servers on loopback: the scripted one (a model that takes its time, a stream that
stalls) and a bare socket that accepts connections and never reads them. A stop comes
from another thread, as it does from the TUI or Ctrl-C. Times are only bounded from above
(generously): the point is that a stop does not wait for the server's 30 s of silence.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kbdesk.providers.chat import CancelToken, ChatCancelled, ChatClient, Completion, ProviderUnavailableError
from kbdesk.providers.settings import ProviderSettings

HI = [{"role": "user", "content": "hi"}]
STALL = 30.0  # how long the servers below stay silent if nobody stops them


def client(base_url: str) -> ChatClient:
    return ChatClient("local", ProviderSettings(base_url=base_url, max_retries=2, timeout=5.0))


def stop_after(token: CancelToken, seconds: float) -> dict[str, float]:
    """Cancel ``token`` from another thread after ``seconds``; returns when it did."""
    when: dict[str, float] = {}

    def stop() -> None:
        time.sleep(seconds)
        when["cancelled"] = time.monotonic()
        token.cancel()

    threading.Thread(target=stop, daemon=True).start()
    return when


def run_until_stopped(chat: ChatClient, token: CancelToken, **options) -> tuple[list, float]:
    """Stream until ChatCancelled; the pieces received and the seconds from cancel to raise."""
    when = stop_after(token, 0.4)
    received: list = []
    with pytest.raises(ChatCancelled):
        for item in chat.stream(HI, "tiny", cancel=token, **options):
            received.append(item)
    return received, time.monotonic() - when["cancelled"]


@pytest.fixture
def mute_listener():
    """A TCP listener that completes connections (the kernel's backlog) and never reads."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_stop_before_anything_is_sent(chat_server):
    token = CancelToken()
    token.cancel()
    with client(chat_server.base_url) as chat, pytest.raises(ChatCancelled):
        list(chat.stream(HI, "tiny", cancel=token))
    assert chat_server.chat_requests == []


def test_stop_while_a_server_that_accepted_never_reads(mute_listener):
    with client(mute_listener) as chat:
        received, took = run_until_stopped(chat, CancelToken())
    assert received == [] and took < 2.0, took


@pytest.mark.parametrize("script", ["hang", "headers_then_hang"])
def test_stop_while_the_server_is_silent(chat_server, script):
    getattr(chat_server, script)(STALL)
    with client(chat_server.base_url) as chat:
        received, took = run_until_stopped(chat, CancelToken())
    assert received == [] and took < 2.0, took
    # the connection is shut: the server sees the client leave (and can stop generating)
    assert chat_server.left.wait(2.0)
    assert len(chat_server.chat_requests) == 1


def test_stop_in_the_middle_of_an_answer(chat_server):
    chat_server.slow(" ".join(f"w{i}" for i in range(300)), delay=0.1)  # thirty seconds of answer
    with client(chat_server.base_url) as chat:
        received, took = run_until_stopped(chat, CancelToken())
    assert 0 < len(received) < 300 and all(isinstance(piece, str) for piece in received)
    assert took < 2.0, took


def test_a_silent_model_is_waited_for_and_said_so_then_given_up_once(chat_server):
    chat_server.hang(STALL)
    waits: list[tuple[float, int]] = []
    started = time.monotonic()
    with client(chat_server.base_url) as chat, pytest.raises(ProviderUnavailableError) as caught:
        list(chat.stream(HI, "tiny", on_wait=lambda s: waits.append((s, threading.get_ident())), wait_limit=2.5))
    took = time.monotonic() - started
    assert [round(s) for s, _ in waits] == [1, 2]  # about once a second...
    assert {ident for _, ident in waits} == {threading.get_ident()}  # ...from the thread running the stream
    message = str(caught.value)
    assert "provider 'local', model 'tiny'" in message and "no answer within 2.5 s" in message and "\n" not in message
    assert 2.4 < took < STALL / 2
    assert len(chat_server.chat_requests) == 1  # a generation is never asked for twice


def test_a_stall_in_the_middle_is_waited_for_then_reported(chat_server):
    chat_server.slow("first second", delay=STALL / 3)  # the first word, then a long silence
    waits: list[float] = []
    items: list = []
    with client(chat_server.base_url) as chat, pytest.raises(ProviderUnavailableError) as caught:
        for item in chat.stream(HI, "tiny", on_wait=waits.append, wait_limit=1.5):
            items.append(item)
    assert "the answer stopped arriving (nothing for 1.5 s" in str(caught.value)
    assert waits and len(chat_server.chat_requests) == 1


def test_headers_and_then_silence_is_a_model_that_did_not_start(chat_server):
    chat_server.headers_then_hang(STALL)
    with client(chat_server.base_url) as chat, pytest.raises(ProviderUnavailableError) as caught:
        list(chat.stream(HI, "tiny", wait_limit=1.2))
    assert "the model did not start answering (nothing for 1.2 s" in str(caught.value)
    assert len(chat_server.chat_requests) == 1


def test_waiting_resets_when_the_model_speaks(chat_server):
    chat_server.slow("one two three four", delay=0.8)  # never 1.5 s of silence in a row
    with client(chat_server.base_url) as chat:
        items = list(chat.stream(HI, "tiny", wait_limit=1.5))
    last = items[-1]
    assert isinstance(last, Completion) and last.content == "one two three four"
