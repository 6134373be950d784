"""Every answer grounded: under ``auto`` kbdesk searches with the user's own question (a
follow-up also made standalone) and merges that with the model's kb_search; a forced tool
choice that fails in any way is asked again once without forcing and remembered; the
retrieval line says what really happened when a turn ended before any search."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from chat_support import add_doc, write_config
from kbdesk.chat import CancelToken, Retrieval
from kbdesk.chat.grounding import content_words, grounding_queries, merge, standalone
from kbdesk.chat.retrieval import ignores_forcing

BACKUPS = "Backups run nightly at 02:00 and snapshots are kept for thirty days."
RESTORE = "To restore a backup, stop the server and run harbor snapshot restore NAME."
PRICING = "Harbor Team costs 49 EUR per month for up to 50 editors, with email support."
SSO = "Single sign-on uses OpenID Connect: enter the issuer URL and the client secret."


def _kb(desk) -> None:
    desk.create_kb("Sample", keyword_only=True)
    add_doc(desk, "Sample", "backups.md", BACKUPS)
    add_doc(desk, "Sample", "restore.md", RESTORE)
    add_doc(desk, "Sample", "pricing.csv", PRICING)
    add_doc(desk, "Sample", "security.md", SSO)


def _auto(server, **kwargs) -> None:
    write_config(server, retrieval=None, **kwargs)


@pytest.mark.parametrize("query", ["$search_term", ",", "", "   ", "reload_backup.sql"])
def test_a_model_query_that_finds_nothing_still_brings_the_questions_passages(any_cdesk, chat_server, query):
    desk = any_cdesk
    _auto(chat_server)
    desk.reload_config()
    _kb(desk)
    chat_server.reply(tool_calls=[("kb_search", {"query": query, "max_results": -1})])
    chat_server.reply(text="Stop the server, then run the restore command [1].")
    answer = desk.chat().ask(None, "How do I restore a backup?")
    assert answer.status == "complete", answer.error
    assert answer.retrieval == "tool"
    assert "restore.md" in [s.source for s in answer.sources]
    sent = chat_server.chat_requests[1]["messages"]
    result = next(m for m in sent if m["role"] == "tool")["content"]
    assert "harbor snapshot restore" in result  # the passage reached the model
    assert '"question": ["How do I restore a backup?"]' in result


def test_a_good_model_query_is_merged_with_the_question_not_replaced(cdesk, chat_server):
    _auto(chat_server)
    cdesk.reload_config()
    _kb(cdesk)
    chat_server.reply(tool_calls=[("kb_search", {"query": "OpenID Connect issuer"})])
    chat_server.reply(text="ok")
    answer = cdesk.chat().ask(None, "How much is the Team plan?")
    by = {s.source: s.via for s in answer.sources}
    assert by["pricing.csv"] == "auto_search" and by["security.md"] == "kb_search"
    assert answer.sources[0].source == "pricing.csv"  # the question's best comes first


def test_a_follow_up_is_searched_as_asked_and_made_standalone(any_cdesk, chat_server):
    desk = any_cdesk
    _auto(chat_server)
    desk.reload_config()
    _kb(desk)
    chat_server.reply(tool_calls=[("kb_search", {"query": "Team plan price"})])
    chat_server.reply(text="49 EUR [1].")
    first = desk.chat().ask(None, "How much does the Team plan cost?")
    chat_server.reply(tool_calls=[("kb_search", {"query": "$search_term"})])
    chat_server.reply(text="Email support [1].")
    second = desk.chat().ask(first.conversation_id, "And who answers the questions?")
    assert "pricing.csv" in [s.source for s in second.sources]
    result = next(m for m in chat_server.chat_requests[-1]["messages"][::-1] if m["role"] == "tool")["content"]
    assert (
        '"question": ["And who answers the questions? much team plan cost", "And who answers the questions?"]' in result
    )


def test_the_standalone_rule():
    assert content_words("How much does the Team plan cost?") == ["much", "team", "plan", "cost"]
    assert standalone("And the support?", "How much does the Team plan cost?") == "And the support? much team plan cost"
    assert standalone("Team plan support?", "How much does the Team plan cost?") == "Team plan support? much cost"
    assert standalone("anything", None) is None
    assert standalone("plan cost", "plan cost") is None

    class M:
        def __init__(self, role, content):
            self.role, self.content = role, content

    history = [M("user", "How do I restore a backup?"), M("assistant", "Run restore."), M("notice", "x")]
    assert grounding_queries("And how often do they run?", history) == [
        "And how often do they run? restore backup",
        "And how often do they run?",
    ]
    assert grounding_queries("first question", []) == ["first question"]


def test_merge_interleaves_without_repeats():
    class R:
        def __init__(self, doc):
            self.document_id, self.chunk_index, self.kb, self.source = doc, 0, "k", doc

    a, b, c, d = R("a"), R("b"), R("c"), R("d")
    assert [r.source for r in merge([[a, b, c], [b, d]])] == ["a", "b", "d", "c"]
    assert [r.source for r in merge([[a, b], [c, d]], limit=3)] == ["a", "c", "b"]


def test_a_forced_choice_answered_with_an_empty_stream_is_asked_again_without_forcing(any_cdesk, chat_server):
    """llama-cpp-python registered as kind llamacpp: "required" trips an assertion inside
    its stream and it answers an empty 200. Not an overflow: asked again once without
    forcing, with the passages kbdesk found, and remembered for the provider and model."""
    desk = any_cdesk
    _auto(chat_server)
    path = desk.paths.config_file
    path.write_text(path.read_text().replace('kind = "custom"', 'kind = "llamacpp"'))
    desk.reload_config()
    _kb(desk)
    chat_server.raw([])  # 200, an event stream, nothing in it
    chat_server.reply(text="Stop the server and run the restore command [1].")
    answer = desk.chat().ask(None, "How do I restore a backup?")
    assert answer.status == "complete", answer.error
    assert "context" not in " ".join(answer.notices)
    assert any("could not be told to search" in n for n in answer.notices)
    assert answer.retrieval == "auto" and "restore.md" in [s.source for s in answer.sources]
    forced, again = chat_server.chat_requests
    assert forced["tool_choice"] == "required"
    assert again["tool_choice"] == "auto" and "harbor snapshot restore" in again["messages"][0]["content"]
    assert ignores_forcing(desk.store, "local", "tiny")
    chat_server.reply(text="Backups run at 02:00 [1].")  # the next turn: searched first, no forcing
    nxt = desk.chat().ask(answer.conversation_id, "When do backups run?")
    assert nxt.status == "complete" and chat_server.chat_requests[-1]["tool_choice"] == "auto"
    assert len(chat_server.chat_requests) == 3


@pytest.mark.parametrize("status", [400, 422, 500])
def test_a_forced_choice_refused_with_an_error_status_is_asked_again(cdesk, chat_server, status):
    _auto(chat_server)
    cdesk.reload_config()
    _kb(cdesk)
    chat_server.error(status, "Assertion failed: tool_choice")
    chat_server.reply(text="answer [1]")
    answer = cdesk.chat().ask(None, "How do I restore a backup?")
    assert answer.status == "complete", answer.error
    assert "restore.md" in [s.source for s in answer.sources]
    assert ignores_forcing(cdesk.store, "local", "tiny")


def test_an_empty_stream_to_a_short_unforced_question_is_not_called_an_overflow(cdesk, chat_server):
    write_config(chat_server, retrieval="off")
    cdesk.reload_config()
    chat_server.raw([])
    answer = cdesk.chat().ask(None, "Hello?")
    assert answer.status == "error"
    assert "too long" not in answer.error and "ended the answer without a word" in answer.error
    assert "the server's log says why" in answer.error


def test_an_empty_stream_over_a_known_window_is_an_overflow(cdesk, chat_server):
    write_config(chat_server, retrieval="off", extra="context_window = 300")
    cdesk.reload_config()
    chat_server.raw([])
    answer = cdesk.chat().ask(None, "Please summarise this: " + "the tide comes in at noon. " * 80)
    assert answer.status == "error" and "too long for this model" in answer.error


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_a_server_that_cannot_be_reached_is_not_the_model_not_searching(cdesk, chat_server):
    write_config(chat_server, retrieval="tool")
    path = cdesk.paths.config_file
    path.write_text(path.read_text().replace(chat_server.base_url, _closed_port()))
    cdesk.reload_config()
    _kb(cdesk)
    events = list(cdesk.chat().stream(None, "How do I restore a backup?"))
    line = next(e for e in events if isinstance(e, Retrieval))
    assert line.how == "unreachable"
    assert line.text == "not searched: the server could not be reached (Sample)"
    assert "did not search" not in line.text


def test_stopped_before_searching_says_so(cdesk, chat_server):
    write_config(chat_server, retrieval="tool")
    cdesk.reload_config()
    _kb(cdesk)
    chat_server.hang(10)
    token = CancelToken()
    threading.Timer(0.5, token.cancel).start()
    events = list(cdesk.chat().stream(None, "How do I restore a backup?", cancel=token))
    line = next(e for e in events if isinstance(e, Retrieval))
    assert (line.how, line.text) == ("stopped", "stopped before searching Sample")


def test_the_retrieval_line_says_when_the_question_was_searched_by_keyword_only(cdesk, chat_server):
    """A KB with vectors whose embedding provider is down: the turn is still grounded, by
    keyword, and the retrieval line says so."""
    _auto(chat_server, embedding_model="emb")
    cdesk.reload_config()
    cdesk.create_kb("Vec", model_id="emb", provider="local")
    cdesk.add_document("Vec", "restore.md", [RESTORE], vectors=[[0.1] * 8])
    path = cdesk.paths.config_file
    path.write_text(path.read_text().replace(chat_server.base_url, _closed_port()) + "\n[providers.chat]\n")
    text = path.read_text()
    # the chat role keeps the fake server; the embedding provider is gone
    text = text.replace('[roles.chat]\nprovider = "local"', '[roles.chat]\nprovider = "chatter"')
    text = text.replace(
        "\n[providers.chat]\n", f'\n[providers.chatter]\nkind = "custom"\nbase_url = "{chat_server.base_url}"\n'
    )
    path.write_text(text)
    cdesk.reload_config()
    chat_server.reply(tool_calls=[("kb_search", {"query": "restore"})])
    chat_server.reply(text="Run the restore [1].")
    events = list(cdesk.chat().stream(None, "How do I restore a backup?"))
    line = next(e for e in events if isinstance(e, Retrieval))
    assert line.keyword_only == ("Vec",)
    assert "by keyword only in Vec: the question could not be embedded" in line.text
    answer = events[-1].answer
    assert "restore.md" in [s.source for s in answer.sources]
    assert json.loads(answer.tool_calls[0].arguments)["query"] == "restore"
