"""Fixtures for the chat tests: a scripted chat server on loopback and a desk using it."""

from __future__ import annotations

import pytest

from fake_chat import FakeChat
from kbdesk import open_desk
from chat_support import write_config


@pytest.fixture
def chat_server():
    with FakeChat() as server:
        yield server


@pytest.fixture
def cdesk(chat_server):
    """A desk whose chat role points at ``chat_server`` (numpy backend: fast, same results)."""
    write_config(chat_server)
    desk = open_desk(backend="numpy")
    yield desk
    desk.close()
