"""Exchanges recorded against a real llama-cpp-python server (tests/e2e, ``KBDESK_RECORD=1``),
replayed: what that server answered is served again byte for byte, and kbdesk must send
the very requests it sent then — the forced kb_search, the tool result with the call's
id, an assistant tool-call message whose content is a string — and make the same answer
of what comes back, including an overflow answered with an empty stream, the four
two-turn conversations about assets/sample (SmolLM2 writes kb_search queries such as
``{`` and ``remove_file(filename, backup_path)``: the answers still cite the document that
holds the answer) and the server registered as the wrong kind."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kbdesk import open_desk
from kbdesk.paths import get_paths

RECORDED = Path(__file__).resolve().parent / "recorded" / "llamacpp.json"
SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "sample"
CONVERSATIONS = json.loads(
    (Path(__file__).resolve().parents[1] / "e2e" / "conversations.json").read_text(encoding="utf-8")
)["conversations"]


class Replay:
    """Answers each request with the next recorded answer for its path; keeps what it got."""

    def __init__(self, exchanges: list[dict[str, Any]]) -> None:
        self.queue = {}
        for e in exchanges:
            self.queue.setdefault((e["method"], e["path"]), []).append(e)
        self.got: list[tuple[str, Any]] = []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._answer("GET", None)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer("POST", json.loads(raw) if raw else None)

            def _answer(self, method: str, body: Any) -> None:
                replay.got.append((self.path, body))
                waiting = replay.queue.get((method, self.path))
                if not waiting:
                    data, status, kind = b'{"detail":"Not Found"}', 404, "application/json"
                else:
                    e = waiting.pop(0)
                    data, status, kind = e["body"].encode(), e["status"], e["content_type"]
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def chat_requests(self) -> list[Any]:
        return [body for path, body in self.got if path.endswith("/chat/completions")]


def recorded(*labels: str) -> list[dict[str, Any]]:
    return [e for e in json.loads(RECORDED.read_text()) if e["label"] in labels]


@pytest.fixture
def replay_desk():
    made: list[Any] = []

    def make(*labels: str, kind: str = "custom"):
        replay = Replay(recorded(*labels))
        config = get_paths().config_file
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f'[providers.llama]\nkind = "{kind}"\nbase_url = "{replay.base_url}"\ntimeout = 30\n\n'
            '[roles.chat]\nprovider = "llama"\nmodel = "smollm2"\n\n[chat]\nmax_tokens = 160\n'
        )
        desk = open_desk()
        made.append((desk, replay))
        return desk, replay

    yield make
    for desk, replay in made:
        desk.close()
        replay.httpd.shutdown()


def test_the_recorded_question_and_follow_up_replay_exactly(replay_desk):
    desk, replay = replay_desk("ask", "follow-up")
    desk.create_kb("demo")
    desk.add("demo", [SAMPLE])
    chat = desk.chat()
    first = chat.ask(None, "How do I restore a backup?")
    second = chat.ask(first.conversation_id, "And how often do backups run?")
    assert first.status == second.status == "complete"
    assert first.sources and first.retrieval in ("tool", "auto")
    then = [e["request"] for e in recorded("ask", "follow-up") if e["path"].endswith("/chat/completions")]
    now = replay.chat_requests()
    assert len(now) == len(then)
    for sent, was in zip(now, then, strict=True):
        assert sent == was  # byte for byte what the real server accepted
    for request in now:  # and what it accepts, said once more: content is never null
        assert all(isinstance(m.get("content"), str) for m in request["messages"])


def test_an_overflow_answered_with_an_empty_stream_is_retried_without_the_history(replay_desk):
    desk, replay = replay_desk("overflow")
    chat = desk.chat()
    conv = chat.new_conversation("long")
    for i in range(12):
        desk.store.add_message(conv.id, "user", f"Question {i} about tides? " + "tide " * 120)
        desk.store.add_message(conv.id, "assistant", f"Answer {i}: " + "water " * 150)
    answer = chat.ask(conv.id, "What is the capital of France?", retrieval="off", max_tokens=48)
    assert answer.status == "complete" and answer.text.strip()
    assert any("ended the answer without a word" in n and "earlier questions left out" in n for n in answer.notices)
    first, retry = replay.chat_requests()
    assert len(first["messages"]) > 1 and [m["role"] for m in retry["messages"]] == ["user"]


def _same_requests(replay: Replay, *labels: str) -> None:
    then = [e["request"] for e in recorded(*labels) if e["path"].endswith("/chat/completions")]
    now = replay.chat_requests()
    assert len(now) == len(then)
    for sent, was in zip(now, then, strict=True):
        assert sent == was


def test_four_recorded_conversations_cite_the_documents_that_answer_them(replay_desk):
    """What SmolLM2 searched for had nothing to do with the questions, and the filters it
    wrote let nothing through; every turn is grounded all the same (at least 7 of the 8
    turns are the promise; all 8 did)."""
    labels = [f"conversation-{n}-turn-{t}" for n in range(1, 5) for t in (1, 2)]
    desk, replay = replay_desk(*labels)
    desk.create_kb("demo")
    desk.add("demo", [SAMPLE])
    chat = desk.chat()
    cited = 0
    for conversation in CONVERSATIONS:
        conv_id = None
        for turn in conversation["turns"]:
            answer = chat.ask(conv_id, turn["q"])
            conv_id = answer.conversation_id
            assert answer.status == "complete" and answer.retrieval == "tool", answer.error
            cited += turn["doc"] in [s.source for s in answer.sources]
    assert cited == 8
    _same_requests(replay, *labels)
    model_queries = [
        json.loads(m["tool_calls"][0]["function"]["arguments"], strict=False).get("query")
        for r in replay.chat_requests()
        for m in r["messages"]
        if m.get("tool_calls")
    ]
    assert "remove_file(filename, backup_path)" in model_queries  # SmolLM2 for "How do I restore a backup?"
    assert "{" in model_queries  # … and for "How much does the Team plan cost?"
    model_filters = [
        json.loads(m["tool_calls"][0]["function"]["arguments"], strict=False).get("filters")
        for r in replay.chat_requests()
        for m in r["messages"]
        if m.get("tool_calls")
    ]
    # it also narrowed a search by the date field the schema offers (indexed), a type that is no file type
    # and a tag no document has: the turn was grounded all the same
    assert any(f and f.get("date") == "indexed" and f.get("tags") == "roadmap" for f in model_filters)


def test_the_wrong_kind_registration_is_asked_again_without_forcing(replay_desk):
    """Registered as kind llamacpp: "required" made llama-cpp-python answer an empty 200;
    kbdesk asked again without forcing, with the passages, and remembered it."""
    from kbdesk.chat.retrieval import ignores_forcing

    desk, replay = replay_desk("wrong-kind", kind="llamacpp")
    desk.create_kb("demo")
    desk.add("demo", [SAMPLE])
    answer = desk.chat().ask(None, "How do I restore a backup?")
    assert answer.status == "complete" and answer.text.strip()
    assert "getting-started.md" in [s.source for s in answer.sources]
    assert answer.retrieval == "auto" and not any("too long" in n for n in answer.notices)
    forced, again = replay.chat_requests()
    assert forced["tool_choice"] == "required" and "tool_choice" not in again
    assert ignores_forcing(desk.store, "llama", "smollm2")
    _same_requests(replay, "wrong-kind")
