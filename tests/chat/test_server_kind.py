"""Which server a provider's URL answers like, and the warning when it is registered as
another kind (``kbdesk provider test``, ``kbdesk doctor``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from kbdesk.cli.main import cli
from kbdesk.paths import get_paths
from kbdesk.providers.server_kind import detect, mismatch
from kbdesk.providers.settings import ProviderSettings

MODELS = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "library"}]}
SERVERS: dict[str, dict[tuple[str, str], Any]] = {
    "llamacpp": {("GET", "/props"): {"default_generation_settings": {"n_ctx": 4096}}},
    "llama-cpp-python": {
        ("GET", "/v1/models"): {
            "object": "list",
            "data": [{"id": "m", "object": "model", "owned_by": "me", "permissions": []}],
        },
        ("GET", "/openapi.json"): {"info": {"title": "🦙 llama.cpp Python API"}},
    },
    "ollama": {("GET", "/api/version"): {"version": "0.5.7"}},
    "lmstudio": {("GET", "/api/v0/models"): {"data": [{"id": "m", "type": "llm", "state": "loaded"}]}},
    "vllm": {("GET", "/v1/models"): {"data": [{"id": "m", "owned_by": "vllm", "max_model_len": 8192}]}},
}


def _serve(server, kind: str) -> None:
    server.routes[("GET", "/v1/models")] = (200, MODELS)
    for route, body in SERVERS.get(kind, {}).items():
        server.routes[route] = (200, body)


@pytest.mark.parametrize("kind", list(SERVERS))
def test_each_server_is_told_by_its_own_sign(chat_server, kind):
    _serve(chat_server, kind)
    found = detect("x", ProviderSettings(kind="custom", base_url=chat_server.base_url))
    assert found is not None and found.kind == kind


def test_an_unknown_server_is_no_kind(chat_server):
    _serve(chat_server, "none")
    assert detect("x", ProviderSettings(kind="custom", base_url=chat_server.base_url)) is None
    assert mismatch("x", ProviderSettings(kind="custom", base_url=chat_server.base_url), None) is None


def test_the_warning_says_what_fits(chat_server):
    _serve(chat_server, "llama-cpp-python")
    settings = ProviderSettings(kind="llamacpp", base_url=chat_server.base_url)
    found = detect("py", settings)
    said = mismatch("py", settings, found)
    assert said is not None
    assert said.startswith("'py' is registered as kind llamacpp (llama.cpp's llama-server), but answers like")
    assert "kbdesk provider add py --kind custom --base-url URL" in said
    assert mismatch("py", ProviderSettings(kind="custom", base_url=chat_server.base_url), found) is None
    _serve(chat_server, "llamacpp")
    found = detect("ls", ProviderSettings(kind="custom", base_url=chat_server.base_url))
    said = mismatch("ls", ProviderSettings(kind="custom", base_url=chat_server.base_url), found)
    assert said is not None
    assert "answers like llama.cpp's llama-server" in said and "--kind llamacpp would fit it" in said


def test_provider_test_and_doctor_warn_about_the_wrong_kind(chat_server):
    _serve(chat_server, "llama-cpp-python")
    config = get_paths().config_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[providers.py]\nkind = "llamacpp"\nbase_url = "{chat_server.base_url}"\n\n'
        '[roles.chat]\nprovider = "py"\nmodel = "m"\n'
    )
    runner = CliRunner()
    tested = runner.invoke(cli, ["provider", "test", "py"])
    assert tested.exit_code == 0, tested.output
    assert "it answers like llama-cpp-python's server" in tested.stdout
    assert "warning: 'py' is registered as kind llamacpp" in tested.stderr
    body = json.loads(runner.invoke(cli, ["provider", "test", "py", "--json"]).stdout)
    assert body["answers_like"] == "llama-cpp-python" and "--kind custom" in body["kind_mismatch"]
    doctor = runner.invoke(cli, ["doctor"])
    assert doctor.exit_code == 0, doctor.output
    assert "warning: 'py' is registered as kind llamacpp" in doctor.stderr
    report = json.loads(runner.invoke(cli, ["doctor", "--json"]).stdout)
    assert report["providers"]["py"] == {
        "kind": "llamacpp",
        "answers_like": "llama-cpp-python",
        "kind_mismatch": report["warnings"][0],
    }


def test_provider_add_says_when_nothing_answers_on_the_kinds_default_port(kbdesk_home, monkeypatch, chat_server):
    """llama-cpp-python (port 8000) registered as --kind llamacpp without --base-url: the
    kind's default port answers nothing, and the server that does answer is named."""
    import socket

    from kbdesk.providers.settings import DEFAULT_BASE_URLS

    with socket.socket() as sock:  # a port nobody listens on, as llamacpp's default here
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setitem(DEFAULT_BASE_URLS, "llamacpp", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setitem(DEFAULT_BASE_URLS, "vllm", chat_server.base_url)  # something on "8000"
    result = CliRunner().invoke(cli, ["provider", "add", "pyllama", "--kind", "llamacpp"])
    assert result.exit_code == 0  # saved all the same: the server may be started later
    said = " ".join(result.stderr.split())
    assert f"warning: nothing answers at http://127.0.0.1:{port}/v1 (the llamacpp kind's default)" in said
    assert f"something answers at {chat_server.base_url} (the vllm kind's)" in said
    assert "--kind custom --base-url http://127.0.0.1:8000/v1" in said
    quiet = CliRunner().invoke(cli, ["provider", "add", "v", "--kind", "vllm"])
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr
    as_json = json.loads(CliRunner().invoke(cli, ["provider", "add", "p", "--kind", "llamacpp", "--json"]).stdout)
    assert as_json["warning"].startswith("nothing answers at")
