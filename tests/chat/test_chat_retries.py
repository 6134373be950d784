"""Which chat failures are tried again, and how each one is told (one line, provider and model).

Only what did not start a generation on a server that is there is retried: a connection
that timed out, 429 and 502/503/504 (a refused connection is said at once). Everything
else is final at once, and a prompt over the model's context is its own error, whichever
way the server says it.
"""

from __future__ import annotations

import socket
import time

import pytest

from fake_openai import FakeOpenAI
from kbdesk.providers import OpenAICompatProvider, ProviderResponseError
from kbdesk.providers.chat import ChatClient, Completion, ContextOverflowError
from kbdesk.providers.errors import (
    InterruptedAnswerError,
    ProviderAuthError,
    ProviderError,
    ProviderNotFoundError,
    ProviderRequestError,
    ProviderUnavailableError,
)
from kbdesk.providers.settings import ProviderKind, ProviderSettings

HI = [{"role": "user", "content": "hi"}]


def ask(base_url: str, *, kind: ProviderKind = "custom", max_retries: int = 3, retry_budget: float = 10.0, **options):
    settings = ProviderSettings(
        kind=kind, base_url=base_url, max_retries=max_retries, retry_budget=retry_budget, timeout=5.0
    )
    with ChatClient("local", settings) as chat:
        items = list(chat.stream(HI, "tiny", **options))
    assert isinstance(items[-1], Completion)
    return items[-1]


def failure(base_url: str, **kwargs) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        ask(base_url, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and "provider 'local'" in message, message
    return caught.value


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_statuses_that_did_not_start_a_generation_are_retried(chat_server, status):
    chat_server.error(status, "busy, try later", retry_after="0")
    chat_server.reply("Made it.")
    assert ask(chat_server.base_url).content == "Made it."
    assert len(chat_server.chat_requests) == 2


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, ProviderRequestError),
        (401, ProviderAuthError),
        (403, ProviderAuthError),
        (404, ProviderNotFoundError),
        (413, ProviderRequestError),
        (422, ProviderRequestError),
        (500, ProviderUnavailableError),
    ],
)
def test_statuses_retrying_cannot_fix_are_final_at_once(chat_server, status, kind):
    chat_server.error(status, "no")
    error = failure(chat_server.base_url)
    assert type(error) is kind and f"HTTP {status}" in str(error) and "model 'tiny'" in str(error)
    assert len(chat_server.chat_requests) == 1


def test_retry_after_is_honoured_within_the_budget(chat_server):
    chat_server.error(503, "loading model", retry_after="1")
    chat_server.reply("Loaded.")
    started = time.monotonic()
    assert ask(chat_server.base_url).content == "Loaded."
    assert time.monotonic() - started >= 0.9 and len(chat_server.chat_requests) == 2


def test_a_retry_after_beyond_the_budget_gives_up_at_once(chat_server):
    chat_server.error(429, "rate limited", retry_after="3600")
    started = time.monotonic()
    error = failure(chat_server.base_url, retry_budget=20.0)
    assert time.monotonic() - started < 5.0
    assert "waiting 3600 s more would pass the 20 s retry budget" in str(error) and "HTTP 429" in str(error)
    assert len(chat_server.chat_requests) == 1


def test_a_refused_connection_fails_at_once_in_one_line(caplog):
    """Nothing listening is not a busy server: no retry, no backoff, one line naming the URL."""
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    caplog.set_level("WARNING", logger="kbdesk.providers")
    error = failure(f"http://127.0.0.1:{port}/v1", max_retries=5)
    assert type(error) is ProviderUnavailableError and "\n" not in str(error)
    assert f"could not connect to http://127.0.0.1:{port}/v1 (connection refused; is the server running?)" in str(error)
    assert "gave up after" not in str(error) and not [r for r in caplog.records if "retry" in r.getMessage()]


