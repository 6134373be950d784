"""Builders shared by the chat tests (a module of its own: ``from conftest import`` is
ambiguous when several test folders have a conftest.py)."""

from __future__ import annotations

from fake_chat import FakeChat
from kbdesk.paths import get_paths


def write_config(
    server: FakeChat,
    *,
    model: str = "tiny",
    embedding_model: str | None = None,
    api_key_env: str | None = None,
    max_retries: int = 0,
    timeout: float = 5.0,
    retrieval: str | None = "tool",
    extra: str = "",
) -> None:
    """config.toml: one provider at ``server`` serving the chat role (and the embedding role).

    ``retrieval`` defaults to "tool" (the model alone decides whether to search), so a
    test scripts exactly the rounds the model plays; None leaves kbdesk's default (auto)."""
    text = f'[roles.chat]\nprovider = "local"\nmodel = "{model}"\n\n'
    if retrieval or extra:
        text += "[chat]\n" + (f'retrieval = "{retrieval}"\n' if retrieval else "") + extra + "\n"
    if embedding_model:
        text += f'[roles.embedding]\nprovider = "local"\nmodel = "{embedding_model}"\n\n'
    text += (
        f'[providers.local]\nkind = "custom"\nbase_url = "{server.base_url}"\n'
        f"max_retries = {max_retries}\ntimeout = {timeout}\nretry_budget = 10.0\n"
    )
    if api_key_env:
        text += f'api_key_env = "{api_key_env}"\n'
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def add_doc(desk, kb: str, filename: str, *chunks: str, metadata: dict | None = None):
    from kbdesk.models import ChunkInput

    return desk.add_document(kb, filename, [ChunkInput(c, metadata=dict(metadata or {})) for c in chunks])


def desk_on(request, engine: str):
    """A new desk on ``engine`` ("sqlite": numpy; "postgres": a fresh database of the
    session's server, its owner acting as a system admin as a one-person server's owner
    does), reading the config written before."""
    from kbdesk import open_desk

    if engine == "postgres":
        path = get_paths().config_file
        path.write_text(path.read_text() + '\n[identity]\nusername = "me"\nadmin = true\n')
        return open_desk(request.getfixturevalue("pg_uri"))
    return open_desk(backend="numpy")
