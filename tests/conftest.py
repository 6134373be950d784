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


# Modules whose tests take seconds each: real processes started, killed or interrupted,
# terminals, servers on loopback. With tests/tui (Textual apps) they are the `slow` lane;
# `-m "not slow"` is the fast lane (README: make test-fast).
SLOW_MODULES = {
    "test_interrupts.py",
    "test_crash_safety.py",
    "test_integrity_processes.py",
    "test_concurrency.py",
    "test_readonly.py",
    "test_watch.py",
    "test_serve_e2e.py",
    "test_mcp_server.py",
    "test_chat_repl.py",
    "test_chat_cancel.py",
}
PG_FIXTURES = {"pg_server", "pg_uri", "empty_pg_uri"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers by what a test needs: ``postgres`` (a real PostgreSQL, by its fixtures or the
    engine parameter), ``slow`` (SLOW_MODULES, the TUI tests and the e2e ones, so that a
    ``-m "not slow"`` of its own never brings back the e2e tests the default run leaves out)."""
    for item in items:
        path = Path(str(item.fspath))
        if path.name in SLOW_MODULES or "tui" in path.parent.name or item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.slow)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if PG_FIXTURES & set(getattr(item, "fixturenames", ())) or "postgres" in params.values():
            item.add_marker(pytest.mark.postgres)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A lane that leaves out every slow test (``-m "not slow"``) does not even import the
    modules holding nothing else: the TUI's, the MCP server's and the e2e ones cost seconds
    to import before they would all be deselected."""
    slow_only = collection_path.name in SLOW_MODULES or (
        collection_path.is_dir() and collection_path.name in {"tui", "e2e"} and collection_path.parent.name == "tests"
    )
    return True if slow_only and _leaves_out_slow(config) else None


def _leaves_out_slow(config: pytest.Config) -> bool:
    expression = config.getoption("markexpr", "") or ""
    if not expression:
        return False
    try:  # pytest's own reading of -m; should it move, everything is collected as before
        from _pytest.mark.expression import Expression

        compiled = Expression.compile(expression)

        def selects(marks: set[str]) -> bool:
            def has(name: str, /, **_: object) -> bool:
                return name in marks

            return compiled.evaluate(has)

        return not any(
            selects(marks) for marks in ({"slow"}, {"slow", "postgres"}, {"slow", "e2e"}, {"slow", "postgres", "e2e"})
        )
    except Exception:  # noqa: BLE001 - any change in that API means: collect everything
        return False


def pytest_report_header(config: pytest.Config) -> str:
    driver = choose_driver("auto")
    return f"kbdesk vector backend: {driver.backend} ({driver.reason})"