# ── a prompt over the model's context ───────────────────────────────────────────


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (
            400,
            "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the "
            "messages, 100 in the completion). Please reduce the length of the messages or completion.",
        ),
        (400, "the request exceeds the available context size, try increasing it"),
        (400, "request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it"),
        (
            500,
            "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with "
            "context length of only 4096 tokens, which is not enough.",
        ),
        (413, "too many tokens in the prompt"),
    ],
)
def test_an_overflow_is_its_own_error_and_not_retried(chat_server, status, said):
    chat_server.error(status, said)
    error = failure(chat_server.base_url)
    assert isinstance(error, ContextOverflowError) and isinstance(error, ProviderRequestError)
    assert "the conversation is too long for the model's context" in str(error)
    assert len(chat_server.chat_requests) == 1


def test_llama_cpp_overflow_from_its_context_check(chat_server):
    chat_server.strict, chat_server.n_ctx = "llama.cpp", 5
    error = failure(chat_server.base_url)
    assert isinstance(error, ContextOverflowError) and "exceeds the available context size" in str(error)


def test_llama_cpp_python_overflow_is_an_empty_stream(chat_server):
    """Over its context, llama-cpp-python answers 200 and ends the stream without a word."""
    chat_server.strict, chat_server.n_ctx = "llama-cpp-python", 5
    error = failure(chat_server.base_url)
    assert isinstance(error, ContextOverflowError) and "without a word" in str(error)
    chat_server.n_ctx = None
    assert ask(chat_server.base_url).content == "ok"  # the same request fits once the context allows it


def test_an_overflow_said_mid_stream(chat_server):
    chat_server.raw(['data: {"error": {"message": "context length exceeded", "type": "invalid_request_error"}}'])
    assert isinstance(failure(chat_server.base_url), ContextOverflowError)
    chat_server.raw(
        [
            'error: {"code": 400, "message": "the request exceeds the available context size", '
            '"type": "exceed_context_size_error"}'
        ]
    )
    assert isinstance(failure(chat_server.base_url), ContextOverflowError)


def test_a_started_answer_that_ends_early_is_not_an_overflow(chat_server):
    chat_server.raw(['data: {"choices": [{"delta": {"content": "Hal"}}]}'])
    error = failure(chat_server.base_url)
    assert isinstance(error, InterruptedAnswerError) and not isinstance(error, ContextOverflowError)
    assert "the answer was interrupted" in str(error) and "before [DONE]" in str(error) and error.text == "Hal"


# ── a base URL that is not the API ──────────────────────────────────────────────


def test_an_html_page_is_a_base_url_problem(chat_server):
    chat_server.html()
    error = failure(chat_server.base_url)
    assert isinstance(error, ProviderResponseError)
    assert "got an HTML page — is the base URL right" in str(error) and chat_server.base_url in str(error)


def test_embeddings_say_the_same_about_an_html_page():
    with FakeOpenAI(dimensions=8) as server:
        server.fail_next("html")
        with (
            OpenAICompatProvider("fake", ProviderSettings(base_url=server.base_url)) as provider,
            pytest.raises(ProviderResponseError, match="got an HTML page — is the base URL right"),
        ):
            provider.embed(["x"], "m")


@pytest.mark.parametrize(
    ("kind", "suffix", "hinted"),
    [
        ("custom", "", True),
        ("ollama", "", True),
        ("llamacpp", "/", True),
        ("custom", "/v1", False),
        ("openrouter", "", False),
    ],
)
def test_a_404_asks_whether_the_base_url_needs_v1(chat_server, kind, suffix, hinted):
    root = chat_server.base_url.removesuffix("/v1")
    chat_server.error(404, "not found")
    error = failure(root + suffix, kind=kind)
    assert isinstance(error, ProviderNotFoundError)
    assert ("does the base URL need /v1?" in str(error)) is hinted


def test_per_token_embeddings_name_options_that_exist():
    with FakeOpenAI(dimensions=8) as server:
        server.fail_next("nested")
        with (
            OpenAICompatProvider("fake", ProviderSettings(base_url=server.base_url)) as provider,
            pytest.raises(ProviderResponseError) as caught,
        ):
            provider.embed(["x"], "m")
    message = str(caught.value)
    assert "one vector per token" in message and "--pooling mean" in message
    assert "llama-cpp-python's server has no pooling option" in message
