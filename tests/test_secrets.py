"""Credentials never leak: not into messages, logs, JSON output or the database.

A canary: a real loopback server (tests/fake_openai.py) configured by hand at
``http://canaryuser:CANARYSECRET@127.0.0.1:PORT/v1``. The server insists on those
credentials (so they are really sent) and echoes them back in every way a server can:
the Authorization header in a 401, all headers in a 400 (JSON or plain text), the URL
and password in an error message, the header in a retried 500. Real ingestions through
``desk.add`` and the CLI then must not show ``CANARYSECRET`` or the base64 of
``canaryuser:CANARYSECRET`` anywhere: output, exceptions, log lines, or the bytes of
the SQLite file and its WAL.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fake_openai import FakeOpenAI
from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.cli.main import cli
from kbdesk.errors import InvalidInputError
from kbdesk.paths import get_paths
from kbdesk.providers import ProviderRequestError, ProviderSettings
from kbdesk.providers.chat import ChatClient
from kbdesk.providers.secrets import Redactor
from kbdesk.providers.settings import check_base_url

USER, SECRET = "canaryuser", "CANARYSECRET"
BASIC = base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
CANARIES = (SECRET, BASIC, BASIC.rstrip("="), SECRET.lower())
MODEL = "nomic-embed-text"

# each file trips the server in its own way (the marker is in the file's text)
ECHOES = {
    "ok.txt": ("a plain document about lighthouses", None),
    "auth.txt": ("ECHO-401 the server echoes the Authorization header it got", "401"),
    "headers.txt": ("ECHO-HEADERS the server repeats every header", "echo_headers"),
    "text.txt": (
        "ECHO-TEXT a plain-text answer with the headers in it",
        ("echo_headers", {"status": 200, "text": True}),
    ),
    "url.txt": (
        "ECHO-URL the server repeats the URL and the password",
        ("400", {"message": f"proxy refused http://{USER}:{SECRET}@127.0.0.1/v1 (password {SECRET})"}),
    ),
    "retry.txt": (
        "ECHO-500 a retried error that names the header",
        ("500", {"message": f"upstream said Authorization: Basic {BASIC} is rate limited"}),
    ),
    "inbody.txt": ("ECHO-200 an error object with a 200", ("error_200", {"message": f"bad key {SECRET}"})),
}


def assert_clean(text: str, where: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"{canary!r} leaked into {where}: {text!r}"


@pytest.fixture
def server():
    with FakeOpenAI(dimensions=8) as fake:
        fake.api_key = f"Basic {BASIC}"  # every request without the URL's credentials is refused
        fake.poison = {text.split()[0]: rule for text, rule in ECHOES.values() if rule}
        yield fake


@pytest.fixture
def canary_config(server, kbdesk_home):
    port = server.base_url.split(":")[2].split("/")[0]
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[providers.canary]\nkind = "custom"\nbase_url = "http://{USER}:{SECRET}@127.0.0.1:{port}/v1"\n'
        "max_retries = 1\nretry_budget = 5.0\ntimeout = 5.0\n"
    )
    return path


@pytest.fixture
def corpus(tmp_path):
    return write_files(tmp_path / "corpus", {name: text for name, (text, _) in ECHOES.items()})


def database_bytes(home: Path) -> bytes:
    """Every byte kbdesk keeps under ``home`` except config.toml (where the user put the URL)."""
    files = [p for p in home.rglob("*") if p.is_file() and p.name != "config.toml"]
    assert any(p.name.endswith(".db") for p in files), files
    return b"".join(p.read_bytes() for p in files)


def assert_sent_and_echoed(server: FakeOpenAI) -> None:
    """The canary was really in play: sent on every request (so the echoes held it)."""
    assert server.embedding_requests
    assert all(r.headers["authorization"] == f"Basic {BASIC}" for r in server.embedding_requests)
    assert all(USER not in r.path for r in server.requests)


def test_an_ingestion_through_desk_add_leaks_nothing(server, canary_config, corpus, kbdesk_home, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    errors: dict[str, str] = {}
    with open_desk() as desk:
        desk.create_kb("k", model_id=MODEL, provider="canary")
        for name in ECHOES:  # one add per file: each failure is its own
            report = desk.add("k", [corpus / name])
            errors.update(dict(report.failed))
        docs = {d.filename: d for d in desk.store.list_documents(desk.kb("k").id)}
        assert docs["ok.txt"].status == "ready"
        assert set(errors) == set(ECHOES) - {"ok.txt"}  # every other file failed, with a message
        assert all(docs[name].status == "error" and docs[name].error for name in errors)
        stored = [docs[name].error for name in errors]
        with pytest.raises(ProviderRequestError) as caught:  # and a direct call's exception
            desk.embedders.provider("canary").embed([ECHOES["headers.txt"][0]], MODEL)
    assert_sent_and_echoed(server)
    # the echoes arrived and were masked (a test that could not fail would prove nothing)
    assert "Basic ***" in errors["auth.txt"] and "Basic ***" in errors["headers.txt"]
    assert "http://***@127.0.0.1" in errors["url.txt"] and "password ***" in errors["url.txt"]
    assert "Basic ***" in errors["text.txt"] and "not JSON" in errors["text.txt"]
    assert "Basic ***" in caplog.text  # the retried 500 was logged, masked
    for text, where in [
        *((e, f"report error of {n}") for n, e in errors.items()),
        *((e, "kb_documents.error") for e in stored),
        (str(caught.value), "exception"),
        (repr(caught.value.args), "exception args"),
        (caplog.text, "log"),
        *((r.getMessage(), "log record") for r in caplog.records),
    ]:
        assert_clean(text, where)
    out = capsys.readouterr()
    assert_clean(out.out + out.err, "stdout/stderr")
    assert_clean(database_bytes(kbdesk_home).decode("latin-1"), "the database files")


def test_cli_runs_leak_nothing(server, canary_config, corpus, kbdesk_home, caplog):
    caplog.set_level(logging.DEBUG)
    runner = CliRunner()
    outputs: list[str] = []

    def run(*args: object) -> Any:
        result = runner.invoke(cli, [str(a) for a in args])
        assert "Traceback" not in result.output
        outputs.extend([result.stdout, result.stderr])
        return json.loads(result.stdout) if "--json" in args else result.stdout + result.stderr

    run("kb", "create", "Team", "--model", MODEL, "--provider", "canary")
    for name in ECHOES:
        text = run("add", "Team", corpus / name)
        if name != "ok.txt":
            assert f"failed  {name}" in text
    failed = run("add", "Team", corpus, "--json")
    listed = run("docs", "Team", "--json")
    errors = [d["error"] for d in listed["data"] if d["status"] == "error"]
    assert len(errors) == len(ECHOES) - 1 and any("Basic ***" in e for e in errors)
    run("provider", "list")
    run("provider", "list", "--json")
    server.fail_next("401")
    refused = run("provider", "test", "canary", "--model", MODEL)
    assert "refused" in refused and "Basic ***" in refused
    assert_sent_and_echoed(server)
    for text in [*outputs, json.dumps(failed), caplog.text]:
        assert_clean(text, "CLI output")
    assert_clean(database_bytes(kbdesk_home).decode("latin-1"), "the database files")


@pytest.mark.slow
def test_a_real_cli_process_leaks_nothing_on_stderr_or_in_json(server, canary_config, corpus, kbdesk_home):
    env = {**os.environ, "KBDESK_HOME": str(kbdesk_home)}
    kbdesk = [sys.executable, "-c", "from kbdesk.cli.main import main; main()"]

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*kbdesk, *map(str, args)], env=env, capture_output=True, text=True, timeout=120)

    assert run("kb", "create", "Team", "--model", MODEL, "--provider", "canary").returncode == 0
    plain = run("add", "Team", corpus / "retry.txt")  # a retry: its warning goes to stderr
    assert "retry 1 of 1" in plain.stderr and "Basic ***" in plain.stderr
    as_json = run("add", "Team", corpus, "--json")
    body = json.loads(as_json.stdout)
    assert {f["file"] for f in body["failed"]} >= {"auth.txt", "headers.txt", "url.txt"}
    for result in (plain, as_json):
        assert_clean(result.stdout + result.stderr, "a kbdesk process's output")
    assert_sent_and_echoed(server)
    assert_clean(database_bytes(kbdesk_home).decode("latin-1"), "the database files")


def test_chat_errors_are_masked_too(server):
    server.fail_next("echo_headers")
    settings = ProviderSettings(base_url=server.base_url.replace("http://", f"http://{USER}:{SECRET}@"), max_retries=0)
    with ChatClient("canary", settings) as client, pytest.raises(ProviderRequestError) as caught:
        list(client.stream([{"role": "user", "content": "hi"}], "llama3.2"))
    assert "Basic ***" in str(caught.value)
    assert_clean(str(caught.value), "a chat error")
    assert server.requests[-1].headers["authorization"] == f"Basic {BASIC}"


# ── refusing a URL with credentials where one is typed ──────────────────────────

REFUSED = [
    f"http://{USER}:{SECRET}@127.0.0.1:8080/v1",
    f"https://{SECRET}@api.example.com/v1",
    f"http://{USER}:{SECRET.lower()}%21@host/v1",
]


@pytest.mark.parametrize("url", REFUSED)
def test_provider_add_refuses_a_url_with_credentials(url, kbdesk_home):
    result = CliRunner().invoke(cli, ["provider", "add", "x", "--kind", "custom", "--base-url", url])
    assert result.exit_code != 0
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "--api-key-env" in message and "user name or password" in message
    assert_clean(result.output, "the refusal")
    assert not get_paths().config_file.exists()


@pytest.mark.parametrize("url", REFUSED)
def test_the_tui_provider_form_refuses_it_by_the_same_rule(url, kbdesk_home):
    from kbdesk.tui.services import ProviderForm, save_provider

    with pytest.raises(InvalidInputError, match=r"user name or password.*'Key env var'") as caught:
        save_provider(get_paths().config_file, ProviderForm(name="x", kind="custom", base_url=url))
    assert_clean(str(caught.value), "the refusal")
    assert not get_paths().config_file.exists()
    with pytest.raises(InvalidInputError, match="--api-key-env"):
        check_base_url(url)


def test_a_plain_url_is_still_accepted(kbdesk_home):
    result = CliRunner().invoke(
        cli,
        [
            "provider",
            "add",
            "x",
            "--kind",
            "custom",
            "--base-url",
            " http://127.0.0.1:8080/v1 ",
            "--api-key-env",
            "X_KEY",
        ],
    )
    assert result.exit_code == 0, result.output
    assert 'base_url = "http://127.0.0.1:8080/v1"' in get_paths().config_file.read_text()


# ── the masking itself ──────────────────────────────────────────────────────────


def test_every_form_of_a_credential_is_masked(monkeypatch):
    monkeypatch.setenv("CANARY_KEY", "sk-canary-key-123456")
    settings = ProviderSettings(base_url="http://canary%40user:p%40ss%2Fword!@host/v1", api_key_env="CANARY_KEY")
    clean = Redactor.for_settings(settings)
    b64 = base64.b64encode(b"canary@user:p@ss/word!").decode()
    said = (
        f"key sk-canary-key-123456; password p@ss/word! (p%40ss%2Fword!); pair canary@user:p@ss/word!; "
        f"Authorization: Basic {b64}; unpadded {b64.rstrip('=')}; url http://canary%40user:p%40ss%2Fword!@host/v1;"
        " Bearer some-other-token-42; mail admin@example.com; requires Basic authentication"
    )
    masked = clean(said)
    for secret in ("sk-canary-key-123456", "p@ss/word!", "p%40ss%2Fword!", b64.rstrip("="), "some-other-token-42"):
        assert secret not in masked
    assert "http://***@host/v1" in masked and "Basic ***" in masked and "Bearer ***" in masked
    assert "admin@example.com" in masked and "requires Basic authentication" in masked  # readable text stays
    assert "p%40ss" not in repr(settings) and "canary" not in repr(settings)
