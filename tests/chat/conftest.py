"""Fixtures for the chat tests: a scripted chat server on loopback and a desk using it."""

from __future__ import annotations

import pytest

from fake_chat import FakeChat
from kbdesk import open_desk
from kbdesk.paths import get_paths


def write_config(server: FakeChat, *, model: str = "tiny", embedding_model: str | None = None,
                 api_key_env: str | None = None, max_retries: int = 0, timeout: float = 5.0) -> None:
    """config.toml: one provider at ``server`` serving the chat role (and the embedding role)."""
    text = f'[roles.chat]\nprovider = "local"\nmodel = "{model}"\n\n'
    if embedding_model:
        text += f'[roles.embedding]\nprovider = "local"\nmodel = "{embedding_model}"\n\n'
    text += (f'[providers.local]\nkind = "custom"\nbase_url = "{server.base_url}"\n'
             f"max_retries = {max_retries}\ntimeout = {timeout}\nretry_budget = 10.0\n")
    if api_key_env:
        text += f'api_key_env = "{api_key_env}"\n'
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


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


def add_doc(desk, kb: str, filename: str, *chunks: str, metadata: dict | None = None):
    from kbdesk.models import ChunkInput

    return desk.add_document(kb, filename, [ChunkInput(c, metadata=dict(metadata or {})) for c in chunks])
