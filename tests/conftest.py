"""Shared fixtures: every test gets its own KBDESK_HOME; stores come in both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbdesk.store import choose_driver

pytest_plugins = ["fake_openai", "pg_fixtures", "chat_fixtures"]

VEC_AVAILABLE = choose_driver("auto").backend == "sqlite-vec"
BACKENDS = ["sqlite-vec", "numpy"]


@pytest.fixture(autouse=True)
def kbdesk_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test touches the real user's files: KBDESK_HOME is a fresh temporary dir."""
    home = tmp_path / "home"
    monkeypatch.setenv("KBDESK_HOME", str(home))
    for var in ("KBDESK_DB", "KBDESK_VECTOR_BACKEND", "KBDESK_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Both vector backends. sqlite-vec must load here: this machine is the reference."""
    if request.param == "sqlite-vec":
        assert VEC_AVAILABLE, "sqlite-vec should load on this machine (see kbdesk doctor)"
    return request.param


@pytest.fixture
def desk(backend: str, kbdesk_home: Path):
    from kbdesk import open_desk

    d = open_desk(backend=backend)
    yield d
    d.close()


ENGINES = ["sqlite-vec", "numpy", "postgres"]


@pytest.fixture(params=ENGINES)
def engine_desk(request: pytest.FixtureRequest, kbdesk_home: Path):
    """A desk on each engine: SQLite with sqlite-vec, SQLite with numpy, PostgreSQL +
    pgvector (a real embedded server, a fresh database per test). Store scenarios that
    hold on every engine take this fixture."""
    from kbdesk import open_desk

    if request.param == "postgres":
        d = open_desk(request.getfixturevalue("pg_uri"))
    else:
        if request.param == "sqlite-vec":
            assert VEC_AVAILABLE, "sqlite-vec should load on this machine (see kbdesk doctor)"
        d = open_desk(backend=request.param)
    yield d
    d.close()


def pytest_report_header(config: pytest.Config) -> str:
    driver = choose_driver("auto")
    return f"kbdesk vector backend: {driver.backend} ({driver.reason})"
