"""Fixtures for the chat tests: a scripted chat server on loopback and a desk using it."""

from __future__ import annotations

import pytest

from chat_support import desk_on, write_config


@pytest.fixture
def cdesk(chat_desk):
    """A desk whose chat role points at ``chat_server`` (tests/chat_fixtures.py)."""
    return chat_desk


@pytest.fixture(params=["sqlite", "postgres"])
def chat_engine(request) -> str:
    """Each engine that keeps conversations: the SQLite file (numpy) and PostgreSQL."""
    return request.param


@pytest.fixture
def any_cdesk(request, chat_engine, chat_server):
    """``cdesk`` on every engine that keeps conversations: the chat store scenarios and
    whole turns that hold on both take this one."""
    write_config(chat_server)
    desk = desk_on(request, chat_engine)
    yield desk
    desk.close()
