"""A chat model's context window, asked of the server the way each server says it.

The scripted server answers each server's endpoint with the shape its docs give
(llama.cpp ``/props``, Ollama ``/api/show`` and ``/api/ps``, LM Studio ``/api/v1/models``
and ``/api/v0/models``, vLLM ``/v1/models``); the base URL ends in ``/v1`` as configured.
"""

from __future__ import annotations

import socket
import time

import pytest

from kbdesk.providers.context import OLLAMA_DEFAULT_CTX, context_window, forget_context_windows
from kbdesk.providers.settings import ProviderKind, ProviderSettings


@pytest.fixture(autouse=True)
def fresh_cache():
    forget_context_windows()
    yield
    forget_context_windows()


def window(server, kind: ProviderKind, model: str = "tiny", **kwargs) -> int | None:
    return context_window("local", ProviderSettings(kind=kind, base_url=server.base_url), model, **kwargs)


def asked(server) -> list[str]:
    return [r.path for r in server.requests]


def ollama_show(num_ctx: int | None = None, trained: int = 131072) -> dict:
    parameters = 'stop "<|eot_id|>"' + (f"\nnum_ctx {num_ctx}" if num_ctx else "")
    return {"parameters": parameters, "model_info": {"general.architecture": "llama", "llama.context_length": trained}}


def test_llama_cpp_props(chat_server):
    chat_server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1})
    assert window(chat_server, "llamacpp") == 8192
    assert asked(chat_server) == ["/props"]  # at the root, not under /v1


@pytest.mark.parametrize(
    ("show", "running", "expected"),
    [
        (ollama_show(num_ctx=8192), None, 8192),  # the model sets num_ctx
        (ollama_show(num_ctx=8192, trained=4096), None, 4096),  # never more than it was trained for
        (ollama_show(), {"name": "tiny", "context_length": 32768}, 32768),  # what the loaded model runs with
        (ollama_show(), None, OLLAMA_DEFAULT_CTX),  # else Ollama's default
        (ollama_show(trained=2048), None, 2048),
    ],
)
def test_ollama_show_and_ps(chat_server, show, running, expected):
    chat_server.routes[("POST", "/api/show")] = (200, show)
    chat_server.routes[("GET", "/api/ps")] = (200, {"models": [running] if running else []})
    assert window(chat_server, "ollama") == expected
    assert chat_server.requests[0].path == "/api/show" and chat_server.requests[0].body["model"] == "tiny"


def test_lm_studio_loaded_instance_then_max(chat_server):
    models = {
        "models": [
            {
                "type": "llm",
                "key": "tiny",
                "max_context_length": 32768,
                "loaded_instances": [{"id": "tiny", "config": {"context_length": 4096}}],
            }
        ]
    }
    chat_server.routes[("GET", "/api/v1/models")] = (200, models)
    assert window(chat_server, "lmstudio") == 4096
    forget_context_windows()
    models["models"][0]["loaded_instances"] = []
    assert window(chat_server, "lmstudio") == 32768


def test_lm_studio_before_0_4_has_only_v0(chat_server):
    chat_server.routes[("GET", "/api/v0/models")] = (
        200,
        {
            "object": "list",
            "data": [
                {"id": "other", "max_context_length": 2048},
                {"id": "tiny", "type": "llm", "state": "not-loaded", "max_context_length": 131072},
            ],
        },
    )
    assert window(chat_server, "lmstudio") == 131072


def test_vllm_models_list(chat_server):
    chat_server.routes[("GET", "/v1/models")] = (
        200,
        {"object": "list", "data": [{"id": "tiny", "object": "model", "max_model_len": 16384}]},
    )
    assert window(chat_server, "vllm") == 16384


def test_a_custom_server_is_asked_every_way_until_one_answers(chat_server):
    chat_server.routes[("POST", "/api/show")] = (200, ollama_show(num_ctx=6144))
    assert window(chat_server, "custom") == 6144
    assert "/api/show" in asked(chat_server)


def test_the_kind_is_asked_first(chat_server):
    chat_server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 1000}})
    chat_server.routes[("GET", "/v1/models")] = (200, {"data": [{"id": "tiny", "max_model_len": 2000}]})
    assert window(chat_server, "vllm") == 2000 and asked(chat_server) == ["/v1/models"]


