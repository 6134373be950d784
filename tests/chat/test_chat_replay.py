"""Exchanges recorded against a real llama-cpp-python server (tests/e2e, ``KBDESK_RECORD=1``),
replayed: what that server answered is served again byte for byte, and kbdesk must send
the very requests it sent then and make the same answer of what comes back.

Each recorded chat request also holds ``rendered``: the request as the server's own
``chatml-function-calling`` template rendered it (tests/llamacpp_render.py) — what the model
read. Since kbdesk must send the same requests now, what the model read then is what it
reads now: the replays assert on it. The four two-turn conversations about
assets/sample (kbdesk's default retrieval, and ``always``): the passage that answers each
turn is in the prompt the model read — the template drops role "tool", which the probe
recorded here shows (the same ``usage.prompt_tokens`` for a one-word and a 48-word tool
result), so kbdesk sends the results as a user message. Also: ``--retrieval tool``
(the tools shown to the model), a stream cut by another request (an interrupted answer),
an overflow answered with an empty stream, and the server registered as the wrong kind."""

from __future__ import annotations

import html
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
        self.queue: dict[tuple[str, str], list[dict[str, Any]]] = {}
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

    def make(*labels: str, kind: str = "custom", window: int | None = 2048):
        replay = Replay(recorded(*labels))
        config = get_paths().config_file
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f'[providers.llama]\nkind = "{kind}"\nbase_url = "{replay.base_url}"\ntimeout = 30\n\n'
            '[roles.chat]\nprovider = "llama"\nmodel = "smollm2"\n\n[chat]\nmax_tokens = 160\n'
            + (f"context_window = {window}\n" if window else "")
        )
        desk = open_desk()
        made.append((desk, replay))
        return desk, replay

    yield make
    for desk, replay in made:
        desk.close()
        replay.httpd.shutdown()


def _same_requests(replay: Replay, *labels: str) -> None:
    then = [e["request"] for e in recorded(*labels) if e["path"].endswith("/chat/completions")]
    now = replay.chat_requests()
    assert len(now) == len(then)
    for sent, was in zip(now, then, strict=True):
        assert sent == was  # byte for byte what the real server accepted
    for request in now:  # and what it accepts, said once more: content is never null
        assert all(isinstance(m.get("content"), str) for m in request["messages"])


def _answers(labels: list[str]) -> list[dict[str, Any]]:
    """The last streamed chat exchange of each label: the request the answer came from."""
    out = []
    for label in labels:
        asked = [e for e in recorded(label) if e["path"].endswith("/chat/completions") and e["request"].get("stream")]
        out.append(asked[-1])
    return out


def _converse(chat, **options) -> list[Any]:
    answers = []
    for conversation in CONVERSATIONS:
        conv_id = None
        for turn in conversation["turns"]:
            answer = chat.ask(conv_id, turn["q"], **options)
            conv_id = answer.conversation_id
            answers.append(answer)
    return answers


def _read(prompt: str, passage: str) -> bool:
    text = html.unescape(prompt)  # the template escapes HTML; kbdesk's fenced data is JSON
    return passage in text or json.dumps(passage, ensure_ascii=False)[1:-1] in text


TURNS = [turn for conversation in CONVERSATIONS for turn in conversation["turns"]]
DEFAULT = [f"conversation-{n}-turn-{t}" for n in range(1, 5) for t in (1, 2)]
ALWAYS = [f"always-{n}-turn-{t}" for n in range(1, 5) for t in (1, 2)]


def test_four_recorded_conversations_read_the_passage_that_answers_them(replay_desk):
    """kbdesk's default retrieval against llama-cpp-python: the probe found the tool role
    dropped, the results went as a user message, and in at least 7 of the 8 turns the
    passage that answers is in the prompt the model read."""
    from kbdesk.chat.tool_results import remembered

    desk, replay = replay_desk(*DEFAULT)
    desk.create_kb("demo")
    desk.add("demo", [SAMPLE])
    answers = _converse(desk.chat())
    assert all(a.status == "complete" for a in answers), [a.error for a in answers]
    assert sum(t["doc"] in [s.source for s in a.sources] for t, a in zip(TURNS, answers, strict=True)) >= 7
    _same_requests(replay, *DEFAULT)
    probes = [e for e in recorded(*DEFAULT) if e["path"].endswith("/chat/completions") and not e["request"]["stream"]]
    short, long = (json.loads(p["body"])["usage"]["prompt_tokens"] for p in probes)
    assert short == long  # 48 words more in the tool message, not one token more: the template dropped it
    assert remembered(desk.store)["llama/smollm2"]["verdict"] == "dropped"
    streamed = [r for r in replay.chat_requests() if r["stream"]]
    assert all("tool" not in [m["role"] for m in r["messages"]] for r in streamed)
    read = [_read(e["rendered"], t["passage"]) for t, e in zip(TURNS, _answers(DEFAULT), strict=True)]
    assert sum(read) >= 7, read


