"""The chat screen's plain-data side: the relay's coalescing and answers rebuilt from saved
messages (no Textual needed)."""

from __future__ import annotations

import threading

from kbdesk.chat import (
    Answer,
    Notice,
    Retrieval,
    Source,
    TextDelta,
    ToolCallFinished,
    ToolCallInfo,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Waiting,
)
from kbdesk.chat.events import ChatEvent
from kbdesk.store.chat import ChatMessage, ToolCallRecord
from kbdesk.tui.chat_state import (
    AnswerState,
    CallLine,
    NoticePart,
    TextPart,
    TurnRelay,
    UserBlock,
    blocks_from_messages,
    source_groups,
)


def test_relay_merges_text_and_wakes_the_ui_rarely():
    now = [0.0]
    wakes: list[int] = []
    relay = TurnRelay(lambda: wakes.append(1), interval=0.05, clock=lambda: now[0])
    for i in range(100):
        relay.on_event(TextDelta(f"t{i} ", 1))
    assert len(wakes) == 1  # the first delta; the rest wait for the drain
    events = relay.drain()
    assert events == [TextDelta("".join(f"t{i} " for i in range(100)), 1)]
    relay.on_event(TextDelta("more", 1))
    assert len(wakes) == 1  # within the interval: the UI's timer drains it
    assert relay.pending()
    now[0] = 0.1
    relay.on_event(TextDelta(" text", 1))
    assert len(wakes) == 2
    call = ToolCallInfo("c1", "kb_search", '{"query": "x"}')
    relay.on_event(ToolCallStarted(call))  # a wake-up is already on its way: no second one
    assert len(wakes) == 2
    relay.on_event(TextDelta("next round", 2))
    assert relay.drain() == [TextDelta("more text", 1), ToolCallStarted(call), TextDelta("next round", 2)]
    relay.on_event(Notice("careful", "warning"))  # not text: wakes at once, even inside the interval
    assert len(wakes) == 3 and relay.drain() == [Notice("careful", "warning")]


def test_relay_from_another_thread_loses_nothing():
    relay = TurnRelay(lambda: None, interval=0.0)
    seen: list[str] = []
    stop = threading.Event()

    def drain() -> None:
        while not stop.is_set():
            seen.extend(_text(e) for e in relay.drain())
        seen.extend(_text(e) for e in relay.drain())

    reader = threading.Thread(target=drain)
    reader.start()
    for i in range(5000):
        relay.on_event(TextDelta(str(i % 10), 1))
    stop.set()
    reader.join()
    assert "".join(seen) == "".join(str(i % 10) for i in range(5000))


def test_answer_state_follows_the_events():
    state = AnswerState()
    source = Source(1, "chunk", "guide.md", kb="Docs", document_id="d", chunk_index=0, heading="Backups")
    call = ToolCallInfo("c1", "kb_search", '{"query": "backups"}')
    events: list[ChatEvent] = [
        TextDelta("Let me ", 1),
        TextDelta("look.\x1b[2J", 1),
        ToolCallStarted(call),
        ToolCallFinished(ToolCallInfo("c1", "kb_search", call.arguments, True, "1 result from Docs"), (source,)),
        TextDelta("Nightly [1].", 2),
        Notice("a warning", "warning"),
    ]
    for event in events:
        state.apply(event)
    assert state.streaming and state.text == "Let me look.\n\nNightly [1]."  # escape sequences stripped
    assert [type(p) for p in state.parts] == [TextPart, CallLine, TextPart, NoticePart]
    call_line = state.parts[1]
    assert isinstance(call_line, CallLine)
    assert call_line.state == "ok" and call_line.label == "kb_search “backups”"
    assert [s["label"] for s in state.sources] == ["guide.md § Backups — Docs"]
    state.apply(TurnFinished(Answer("conv", "m", state.text, "complete", "tiny", (source,))))
    assert state.status == "complete" and state.model == "tiny" and len(state.sources) == 1


def test_answer_state_says_what_the_turn_is_doing_and_how_it_went():
    state = AnswerState()
    state.apply(TurnStarted("conv", "u", "tiny", "local", ("Docs",)))
    assert state.live == "thinking…" and state.notes == []
    state.apply(Waiting(11.6))
    assert state.live == "waiting for the model (12 s)…"
    state.apply(TextDelta("Some", 1))
    assert state.live == "" and state.waiting is None  # text flows: nothing to say
    call = ToolCallInfo("c1", "kb_search", "{}")
    state.apply(ToolCallStarted(call))
    state.apply(Waiting(1.0, round=2))  # silent again in round 2
    assert state.live == "waiting for the model (1 s)…"
    state.apply(Retrieval("tool", ("Docs",), "searched Docs (kb_search)\x1b[2J"))
    assert state.live == "waiting for the model (1 s)…"  # the retrieval line does not end the wait
    state.stopping = True
    assert state.live == "stopped"
    state.apply(TurnFinished(Answer("conv", "m", "Some", "cancelled", finish_reason="length", trimmed=1)))
    assert state.live == ""  # over: the notes and notices say the rest
    assert state.notes == [
        "searched Docs (kb_search)",
        "cut at the length limit",
        "1 earlier question left out to fit the model's context",
    ]
    finished = AnswerState()
    finished.apply(TurnFinished(Answer("conv", "m", "x", "complete", finish_reason="stop", trimmed=3)))
    assert finished.notes == ["3 earlier questions left out to fit the model's context"]


def _message(role, content="", *, status="complete", sources=(), calls=(), model=None):
    return ChatMessage(
        "id", "conv", role, content, None, status, model, list(sources), "t", [ToolCallRecord(*c) for c in calls]
    )


def test_saved_messages_become_questions_and_answers():
    source = {"n": 1, "kind": "chunk", "source": "guide.md", "kb": "Docs", "label": "guide.md — Docs"}
    messages = [
        _message("user", "When?"),
        _message("assistant", "Looking.", calls=[("c1", "kb_search", '{"query": "when"}', "ok")], model="tiny"),
        _message("tool", '{"results": []}'),
        _message("assistant", "Nightly [1].", sources=[source], model="tiny"),
        _message("user", "And again?"),
        _message("assistant", "Part", status="cancelled", calls=[("c2", "kb_search", "not json", "pending")]),
        _message("notice", "stopped by the user", status="cancelled"),
    ]
    blocks = blocks_from_messages(messages)
    assert [type(b) for b in blocks] == [UserBlock, AnswerState, UserBlock, AnswerState]
    first, second = blocks[1], blocks[3]
    assert isinstance(first, AnswerState) and isinstance(second, AnswerState)
    assert first.text == "Looking.\n\nNightly [1]." and first.status == "complete" and first.sources == [source]
    assert [p.label for p in first.parts if isinstance(p, CallLine)] == ["kb_search “when”"]
    assert second.status == "cancelled"
    assert [(p.state, p.label) for p in second.parts if isinstance(p, CallLine)] == [("stopped", "kb_search not json")]
    assert source_groups(blocks) == [("When?", [source])]


def _text(event: ChatEvent) -> str:
    assert isinstance(event, TextDelta), event  # the relay was given only text
    return event.text
