"""One remote: a ``[remotes.NAME]`` table of config.toml.

The token is read when it is needed — from the environment variable ``token_env``
names, else from ``token`` (config.toml is written with mode 0600, as for provider
keys) — and never written anywhere else: not to the database, a log line, an error
message or any output (``remote list`` says where it comes from, never what it is).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from kbdesk.errors import ConfigError, InvalidInputError

CONNECT_TIMEOUT = 1.0
"""Seconds to wait for the server to accept the connection."""
BUDGET = 2.0
"""Seconds a search or a chat turn waits for a remote's answer before going on without it."""


@dataclass
class RemoteSettings:
    url: str = ""
    """The server's API root, e.g. https://kb.example.org/api (what `kbdesk serve` answers under /api)."""
    token_env: str | None = None
    """Name of an environment variable holding the token; it wins over token."""
    token: str | None = field(default=None, repr=False)
    """The token kept in this file (written with mode 0600); prefer token_env."""
    ca_file: str | None = None
    """A PEM file of certificate authorities to verify the server's TLS certificate with."""
    allow_http: bool = False
    """Allow plain http:// to a host other than this machine (tokens then cross the network unencrypted)."""
    connect_timeout: float = CONNECT_TIMEOUT
    """Seconds to wait for the server to accept a connection."""
    budget: float = BUDGET
    """Seconds a search waits for this remote before answering without it."""

    def __post_init__(self) -> None:
        def bad(message: str) -> ConfigError:
            return ConfigError(f"config: remote settings: {message}")

        try:
            check_url(self.url, allow_http=self.allow_http)
        except InvalidInputError as exc:
            raise bad(str(exc)) from None
        if not 0 < self.connect_timeout <= 60:
            raise bad(f"connect_timeout must be between 0 and 60 seconds, got {self.connect_timeout}")
        if not 0 < self.budget <= 600:
            raise bad(f"budget must be between 0 and 600 seconds, got {self.budget}")

    def __repr__(self) -> str:  # never the token
        return f"RemoteSettings(url={self.url!r}, token_env={self.token_env!r}, ca_file={self.ca_file!r})"


def check_url(url: str, *, allow_http: bool = False) -> str:
    """``url`` (stripped, no trailing slash) if it can name a server, else one line why.

    https:// always; http:// only to this machine (127.0.0.0/8, ::1, localhost) unless
    ``allow_http``; never user info (a token goes in --token-env, not in the URL)."""
    url = (url or "").strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(f"a remote's URL is https://HOST/api (the server's API root), got {_shown(url)!r}")
    if "@" in parts.netloc:
        raise InvalidInputError("a remote's URL must not hold a user name or password: give the token with --token-env")
    if parts.query or parts.fragment:
        raise InvalidInputError("a remote's URL is the API root alone, without ?query or #fragment")
    if parts.scheme == "http" and not allow_http and not is_loopback(parts.hostname):
        raise InvalidInputError(
            f"plain http:// sends the token unencrypted: use https:// for {parts.hostname} "
            "(or --allow-http if this network is trusted)"
        )
    return url


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_token(settings: RemoteSettings) -> str | None:
    """The token now in effect: the environment variable when set and not empty, else the file's."""
    if settings.token_env:
        value = os.environ.get(settings.token_env, "").strip()
        if value:
            return value
    return settings.token or None


def token_source(settings: RemoteSettings) -> str:
    """Where the token comes from, for a person (never the token)."""
    if settings.token_env:
        state = "set" if os.environ.get(settings.token_env, "").strip() else "not set"
        return f"${settings.token_env} ({state})"
    return "config.toml" if settings.token else "none"


def _shown(url: str) -> str:
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment="").geturl()
    return parts._replace(query="", fragment="").geturl()