def test_the_always_baseline_replays_with_the_passages_in_the_system_prompt(replay_desk):
    desk, replay = replay_desk(*ALWAYS)
    desk.create_kb("demo")
    desk.add("demo", [SAMPLE])
    answers = _converse(desk.chat(), retrieval="always")
    assert all(a.status == "complete" and a.retrieval == "auto" for a in answers)
    _same_requests(replay, *ALWAYS)
    read = [_read(e["rendered"], t["passage"]) for t, e in zip(TURNS, _answers(ALWAYS), strict=True)]
    assert sum(read) >= 7, read


def test_retrieval_tool_shows_the_model_the_tools(replay_desk):
    """--retrieval tool: kb_search is offered with tool_choice "auto" said, and the
    template shows it to the model (a missing tool_choice made it show none)."""
    labels = ["tool-1-turn-1", "tool-1-turn-2"]
    desk, replay = replay_desk(*labels)
    desk.create_kb("demo")
    desk.add("demo", [SAMPLE])
    first = desk.chat().ask(None, CONVERSATIONS[0]["turns"][0]["q"], retrieval="tool")
    desk.chat().ask(first.conversation_id, CONVERSATIONS[0]["turns"][1]["q"], retrieval="tool")
    _same_requests(replay, *labels)
    for label in labels:
        opening = next(e for e in recorded(label) if e["path"].endswith("/chat/completions") and e["request"]["stream"])
        assert opening["request"]["tool_choice"] == "auto"
        assert "You have access to the following functions" in opening["rendered"]
        assert "functions.kb_search:" in opening["rendered"]


def test_a_stream_cut_by_another_request_is_an_interrupted_answer(replay_desk):
    """What llama-cpp-python sent when a GET /v1/models reached it mid-answer: text, then
    [DONE] with no finish_reason. Reported as interrupted, the part kept and marked."""
    desk, replay = replay_desk("cut-stream")
    (cut,) = [e for e in recorded("cut-stream") if e["path"].endswith("/chat/completions")]
    assert "[DONE]" in cut["body"] and '"finish_reason": "' not in cut["body"]
    chat = desk.chat()
    answer = chat.ask(None, cut["request"]["messages"][-1]["content"], retrieval="off", max_tokens=400)
    assert answer.status == "error" and "the answer was interrupted" in answer.error
    assert "with [DONE] but no finish_reason" in answer.error and answer.text.strip()
    saved = [(m.role, m.status) for m in chat.messages(answer.conversation_id)]
    assert saved == [("user", "complete"), ("assistant", "error"), ("notice", "error")]
    assert replay.chat_requests() == [cut["request"]]


def _long_conversation(desk, chat):
    conv = chat.new_conversation("long")
    for i in range(12):
        desk.store.add_message(conv.id, "user", f"Question {i} about tides? " + "tide " * 120)
        desk.store.add_message(conv.id, "assistant", f"Answer {i}: " + "water " * 150)
    return conv


def test_a_conversation_longer_than_the_window_kbdesk_knows_is_trimmed_before_it_is_sent(replay_desk):
    """[chat] context_window = 2048, as docs/CHAT.md says for llama-cpp-python: the oldest
    questions are left out before sending, and the server answers the first time."""
    desk, replay = replay_desk("overflow")
    chat = desk.chat()
    answer = chat.ask(
        _long_conversation(desk, chat).id, "What is the capital of France?", retrieval="off", max_tokens=48
    )
    assert answer.status == "complete" and answer.text.strip() and answer.trimmed
    _same_requests(replay, "overflow")
    assert len(replay.chat_requests()) == 1


def test_an_overflow_answered_with_an_empty_stream_is_retried_without_the_history(replay_desk):
    """Without context_window (llama-cpp-python does not say its own): kbdesk plans with
    4,096 tokens, the server (started with 2,048) answers an empty stream, and the turn is
    asked again without the history. (Recorded before tool_choice was always said: no tools here.)"""
    desk, replay = replay_desk("overflow-unsaid", window=None)
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
    forced, *again = [r for r in replay.chat_requests() if r["stream"]]
    assert forced["tool_choice"] == "required" and all(r["tool_choice"] != "required" for r in again)
    assert ignores_forcing(desk.store, "llama", "smollm2")
    _same_requests(replay, "wrong-kind")
