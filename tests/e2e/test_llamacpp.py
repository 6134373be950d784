"""kbdesk's chat against a real llama-cpp-python server (see conftest.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from e2e_support import e2e_cli

pytestmark = pytest.mark.e2e
CONVERSATIONS = json.loads((Path(__file__).resolve().parent / "conversations.json").read_text())["conversations"]


def test_four_two_turn_conversations_about_the_sample_cite_their_documents(e2e_home, recorder):
    """A question, then a follow-up in the same conversation, four times: at least 7 of the
    8 turns list the document that holds the answer among their sources (whatever query
    SmolLM2 writes for kb_search, kbdesk searches with the question too)."""
    cited, report = 0, []
    for n, conversation in enumerate(CONVERSATIONS, start=1):
        conv_id = None
        for t, turn in enumerate(conversation["turns"], start=1):
            recorder.label = f"conversation-{n}-turn-{t}"
            args = ["ask", turn["q"], "--json"] + (["-c", conv_id] if conv_id else [])
            answer = json.loads(e2e_cli(*args).stdout)
            recorder.label = None
            conv_id = answer["conversation_id"]
            sources = [s["source"] for s in answer["sources"]]
            hit = turn["doc"] in sources
            cited += hit
            queries = [c["arguments"] for c in answer["tool_calls"]]
            report.append(f"{turn['q']!r}: {answer['status']}, {answer['retrieval']}, model query {queries}, {hit}")
            assert answer["status"] == "complete", answer["error"]
            assert answer["retrieval"] in ("tool", "auto") and answer["sources"]
    print("\n".join(report))
    assert cited >= 7, report


def test_the_server_registered_as_the_wrong_kind_still_answers_from_the_kb(e2e_home, recorder):
    """llama-cpp-python registered as kind llamacpp (that kind is llama.cpp's llama-server):
    the forced "required" tool choice makes it answer an empty 200. kbdesk asks again
    without forcing, with the passages, and remembers it; the answer cites the KB."""
    config = e2e_home / "config" / "config.toml"
    config.write_text(config.read_text().replace('kind = "custom"', 'kind = "llamacpp"'))
    recorder.label = "wrong-kind"
    answer = json.loads(e2e_cli("ask", "How do I restore a backup?", "--json").stdout)
    recorder.label = None
    assert answer["status"] == "complete", answer["error"]
    assert "getting-started.md" in [s["source"] for s in answer["sources"]]
    assert not any("too long" in n for n in answer["notices"])
    forced = next(e for e in recorder.exchanges if e["label"] == "wrong-kind" and e["path"].endswith("/completions"))
    assert forced["request"]["tool_choice"] == "required" and forced["status"] == 200
    tested = e2e_cli("provider", "test", "llama")
    assert "llama-cpp-python" in tested.stdout + tested.stderr


def test_a_question_about_the_sample_kb_and_its_follow_up(e2e_home, recorder):
    recorder.label = "ask"
    first = json.loads(e2e_cli("ask", "How do I restore a backup?", "--json").stdout)
    assert first["status"] == "complete" and first["answer"].strip()
    assert first["sources"] and first["retrieval"] in ("tool", "auto")
    assert {s["kb"] for s in first["sources"]} == {"demo"}
    # the forced kb_search round trip: the call came back as a real tool call and its result went back
    chat = recorder.chat()
    assert chat[0]["request"]["tool_choice"] == {"type": "function", "function": {"name": "kb_search"}}
    if first["retrieval"] == "tool":
        sent_back = chat[1]["request"]["messages"]
        call = next(m for m in sent_back if m["role"] == "assistant" and m.get("tool_calls"))
        assert isinstance(call["content"], str)  # never null: this server refuses null
        result = next(m for m in sent_back if m["role"] == "tool")
        assert result["tool_call_id"] == call["tool_calls"][0]["id"]
    recorder.label = "follow-up"
    second = json.loads(
        e2e_cli("ask", "-c", first["conversation_id"], "And how often do backups run?", "--json").stdout
    )
    assert second["status"] == "complete" and second["answer"].strip()
    assert second["conversation_id"] == first["conversation_id"]
    recorder.label = None


def test_stop_before_the_first_byte(e2e_home, recorder):
    """The server reads a long prompt one token at a time (--n_batch 1): stopped meanwhile,
    the turn ends at once and the server sees the client leave."""
    from kbdesk import open_desk
    from kbdesk.chat import CancelToken, TextDelta, TurnFinished

    long_question = "Please summarise: " + "the harbour keeps its lighthouse lit every night. " * 60
    with open_desk() as desk:
        token = CancelToken()
        events: list = []
        stopped_at: list[float] = []

        def ask() -> None:
            for event in desk.chat().stream(None, long_question, retrieval="off", cancel=token):
                events.append(event)
            stopped_at.append(time.monotonic())

        worker = threading.Thread(target=ask)
        worker.start()
        time.sleep(1.5)
        assert not any(isinstance(e, TextDelta) for e in events), "the answer started before the stop"
        asked = time.monotonic()
        token.cancel()
        worker.join(30)
        assert not worker.is_alive()
        took = stopped_at[0] - asked
        answer = next(e.answer for e in events if isinstance(e, TurnFinished))
        assert answer.status == "cancelled"
        print(f"stop before the first byte took {took:.3f} s")
        assert took < 0.5


def test_an_overflowing_conversation_is_trimmed_not_broken(e2e_home, recorder):
    """A conversation far longer than the server's 2,048-token context: the server does
    not say its context (llama-cpp-python has no /props), so kbdesk plans with 4,096;
    the server's overflow comes back as an overflow, and the turn asks again without the
    history instead of failing."""
    from kbdesk import open_desk

    with open_desk() as desk:
        chat = desk.chat()
        conv = chat.new_conversation("long")
        for i in range(12):  # an old conversation, saved: ~1,500 characters per exchange
            desk.store.add_message(conv.id, "user", f"Question {i} about tides? " + "tide " * 120)
            desk.store.add_message(conv.id, "assistant", f"Answer {i}: " + "water " * 150)
        recorder.label = "overflow"
        answer = chat.ask(conv.id, "What is the capital of France?", retrieval="off", max_tokens=48)
        recorder.label = None
    assert answer.status == "complete", answer.error
    assert answer.text.strip()
    assert answer.trimmed or any("context" in n for n in answer.notices)