def test_nothing_said_is_none_and_answers_are_cached(chat_server):
    assert window(chat_server, "custom") is None  # llama-cpp-python: no endpoint says its n_ctx
    chat_server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 8192}})
    assert window(chat_server, "custom") is None  # a failure is remembered for a while
    forget_context_windows()
    assert window(chat_server, "llamacpp") == 8192
    before = len(chat_server.requests)
    assert window(chat_server, "llamacpp") == 8192 and len(chat_server.requests) == before
    assert window(chat_server, "llamacpp", model="other") == 8192 and len(chat_server.requests) == before + 1


@pytest.mark.parametrize(
    "body",
    [
        {"default_generation_settings": {"n_ctx": "big"}},
        ["not", "an", "object"],
        {"default_generation_settings": {"n_ctx": -1}},
    ],
)
def test_odd_answers_are_none(chat_server, body):
    chat_server.routes[("GET", "/props")] = (200, body)
    assert window(chat_server, "llamacpp") is None


def test_a_server_that_never_answers_costs_at_most_the_timeout():
    with socket.socket() as sock:  # accepts connections, never reads them
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        settings = ProviderSettings(kind="custom", base_url=f"http://127.0.0.1:{sock.getsockname()[1]}/v1")
        started = time.monotonic()
        assert context_window("mute", settings, "tiny", timeout=1.0) is None
    assert time.monotonic() - started < 3.0


def test_local_and_hosted_kinds(chat_server):
    assert context_window("st", ProviderSettings(kind="local"), "all-MiniLM-L6-v2") is None
    chat_server.routes[("GET", "/v1/models")] = (200, {"data": [{"id": "tiny", "context_length": 200000}]})
    assert window(chat_server, "openrouter") == 200000 and asked(chat_server) == ["/v1/models"]


# ── what kind of model each is, where /models does not say ─────────────────────
def listed(server, kind: str) -> dict[str, str | None]:
    from kbdesk.config import parse_config
    from kbdesk.providers.models import list_models

    config = parse_config({"providers": {"local": {"kind": kind, "base_url": server.base_url}}})
    return {m.id: m.model_type for m in list_models(config, "local")}


def test_ollama_families_tell_embedding_models_from_chat_models(chat_server):
    chat_server.routes[("GET", "/v1/models")] = (
        200,
        {
            "object": "list",
            "data": [
                {"id": "nomic-embed-text:latest", "object": "model"},
                {"id": "llama3.2:3b", "object": "model"},
                {"id": "mystery:1b", "object": "model"},
            ],
        },
    )
    chat_server.routes[("GET", "/api/tags")] = (
        200,
        {
            "models": [
                {
                    "name": "nomic-embed-text:latest",
                    "model": "nomic-embed-text:latest",
                    "details": {"family": "nomic-bert", "families": ["nomic-bert"]},
                },
                {"name": "llama3.2:3b", "model": "llama3.2:3b", "details": {"family": "llama", "families": ["llama"]}},
                {"name": "mystery:1b", "model": "mystery:1b", "details": {}},
            ]
        },
    )
    assert listed(chat_server, "ollama") == {
        "nomic-embed-text:latest": "embedding",
        "llama3.2:3b": "chat",
        "mystery:1b": None,
    }  # no family: not guessed here


def test_lm_studio_types_from_its_own_listing(chat_server):
    chat_server.routes[("GET", "/v1/models")] = (
        200,
        {
            "object": "list",
            "data": [{"id": "text-embedding-granite", "object": "model"}, {"id": "qwen3-4b", "object": "model"}],
        },
    )
    chat_server.routes[("GET", "/api/v0/models")] = (
        200,
        {
            "object": "list",
            "data": [{"id": "text-embedding-granite", "type": "embeddings"}, {"id": "qwen3-4b", "type": "llm"}],
        },
    )
    assert listed(chat_server, "lmstudio") == {"text-embedding-granite": "embedding", "qwen3-4b": "chat"}


def test_a_server_without_native_endpoints_leaves_models_untyped(chat_server):
    chat_server.routes[("GET", "/v1/models")] = (200, {"object": "list", "data": [{"id": "tiny", "object": "model"}]})
    assert listed(chat_server, "llamacpp") == {"tiny": None}
