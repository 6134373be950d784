"""Adding, describing, testing and removing remotes: the rules both faces share.

A remote is saved to config.toml (written atomically, mode 0600) only once it is
known to work — its URL valid (https://, or http:// to this machine), and, unless the
caller says not to check, the server answers as kbdesk serve with this token.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kbdesk.config import Config
from kbdesk.config_write import load_raw, update_config
from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.remote.client import RemoteClient
from kbdesk.remote.names import check_remote_name
from kbdesk.remote.settings import RemoteSettings, check_url, token_source

TEST_TIMEOUT = 10.0
"""Seconds ``remote add`` and ``remote test`` wait for an answer (a person is waiting for this one check)."""


def remote_settings(
    url: str,
    *,
    token_env: str | None = None,
    token: str | None = None,
    ca_file: str | None = None,
    allow_http: bool = False,
) -> RemoteSettings:
    url = check_url(url, allow_http=allow_http)
    if token_env is not None and not token_env.strip():
        raise InvalidInputError("--token-env needs the name of an environment variable")
    if not token_env and not token:
        raise InvalidInputError("give the token with --token-env VAR (or --store-token to keep it in config.toml)")
    if ca_file:
        path = Path(ca_file).expanduser()
        if not path.is_file():
            raise InvalidInputError(f"no CA file {path}")
        ca_file = str(path.resolve())
    return RemoteSettings(
        url=url,
        token_env=(token_env or "").strip() or None,
        token=token or None,
        ca_file=ca_file,
        allow_http=allow_http,
    )


def check_no_clash(name: str, local_kb_names: Iterable[str]) -> None:
    """Refuse a remote name that local KB names already start with (``team:…``)."""
    for kb_name in local_kb_names:
        if kb_name.lower().startswith(f"{name}:"):
            raise InvalidInputError(
                f"the local knowledge base '{kb_name}' would read as a KB of a remote named '{name}': "
                "choose another name for the remote (or rename that KB)"
            )


def test_remote(name: str, settings: RemoteSettings, *, timeout: float = TEST_TIMEOUT) -> dict[str, Any]:
    """Ask the server who the token is and which KBs it may read; one-line errors naming the remote."""
    client = RemoteClient(name, settings, timeout=timeout)
    started = time.monotonic()
    try:
        me = client.me()
        kbs = client.list_kbs()
    finally:
        client.close()
    user = me.get("user") if isinstance(me.get("user"), dict) else {}
    server = me.get("server") if isinstance(me.get("server"), dict) else {}
    token = me.get("token") if isinstance(me.get("token"), dict) else {}
    return {
        "remote": name,
        "url": settings.url,
        "user": (user or {}).get("name"),
        "server_version": (server or {}).get("version"),
        "engine": (server or {}).get("engine"),
        "permissions": [p for p in (token or {}).get("permissions") or [] if isinstance(p, str)]
        if isinstance((token or {}).get("permissions"), list)
        else [],
        "kbs": [kb["name"] for kb in kbs if isinstance(kb, dict) and isinstance(kb.get("name"), str)],
        "seconds": round(time.monotonic() - started, 3),
    }


def save_remote(config_path: str | os.PathLike[str], name: str, settings: RemoteSettings) -> Config:
    """Add remote ``name`` (or replace it) in config.toml."""
    name = check_remote_name(name)

    def change(raw: dict[str, Any]) -> None:
        entry: dict[str, Any] = {"url": settings.url}
        if settings.token_env:
            entry["token_env"] = settings.token_env
        if settings.token:
            entry["token"] = settings.token
        if settings.ca_file:
            entry["ca_file"] = settings.ca_file
        if settings.allow_http:
            entry["allow_http"] = True
        raw.setdefault("remotes", {})[name] = entry

    return update_config(Path(config_path), change)


def remove_remote(config_path: str | os.PathLike[str], name: str) -> Config:
    if name not in (load_raw(Path(config_path)).get("remotes") or {}):
        raise NotFoundError(f"no remote '{name}' (kbdesk remote list shows them)")

    def change(raw: dict[str, Any]) -> None:
        raw["remotes"].pop(name, None)
        if not raw["remotes"]:
            raw.pop("remotes")

    return update_config(Path(config_path), change)


def describe(name: str, settings: RemoteSettings) -> dict[str, Any]:
    """A remote for a listing: where, and where its token comes from (never the token)."""
    return {
        "name": name,
        "url": settings.url,
        "token": token_source(settings),
        "ca_file": settings.ca_file,
        "allow_http": settings.allow_http,
    }
