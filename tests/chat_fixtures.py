"""Chat fixtures every test folder can use (a plugin, loaded by tests/conftest.py): the
scripted chat server of tests/chat on loopback, and a desk whose chat role points at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chat_support import write_config
from fake_chat import FakeChat
from kbdesk import open_desk
from kbdesk.desk import Desk


@pytest.fixture
def chat_server() -> Iterator[FakeChat]:
    with FakeChat() as server:
        yield server


@pytest.fixture
def chat_desk(chat_server: FakeChat) -> Iterator[Desk]:
    """A desk whose chat role is model "tiny" at ``chat_server`` (numpy backend: fast, the same
    results; no embedding model: keyword KBs)."""
    write_config(chat_server)
    desk = open_desk(backend="numpy")
    yield desk
    desk.close()
