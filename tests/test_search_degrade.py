"""Search that degrades instead of failing: a query that cannot be embedded is searched by
keyword with a notice, a KB without vectors never needs the embedder, and a provider that
just failed is left alone for a short, growing pause (the circuit breaker)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from ingest_support import configure_provider, write_files
from kbdesk.cli.main import cli
from kbdesk.errors import InvalidInputError
from kbdesk.providers.breaker import FIRST_PAUSE, Breaker, BreakerOpen, forget_breakers
from kbdesk.providers.errors import (
    InputTooLargeError,
    ProviderAuthError,
    ProviderError,
    ProviderUnavailableError,
)
from kbdesk.search import NeedsVectorsError

FILES = {
    "backups.md": "# Backups\n\nBackups run nightly at 02:00 and are kept for thirty days.\n",
    "restore.md": "# Restore\n\nTo restore a backup, run kbdesk restore with the snapshot name.\n",
    "lunch.txt": "The canteen serves lunch from noon until two.\n",
}


@pytest.fixture(autouse=True)
def _fresh_breakers():
    forget_breakers()
    yield
    forget_breakers()


def _vector_kb(desk, server, tmp_path, name: str = "Docs"):
    configure_provider(server)
    desk.reload_config()
    desk.create_kb(name, model_id="text-embedding-3-small", provider="fake")
    report = desk.add(name, [write_files(tmp_path / name, FILES)])
    assert not report.failed
    assert desk.store.kb_vector_dimensions(desk.kb(name).id) == server.dimensions
    return desk.kb(name)


def test_a_query_that_cannot_be_embedded_is_searched_by_keyword_with_a_notice(engine_desk, fake_openai, tmp_path):
    kb = _vector_kb(engine_desk, fake_openai, tmp_path)
    fake_openai.fail_next("503", times=50)
    before = len(fake_openai.embedding_requests)
    started = time.monotonic()
    response = engine_desk.search([kb.name], "how long are backups kept")
    took = time.monotonic() - started
    assert response.mode == "keyword"
    assert response.keyword_fallback == ["Docs"]
    assert response.notice == "keyword search only in Docs: the query could not be embedded"
    assert any("503" in n and "text-embedding-3-small" in n for n in response.notes)
    assert response.results and response.results[0].source == "backups.md"
    assert response.to_dict()["keyword_fallback"] == ["Docs"] and response.to_dict()["notice"]
    asked = len(fake_openai.embedding_requests) - before
    assert asked == 1  # the query policy: no retry (the breaker tries again later), not ingestion's five
    assert took < 5  # a hang guard only; bench/bench_degrade.py measures it

    # the breaker is open: the next searches do not ask the provider again, and still answer
    for _ in range(3):
        again = engine_desk.search([kb.name], "restore a backup")
        assert again.keyword_fallback == ["Docs"] and again.results[0].source == "restore.md"
        assert any("not asked again" in n for n in again.notes), again.notes
    assert len(fake_openai.embedding_requests) - before == asked

    # an explicit vector search says what is wrong instead (at once, from the breaker)
    with pytest.raises(ProviderError, match="not asked again"):
        engine_desk.search([kb.name], "restore a backup", mode="vector")
    # hybrid, asked for by name, degrades like auto
    assert engine_desk.search([kb.name], "restore", mode="hybrid").mode == "keyword"


def test_a_kb_without_vectors_never_calls_the_embedder(engine_desk, fake_openai, tmp_path):
    configure_provider(fake_openai)
    engine_desk.reload_config()
    engine_desk.create_kb("Empty", model_id="text-embedding-3-small", provider="fake")
    engine_desk.create_kb("Words", keyword_only=True)
    engine_desk.add("Words", [write_files(tmp_path / "w", FILES)])
    fake_openai.stop()  # down: any call would fail
    response = engine_desk.search(["Empty", "Words"], "lunch at noon")
    assert response.results[0].source == "lunch.txt"
    assert response.keyword_fallback == [] and response.notice is None and response.notes == []
    assert fake_openai.embedding_requests == []


def test_only_the_kbs_whose_query_failed_fall_back(engine_desk, fake_openai, tmp_path):
    """Two vector KBs on two providers: one down, one up — the one that is up keeps its
    vector side, the other is searched by keyword, one response."""
    from fake_openai import FakeOpenAI

    kb = _vector_kb(engine_desk, fake_openai, tmp_path)
    with FakeOpenAI(dimensions=8) as other:
        configure_provider(other, name="other")
        engine_desk.reload_config()
        engine_desk.create_kb("Other", model_id="nomic-embed-text", provider="other")
        engine_desk.add("Other", [write_files(tmp_path / "o", {"tides.md": "High tide comes at noon today.\n"})])
        fake_openai.stop()
        response = engine_desk.search([kb.name, "Other"], "when is high tide at noon")
        assert response.mode == "hybrid"
        assert response.keyword_fallback == ["Docs"]
        assert response.results[0].source == "tides.md"
        assert response.results[0].metadata["score_kind"] == "cosine"
        assert len(other.embedding_requests) >= 2  # its documents, then the query


def test_the_breaker_pauses_grow_and_one_trial_goes_through_after_each():
    now = [100.0]
    breaker = Breaker("emb", clock=lambda: now[0])
    down = ProviderUnavailableError("provider 'emb': could not connect", provider="emb")
    breaker.failed(down)
    said = r"provider 'emb' is not asked again for 5 s: it failed 0 s ago \(provider 'emb': could not connect\)"
    with pytest.raises(BreakerOpen, match=said):
        breaker.check()
    now[0] += FIRST_PAUSE  # the pause is over: one trial, the others still wait for it
    breaker.check()
    with pytest.raises(BreakerOpen, match="until the call being tried answers"):
        breaker.check()
    breaker.failed(down)  # the trial failed: twice as long now
    now[0] += FIRST_PAUSE
    with pytest.raises(BreakerOpen):
        breaker.check()
    now[0] += FIRST_PAUSE
    breaker.check()
    breaker.succeeded()
    breaker.check()
    breaker.check()  # closed: everyone goes through
    # one input's fault is not the provider's: it does not trip
    breaker.failed(InputTooLargeError("too long", index=0, chars=9))
    breaker.check()
    # a refused key does (asking again in a moment will not fix it)
    breaker.failed(ProviderAuthError("refused"))
    assert breaker.open


def test_cli_search_with_the_provider_down_answers_by_keyword_exit_0(fake_openai, tmp_path):
    from kbdesk import open_desk

    with open_desk() as desk:
        _vector_kb(desk, fake_openai, tmp_path)
    fake_openai.stop()
    runner = CliRunner()
    result = runner.invoke(cli, ["search", "Docs", "how long are backups kept"])
    assert result.exit_code == 0, result.output
    assert "notice: keyword search only in Docs: the query could not be embedded" in result.stderr
    assert "backups.md" in result.stdout and "keyword search" in result.stdout
    result = runner.invoke(cli, ["search", "Docs", "restore", "--json"])
    body = json.loads(result.stdout)
    assert body["keyword_fallback"] == ["Docs"] and body["mode"] == "keyword"
    assert body["notice"] and any("could not be embedded" in n for n in body["notes"])


def test_cli_vector_search_of_a_keyword_kb_says_how_to_search_by_keyword(tmp_path):
    from kbdesk import open_desk

    with open_desk() as desk:
        desk.create_kb("Words", keyword_only=True)
        desk.add("Words", [write_files(tmp_path / "w", FILES)])
    result = CliRunner().invoke(cli, ["search", "Words", "lunch", "--mode", "vector"])
    assert result.exit_code != 0
    assert "search by keyword instead (--mode keyword)" in result.stderr
    assert issubclass(NeedsVectorsError, InvalidInputError)


@pytest.mark.slow
def test_a_fresh_process_answers_by_keyword_when_the_provider_is_down(fake_openai, tmp_path):
    """What a user sees: ``kbdesk search`` in a new process, the embedding server gone."""
    from kbdesk import open_desk

    with open_desk() as desk:
        _vector_kb(desk, fake_openai, tmp_path)
    fake_openai.stop()
    run = subprocess.run(
        [sys.executable, "-m", "kbdesk.cli.main", "search", "Docs", "how long are backups kept"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "notice: keyword search only in Docs" in run.stderr and "could not connect" in run.stderr
    assert "backups.md" in run.stdout
