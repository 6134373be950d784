"""The provider layer against a real HTTP server on loopback (tests/fake_openai.py).

Waits between retries are recorded by an injected ``sleep`` instead of slept; timeouts
are real (a stalled server, a short client timeout).
"""

from __future__ import annotations

import logging
import os
import stat
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from fake_openai import FakeOpenAI
from kbdesk.errors import ConfigError, KbdeskError
from kbdesk.providers import (
    EmptyInputError,
    InputTooLargeError,
    InvalidVectorError,
    ModelInfo,
    OpenAICompatProvider,
    ProviderAuthError,
    ProviderConfigError,
    ProviderNotFoundError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderSettings,
    ProviderUnavailableError,
    embedding_candidates,
    plan_batches,
    resolve_api_key,
    write_config_file,
)
from kbdesk.providers.retry import backoff_delay, parse_retry_after

MODEL = "text-embedding-3-small"
KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"


@pytest.fixture
def server():
    with FakeOpenAI(dimensions=8) as fake:
        yield fake


class FakeTime:
    """An injected sleep that records waits and moves an injected clock forward."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


@pytest.fixture
def fake_time():
    return FakeTime()


@pytest.fixture
def make(server, fake_time):
    """Build providers against ``server``; all are closed after the test."""
    made: list[OpenAICompatProvider] = []

    def build(*, on_usage=None, **overrides) -> OpenAICompatProvider:
        options = {"kind": "custom", "base_url": server.base_url, "timeout": 5.0, **overrides}
        provider = OpenAICompatProvider(
            "fake", ProviderSettings(**options), sleep=fake_time.sleep, clock=fake_time.clock, on_usage=on_usage
        )
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()


def texts(n: int, prefix: str = "chunk") -> list[str]:
    return [f"{prefix} number {i}" for i in range(n)]


# ── batching and order ──────────────────────────────────────────────────────────


def test_250_inputs_go_in_three_calls_and_keep_their_order(server, make):
    inputs = texts(250)
    result = make().embed(inputs, MODEL)
    assert result.calls == 3
    assert [len(r.inputs) for r in server.embedding_requests] == [100, 100, 50]
    assert result.vectors == [FakeOpenAI.vector_for(t, 8) for t in inputs]
    assert result.dimensions == 8 and result.failures == []
    assert result.prompt_tokens == sum(max(1, len(t) // 4) for t in inputs)
    body = server.embedding_requests[0].body
    assert body["model"] == MODEL and body["encoding_format"] == "float" and "dimensions" not in body


def test_vectors_are_sorted_by_the_response_index(server, make):
    server.reverse_data = True
    inputs = texts(5)
    assert make().embed(inputs, MODEL).vectors == [FakeOpenAI.vector_for(t, 8) for t in inputs]


def test_batches_respect_the_character_budget(server, make):
    inputs = ["a" * 10] * 7 + ["b" * 100] + ["c" * 10] * 2
    result = make(max_batch_chars=35).embed(inputs, MODEL)
    sizes = [len(r.inputs) for r in server.embedding_requests]
    assert sizes == [3, 3, 1, 1, 2] and result.calls == 5
    assert all(v is not None for v in result.vectors)


def test_plan_batches():
    assert plan_batches([], 100, 10) == []
    assert plan_batches(["xx"] * 5, 2, 1000) == [[0, 1], [2, 3], [4]]
    assert plan_batches(["x" * 50, "y", "z" * 50], 100, 50) == [[0], [1], [2]]


def test_dimensions_are_requested_and_checked(server, make):
    result = make().embed(["hello"], MODEL, dimensions=4)
    assert server.embedding_requests[0].body["dimensions"] == 4
    assert len(result.vectors[0]) == 4


def test_expected_dimensions_are_checked_without_being_sent(server, make):
    with pytest.raises(ProviderResponseError, match="8 dimensions, expected 16"):
        make().embed(["x"], MODEL, expect_dimensions=16)
    assert "dimensions" not in server.embedding_requests[0].body


def test_every_batch_must_match_the_first(server, make):
    server.fail_next("ok")
    server.fail_next("wrong_dimension")
    with pytest.raises(ProviderResponseError, match="7 dimensions, expected 8"):
        make(batch_size=2).embed(texts(4), MODEL)


def test_strings_are_not_lists_of_strings(make):
    with pytest.raises(TypeError):
        make().embed("one text", MODEL)


def test_empty_input_list_makes_no_call(server, make):
    result = make().embed([], MODEL)
    assert result.vectors == [] and result.calls == 0 and server.requests == []


# ── retries ─────────────────────────────────────────────────────────────────────


def test_429_waits_for_retry_after_then_succeeds(server, make, fake_time):
    server.fail_next("429", retry_after="7")
    result = make().embed(texts(3), MODEL)
    assert fake_time.sleeps == [7.0]
    assert result.calls == 2 and all(v is not None for v in result.vectors)


def test_429_with_an_http_date_retry_after(server, make, fake_time):
    when = datetime.now(UTC) + timedelta(seconds=30)
    server.fail_next("429", retry_after=format_datetime(when, usegmt=True))
    make().embed(texts(1), MODEL)
    assert len(fake_time.sleeps) == 1 and 27 <= fake_time.sleeps[0] <= 30


def test_parse_retry_after():
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after("Wed, 01 Jan 2025 12:00:10 GMT", now=lambda: now) == 10.0
    assert parse_retry_after("Wed, 01 Jan 2025 11:00:00 GMT", now=lambda: now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert parse_retry_after("-4") == 0.0


def test_backoff_grows_with_jitter_and_a_cap():
    for retry, low, high in [(1, 0.25, 0.5), (2, 0.5, 1.0), (3, 1.0, 2.0), (20, 15.0, 30.0)]:
        delays = [backoff_delay(retry, None) for _ in range(50)]
        assert all(low <= d <= high for d in delays)
        assert len(set(delays)) > 1  # jittered
    assert backoff_delay(3, 12.0) == 12.0


def test_500_and_a_dropped_connection_are_retried(server, make, fake_time):
    server.fail_next("500")
    server.fail_next("drop")
    result = make().embed(texts(2), MODEL)
    assert result.calls == 3 and all(v is not None for v in result.vectors)
    assert len(fake_time.sleeps) == 2
    assert 0.25 <= fake_time.sleeps[0] <= 0.5 and 0.5 <= fake_time.sleeps[1] <= 1.0


def test_retries_run_out(server, make, fake_time):
    server.fail_next("503", times=10)
    with pytest.raises(ProviderUnavailableError) as caught:
        make(max_retries=2).embed(texts(2), MODEL)
    message = str(caught.value)
    assert "'fake'" in message and MODEL in message and "HTTP 503" in message and "3 attempts" in message
    assert caught.value.status == 503 and len(server.requests) == 3 and len(fake_time.sleeps) == 2


def test_retries_stop_at_the_time_budget(server, make, fake_time):
    server.fail_next("429", times=10, retry_after="4")
    with pytest.raises(ProviderUnavailableError, match="retry budget"):
        make(max_retries=10, retry_budget=10).embed(texts(1), MODEL)
    assert fake_time.sleeps == [4.0, 4.0] and len(server.requests) == 3


def test_a_retry_after_beyond_the_budget_gives_up_at_once(server, make, fake_time):
    server.fail_next("429", retry_after="3600")
    with pytest.raises(ProviderUnavailableError, match="429"):
        make().embed(texts(1), MODEL)
    assert fake_time.sleeps == [] and len(server.requests) == 1


def test_a_stalled_server_times_out_and_is_retried(server, make, fake_time):
    server.fail_next("stall", seconds=1.5)
    result = make(timeout=0.3).embed(texts(2), MODEL)
    assert result.calls == 2 and all(v is not None for v in result.vectors)
    assert len(fake_time.sleeps) == 1


def test_a_server_that_keeps_stalling_gives_a_clear_error(server, make):
    server.fail_next("stall", times=2, seconds=1.0)
    with pytest.raises(ProviderUnavailableError, match=r"no answer within 0\.3 s"):
        make(timeout=0.3, max_retries=1).embed(texts(1), MODEL)


def test_nothing_listening_is_named_at_once():
    """A refused connection is not a busy server: no retry, no wait, one line."""
    with FakeOpenAI() as gone:
        url = gone.base_url
    waits: list[float] = []
    provider = OpenAICompatProvider("down", ProviderSettings(base_url=url, max_retries=2), sleep=waits.append)
    with provider, pytest.raises(ProviderUnavailableError, match=r"could not connect .*connection refused; is the"):
        provider.embed(["x"], MODEL)
    assert waits == []


# ── errors that are final at once ───────────────────────────────────────────────


def test_401_fails_at_once_and_never_shows_the_key(server, make, fake_time, caplog):
    caplog.set_level(logging.DEBUG)
    server.api_key = "the-right-key"
    server.fail_next("503", message=f"backend rejected {KEY}")  # a retry, so something gets logged
    provider = make(api_key=KEY)
    with pytest.raises(ProviderAuthError) as caught:
        provider.embed(texts(2), MODEL)
    error = caught.value
    assert len(server.requests) == 2 and len(fake_time.sleeps) == 1
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    assert "'fake'" in str(error) and MODEL in str(error) and "HTTP 401" in str(error)
    assert "***" in str(error)  # the server echoed the key; it was masked
    for text in (str(error), repr(error), repr(error.args), repr(provider), repr(provider.settings)):
        assert KEY not in text
    assert caplog.records, "expected the retry to be logged"
    assert KEY not in caplog.text
    assert all(KEY not in record.getMessage() for record in caplog.records)


def test_403_fails_at_once(server, make):
    server.fail_next("403")
    with pytest.raises(ProviderAuthError, match="HTTP 403"):
        make().embed(["x"], MODEL)
    assert len(server.requests) == 1


def test_404_fails_at_once_naming_provider_and_model(server, make, fake_time):
    server.fail_next("404")
    with pytest.raises(ProviderNotFoundError) as caught:
        make(api_key=KEY).embed(["x"], "no-such-model")
    assert "'fake'" in str(caught.value) and "no-such-model" in str(caught.value)
    assert KEY not in str(caught.value)
    assert len(server.requests) == 1 and fake_time.sleeps == []


def test_a_model_the_server_does_not_know(server, make):
    server.known_models = {MODEL}
    with pytest.raises(ProviderNotFoundError, match="bge-m3"):
        make().embed(["x"], "bge-m3")


def test_401_without_a_key_says_none_is_set(server, make):
    server.fail_next("401")
    with pytest.raises(ProviderAuthError, match=r"wants an API key and none is set .*check api_key \(or api_key_env\)"):
        make().embed(["x"], MODEL)
    server.fail_next("401")
    with pytest.raises(ProviderAuthError, match="check the environment variable MY_KEY or api_key"):
        make(api_key_env="MY_KEY").embed(["x"], MODEL)


def test_other_4xx_is_a_request_error_not_retried(server, make):
    server.fail_next("400", message="dimensions is not supported by this model")
    with pytest.raises(ProviderRequestError, match="not supported"):
        make().embed(["x"], MODEL, dimensions=3)
    assert len(server.requests) == 1


# ── malformed responses ─────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("nested", "one vector per token .* --pooling mean"),
        ("base64", "base64"),
        ("error_200", "answered with an error: something went wrong"),
        ("html", "a web page, not JSON; is http://127.0.0.1:\\d+/v1 the API root"),
    ],
)
def test_answers_every_input_would_get_are_clear_errors_at_once(server, make, kind, expected):
    server.fail_next(kind)
    with pytest.raises(ProviderResponseError, match=expected) as caught:
        make().embed(texts(3), MODEL, dimensions=8)
    assert "'fake'" in str(caught.value) and MODEL in str(caught.value)
    assert len(server.requests) == 1  # not retried, not split: every input would get the same


def test_vectors_of_the_wrong_dimension_fail_their_inputs_without_another_call(server, make):
    server.fail_next("wrong_dimension")
    with pytest.raises(
        InvalidVectorError, match=r"'fake', model '.*': the vector for input 0 has 7 dimensions, expected 8"
    ) as caught:
        make().embed(texts(3), MODEL, dimensions=8)
    assert caught.value.index == 0 and len(server.requests) == 1


@pytest.mark.parametrize(("kind", "reason"), [("nan", "NaN or infinity"), ("zero", "all zeros")])
def test_a_bad_vector_fails_only_its_input(server, make, kind, reason):
    inputs = texts(4)
    server.fail_next(kind, index=2)
    with pytest.raises(InvalidVectorError, match=f"input 2 .*{reason}") as caught:
        make().embed(inputs, MODEL)
    assert caught.value.index == 2
    server.fail_next(kind, index=2)
    result = make().embed(inputs, MODEL, on_input_error="collect")
    assert [f.index for f in result.failures] == [2] and result.vectors[2] is None
    assert all(result.vectors[i] == FakeOpenAI.vector_for(inputs[i], 8) for i in (0, 1, 3))


# ── batches that are too large ──────────────────────────────────────────────────


def test_413_splits_the_batch(server, make):
    server.max_batch_inputs = 30
    inputs = texts(100)
    result = make().embed(inputs, MODEL)
    sizes = [len(r.inputs) for r in server.embedding_requests]
    assert sizes == [100, 50, 25, 25, 50, 25, 25] and result.calls == 7
    assert result.vectors == [FakeOpenAI.vector_for(t, 8) for t in inputs]


def test_a_single_413_from_the_script_splits_too(server, make):
    server.fail_next("413")
    result = make().embed(texts(4), MODEL)
    assert [len(r.inputs) for r in server.embedding_requests] == [4, 2, 2]
    assert all(v is not None for v in result.vectors)


def test_one_over_long_input_fails_alone(server, make):
    server.max_input_chars = 100
    inputs = texts(10)
    inputs[6] = "long " * 100
    result = make().embed(inputs, MODEL, on_input_error="collect")
    assert [f.index for f in result.failures] == [6]
    failure = result.failures[0].error
    assert isinstance(failure, InputTooLargeError) and failure.index == 6 and failure.chars == 500
    assert "input 6 (500 characters) is too long" in str(failure) and "maximum context length" in str(failure)
    assert result.vectors[6] is None
    assert all(result.vectors[i] == FakeOpenAI.vector_for(inputs[i], 8) for i in range(10) if i != 6)
    with pytest.raises(InputTooLargeError) as caught:
        make().embed(inputs, MODEL)
    assert caught.value.index == 6


def test_a_context_length_error_on_one_input(server, make):
    server.fail_next("context")
    with pytest.raises(InputTooLargeError, match=r"input 0 .*maximum context length"):
        make().embed(["x"], MODEL)
    assert len(server.requests) == 1


def test_llama_cpp_too_large_500_splits_instead_of_retrying(server, make, fake_time):
    server.fail_next("500", message="input is too large to process. increase the physical batch size")
    result = make().embed(texts(2), MODEL)
    assert [len(r.inputs) for r in server.embedding_requests] == [2, 1, 1]
    assert fake_time.sleeps == [] and all(v is not None for v in result.vectors)


def test_empty_inputs_fail_alone_and_are_never_sent(server, make):
    result = make().embed(["one", "", "  ", "four"], MODEL, on_input_error="collect")
    assert [f.index for f in result.failures] == [1, 2]
    assert all(isinstance(f.error, EmptyInputError) for f in result.failures)
    assert server.embedding_requests[0].inputs == ["one", "four"]
    with pytest.raises(EmptyInputError):
        make().embed(["one", ""], MODEL)


# ── usage, models, settings and keys ────────────────────────────────────────────


def test_usage_callback_once_per_successful_call(server, make):
    seen: list[dict] = []
    server.fail_next("429", retry_after="0")
    result = make(on_usage=seen.append).embed(texts(150), MODEL)
    assert result.calls == 3 and len(seen) == 2
    assert [u["inputs"] for u in seen] == [100, 50]
    assert all(u["role"] == "embedding" and u["provider"] == "fake" and u["model"] == MODEL for u in seen)
    assert sum(u["prompt_tokens"] for u in seen) == result.prompt_tokens == result.total_tokens


def test_list_models_and_the_tolerant_embedding_filter(server, make):
    models = make().list_models()
    assert models == [
        ModelInfo("text-embedding-3-small", None),
        ModelInfo("nomic-embed-text", "embedding"),
        ModelInfo("llama3.2", "chat"),
        ModelInfo("gpt-4o-mini", "chat"),
        ModelInfo("mystery", None),
    ]
    assert [m.id for m in embedding_candidates(models)] == ["nomic-embed-text", "text-embedding-3-small", "mystery"]
    assert server.requests[0].method == "GET" and server.requests[0].path == "/v1/models"


def test_list_models_errors_name_the_provider(server, make):
    server.fail_next("401")
    with pytest.raises(ProviderAuthError, match="provider 'fake'"):
        make().list_models()


def test_list_models_rejects_a_shapeless_answer(server, make):
    server.fail_next("malformed_json")
    with pytest.raises(ProviderResponseError, match="not JSON"):
        make().list_models()
    server.fail_next("error_200", message="models are sleeping")
    with pytest.raises(ProviderResponseError, match="answered with an error: models are sleeping"):
        make().list_models()
    server.models = [{"object": "model"}, "bare-id", {"name": "named", "type": "embedding"}]
    assert make().list_models() == [ModelInfo("bare-id"), ModelInfo("named", "embedding")]


def test_env_key_beats_the_config_key(server, make, monkeypatch):
    monkeypatch.setenv("KBDESK_TEST_KEY", "key-from-env")
    settings = ProviderSettings(api_key_env="KBDESK_TEST_KEY", api_key="key-from-file")
    assert resolve_api_key(settings) == "key-from-env"
    make(api_key_env="KBDESK_TEST_KEY", api_key="key-from-file").embed(["x"], MODEL)
    assert server.requests[0].headers["authorization"] == "Bearer key-from-env"
    monkeypatch.setenv("KBDESK_TEST_KEY", "")
    assert resolve_api_key(settings) == "key-from-file"
    assert resolve_api_key(ProviderSettings()) is None


def test_preset_key_variables_only_go_to_their_own_service(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "openai-env")
    assert resolve_api_key(ProviderSettings(kind="openai")) == "openai-env"
    assert resolve_api_key(ProviderSettings(kind="openai", base_url="https://api.openai.com/v1/")) == "openai-env"
    assert resolve_api_key(ProviderSettings(kind="openai", base_url="http://127.0.0.1:9/v1")) is None
    assert resolve_api_key(ProviderSettings(kind="ollama")) is None


def test_no_key_means_no_authorization_header(server, make):
    make().embed(["x"], MODEL)
    assert "authorization" not in server.requests[0].headers


def test_settings_are_validated():
    with pytest.raises(ConfigError, match="batch_size"):
        ProviderSettings(batch_size=101)
    with pytest.raises(ConfigError, match="base_url"):
        ProviderSettings(base_url="localhost:11434")
    with pytest.raises(ProviderConfigError, match="needs a base_url"):
        OpenAICompatProvider("mine", ProviderSettings(kind="custom"))
    provider = OpenAICompatProvider("local", ProviderSettings(kind="ollama"))
    assert provider.base_url == "http://localhost:11434/v1"
    provider.close()
    assert issubclass(ProviderAuthError, KbdeskError)


def test_write_config_file_is_private_and_atomic(tmp_path):
    path = tmp_path / "conf" / "config.toml"
    write_config_file(path, '[providers.openai]\napi_key = "x"\n')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    path.chmod(0o644)
    write_config_file(path, "# replaced\n")
    assert path.read_text() == "# replaced\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml"]
