"""Provider settings (one ``[providers.NAME]`` table of config.toml) and API keys.

A key is looked up at the moment it is needed and never stored anywhere else: not in
the database, not in an export, not in a log line or an error message.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from kbdesk.errors import ConfigError, InvalidInputError
from kbdesk.providers.errors import ProviderConfigError

ProviderKind = Literal["openai", "ollama", "lmstudio", "llamacpp", "vllm", "openrouter", "custom", "local"]

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
    "llamacpp": "http://localhost:8080/v1",
    "vllm": "http://localhost:8000/v1",
    "openrouter": "https://openrouter.ai/api/v1",
}

# The environment variable a hosted service's users already have set. Used only when
# api_key_env is not given AND the base URL is the service's own, so that (say)
# OPENAI_API_KEY is never sent to some other server.
DEFAULT_KEY_ENVS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}

MAX_BATCH_SIZE = 100


@dataclass
class ProviderSettings:
    kind: ProviderKind = "custom"
    """openai, ollama, lmstudio, llamacpp, vllm, openrouter or custom (picks the default base_url),
    or local: sentence-transformers in this process (the `local` extra), no URL."""
    base_url: str | None = None
    """API root ending in /v1; unset means the default for kind (custom needs one)."""
    api_key_env: str | None = None
    """Name of an environment variable holding the API key; it wins over api_key."""
    api_key: str | None = field(default=None, repr=False)
    """API key kept in this file (which is written with mode 0600); prefer api_key_env."""
    timeout: float = 60.0
    """Seconds to wait for one HTTP request before retrying it."""
    max_retries: int = 5
    """Retries of one request after 429, 5xx, timeouts or dropped connections."""
    retry_budget: float = 120.0
    """Most seconds spent on one request including all its retries and waits."""
    batch_size: int = MAX_BATCH_SIZE
    """Most inputs per embedding request (1-100)."""
    max_batch_chars: int = 100_000
    """Most characters of input per embedding request (a longer input goes alone)."""

    def __post_init__(self) -> None:
        def bad(message: str) -> ConfigError:
            return ConfigError(f"config: provider settings: {message}")

        if self.base_url is not None:
            parts = urlsplit(self.base_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise bad(f"base_url must be an http:// or https:// URL, got {display_url(self.base_url)!r}")
        if self.timeout <= 0:
            raise bad(f"timeout must be positive, got {self.timeout}")
        if self.max_retries < 0:
            raise bad(f"max_retries must be at least 0, got {self.max_retries}")
        if self.retry_budget <= 0:
            raise bad(f"retry_budget must be positive, got {self.retry_budget}")
        if not 1 <= self.batch_size <= MAX_BATCH_SIZE:
            raise bad(f"batch_size must be between 1 and {MAX_BATCH_SIZE}, got {self.batch_size}")
        if self.max_batch_chars < 1:
            raise bad(f"max_batch_chars must be at least 1, got {self.max_batch_chars}")

    def __repr__(self) -> str:  # the URL without any user info it may hold; never the key
        url = None if self.base_url is None else display_url(self.base_url)
        return (
            f"ProviderSettings(kind={self.kind!r}, base_url={url!r}, api_key_env={self.api_key_env!r}, "
            f"timeout={self.timeout!r}, max_retries={self.max_retries!r}, retry_budget={self.retry_budget!r}, "
            f"batch_size={self.batch_size!r}, max_batch_chars={self.max_batch_chars!r})"
        )


KEY_ENV_HINT = "put the API key in an environment variable and name that variable with --api-key-env VAR"


def check_base_url(url: str, *, key_hint: str = KEY_ENV_HINT) -> str:
    """``url`` as typed by a person (stripped), or one line saying why it cannot be saved.

    The one rule the CLI's ``provider add`` and the TUI's provider form share. A URL with
    user info (``http://user:pass@host/v1``) is refused: httpx would send it as Basic auth
    and the password would sit in config.toml next to everything else; ``key_hint`` says
    where the key belongs instead.
    """
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(f"base_url must be an http:// or https:// URL, got {display_url(url)!r}")
    if "@" in parts.netloc:
        raise InvalidInputError(
            f"a base URL must not hold a user name or password: use {display_url(url)} and {key_hint}"
        )
    return url


def url_credentials(url: str) -> tuple[str, str] | None:
    """The (user, password) a URL's user info holds, percent-decoded, or None."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return None
    return unquote(parts.username or ""), unquote(parts.password or "")


def without_credentials(url: str) -> str:
    """``url`` with its user info removed (query and path kept: it is what gets requested)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def base_url_for(settings: ProviderSettings, name: str = "") -> str:
    """The API root to call, without a trailing slash."""
    url = settings.base_url or DEFAULT_BASE_URLS.get(settings.kind)
    if not url:
        raise ProviderConfigError(f"provider '{name}' (kind {settings.kind}) needs a base_url", provider=name)
    return url.rstrip("/")


def key_env_for(settings: ProviderSettings) -> str | None:
    """The environment variable the key is read from, if any."""
    if settings.api_key_env:
        return settings.api_key_env
    preset = DEFAULT_BASE_URLS.get(settings.kind)
    if settings.base_url is None or (preset and settings.base_url.rstrip("/") == preset):
        return DEFAULT_KEY_ENVS.get(settings.kind)
    return None


def resolve_api_key(settings: ProviderSettings) -> str | None:
    """The API key: the environment variable when it is set and not empty, else the file's."""
    env = key_env_for(settings)
    if env:
        value = os.environ.get(env, "").strip()
        if value:
            return value
    return settings.api_key or None


def display_url(url: str) -> str:
    """``url`` without user info, query or fragment (places a key could hide)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else parts.path


def write_config_file(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by the owner only (mode 0600).

    The file may hold API keys, so it is created 0600 from the start (never written
    world-readable and chmod-ed afterwards), fsync-ed, then renamed over the old one.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # in case the umask took owner bits away
            _write_all(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"config: cannot write {path}: {exc.strerror or exc}") from None
    _fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not possible on every platform, so best effort.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
