"""``kbdesk model list|set|show``: the TUI's model-role picker, from the command line.

A provider is a real HTTP server on loopback (``fake_openai``), which lists typed,
untyped and embedding models as OpenAI, Ollama, LM Studio and llama.cpp do.
"""

import json
import socket
import tomllib

import pytest
from click.testing import CliRunner

from kbdesk.cli.main import cli
from kbdesk.paths import get_paths


@pytest.fixture
def run():
    runner = CliRunner()

    def invoke(*args):
        result = runner.invoke(cli, list(args))
        assert "Traceback" not in result.output
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke


def write_config(text: str) -> None:
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def provider(name: str, url: str) -> str:
    return f'[providers.{name}]\nkind = "custom"\nbase_url = "{url}"\nmax_retries = 0\ntimeout = 5.0\n\n'


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_list_marks_what_suits_chat_and_embeddings_and_which_role_uses_which(run, fake_openai):
    write_config(
        '[roles.embedding]\nprovider = "lab"\nmodel = "nomic-embed-text"\n\n' + provider("lab", fake_openai.base_url)
    )
    body = json.loads(run("model", "list", "--json").stdout)
    rows = {r["model"]: r for r in body["data"]}
    assert body["errors"] == [] and set(rows) == {
        "text-embedding-3-small",
        "nomic-embed-text",
        "llama3.2",
        "gpt-4o-mini",
        "mystery",
    }
    assert (rows["llama3.2"]["chat"], rows["llama3.2"]["embedding"]) == (True, False)
    assert (rows["nomic-embed-text"]["chat"], rows["nomic-embed-text"]["embedding"]) == (False, True)
    assert rows["mystery"]["type"] is None and rows["mystery"]["chat"] and rows["mystery"]["embedding"]
    assert rows["nomic-embed-text"]["roles"] == ["embedding"] and rows["llama3.2"]["roles"] == []
    table = run("model", "list").stdout
    assert "llama3.2" in table and "embedding" in table and "server does not say" in table


def test_set_writes_the_role_and_show_and_list_reflect_it(run, fake_openai):
    write_config(
        '[roles.embedding]\nprovider = "lab"\nmodel = "nomic-embed-text"\n\n' + provider("lab", fake_openai.base_url)
    )
    r = run("model", "set", "chat", "lab", "llama3.2")
    assert r.exit_code == 0 and "chat model: llama3.2 via lab" in r.stdout
    saved = tomllib.loads(get_paths().config_file.read_text())
    assert saved["roles"]["chat"] == {"provider": "lab", "model": "llama3.2"}
    assert saved["roles"]["embedding"] == {"provider": "lab", "model": "nomic-embed-text"}  # untouched
    assert get_paths().config_file.stat().st_mode & 0o777 == 0o600  # the TUI's writer: it may hold keys
    shown = json.loads(run("model", "show", "--json").stdout)
    assert shown["roles"]["chat"] == {"provider": "lab", "model": "llama3.2"}
    assert shown["chat"]["retrieval"] == "auto"
    assert "chat: llama3.2 via lab" in run("model", "show").stdout
    rows = {r["model"]: r for r in json.loads(run("model", "list", "--json").stdout)["data"]}
    assert rows["llama3.2"]["roles"] == ["chat"]
    run("model", "set", "embedding", "lab", "text-embedding-3-small")
    saved = tomllib.loads(get_paths().config_file.read_text())
    assert saved["roles"]["embedding"]["model"] == "text-embedding-3-small" and saved["roles"]["chat"]


def test_errors_are_one_line_and_a_provider_that_is_down_does_not_hide_the_others(run, fake_openai):
    write_config(provider("lab", fake_openai.base_url) + provider("gone", closed_port_url()))
    r = run("model", "set", "chat", "nowhere", "llama3.2")
    assert r.exit_code == 1 and "no provider named 'nowhere'" in r.stderr and len(r.stderr.splitlines()) == 1
    r = run("model", "list")
    assert r.exit_code == 1 and "llama3.2" in r.stdout
    errors = [line for line in r.stderr.splitlines() if line]
    assert len(errors) == 1 and errors[0].startswith("error: ") and "gone" in errors[0]
    r = run("model", "list", "--provider", "lab")
    assert r.exit_code == 0 and r.stderr == ""
    r = run("model", "list", "--provider", "missing")
    assert r.exit_code == 1 and "no provider named 'missing'" in r.stderr


def test_the_tui_picker_and_the_cli_share_one_listing():
    from kbdesk.providers import models
    from kbdesk.tui import services

    assert services.list_models is models.list_models and services.role_candidates is models.role_candidates
    assert services.save_roles is models.save_roles
