"""Fixtures for the TUI tests: a desk in the test's KBDESK_HOME, folders to index, helpers
to wait for workers. The autouse KBDESK_HOME fixture of tests/conftest.py applies here too."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from ingest_support import configure_provider, write_files
from tui_support import CORPUS


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests in a fresh event loop (no async plugin needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_files(tmp_path / "corpus", CORPUS)


@pytest.fixture
def tui_desk():
    """A desk on the default vector backend (the TUI does not care which)."""
    from kbdesk import open_desk

    desk = open_desk()
    yield desk
    desk.close()


@pytest.fixture
def vector_desk(fake_openai):
    """A desk whose config names the fake provider 'fake' and uses it for the embedding role."""
    from kbdesk import open_desk

    configure_provider(fake_openai, extra="")
    _append_config('[roles.embedding]\nprovider = "fake"\nmodel = "text-embedding-3-small"\n')
    desk = open_desk()
    yield desk
    desk.close()


def _append_config(text: str) -> None:
    from kbdesk.paths import get_paths

    path = get_paths().config_file
    path.write_text(path.read_text() + text)
