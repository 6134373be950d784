"""An answer whose stream ends without ``finish_reason`` was cut, not finished: llama-cpp-python
ends a running answer with ``[DONE]`` and no ``finish_reason`` when another request reaches it.
kbdesk says so, keeps the part that came marked as an error, and ``ask`` exits 1."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from chat_support import write_config
from kbdesk.cli.main import cli

CHUNK = (
    'data: {"id": "chatcmpl-1", "model": "smollm2", "object": "chat.completion.chunk", '
    '"choices": [{"index": 0, "delta": {"content": "%s"}, "logprobs": null, "finish_reason": null}]}'
)


def cut_stream(*pieces: str) -> list[str]:
    """The shape llama-cpp-python sends when cut: text chunks, then [DONE], no finish_reason."""
    return [line for p in pieces for line in (CHUNK % p, "")] + ["data: [DONE]", ""]


@pytest.fixture
def run(chat_server):
    write_config(chat_server, retrieval="off")
    runner = CliRunner()
    return lambda *args: runner.invoke(cli, list(args))


def test_ask_says_the_answer_was_interrupted_and_exits_1(run, chat_server):
    chat_server.raw(cut_stream("Once upon", " a time, a keeper"))
    result = run("ask", "Tell me a story.", "--json")
    assert result.exit_code == 1
    answer = json.loads(result.stdout)
    assert answer["status"] == "error" and answer["finish_reason"] is None
    assert answer["answer"] == "Once upon a time, a keeper"
    assert "the answer was interrupted" in answer["error"] and "[DONE] but no finish_reason" in answer["error"]
    shown = run("conversations", "show", answer["conversation_id"]).stdout
    assert "(error)" in shown and "Once upon a time, a keeper" in shown and "interrupted" in shown


def test_a_complete_answer_still_exits_0(run, chat_server):
    chat_server.reply("All there.")
    result = run("ask", "Hello?")
    assert result.exit_code == 0 and "All there." in result.stdout


def test_a_cut_before_any_text_is_interrupted_too(run, chat_server):
    chat_server.raw(["data: [DONE]", ""])
    result = run("ask", "Hello?", "--json")
    assert result.exit_code == 1 and "the answer was interrupted" in json.loads(result.stdout)["error"]
