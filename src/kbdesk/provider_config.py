"""The rules for adding, changing and removing providers in config.toml — once, for
both faces (``kbdesk provider …`` and the TUI's Settings → Providers).

* A name is required; a ``custom`` provider needs a base URL; a base URL with user
  info is refused (the key goes in an environment variable: ``check_base_url``).
* Saving sets kind, base URL and key variable as given (empty: unset) and keeps the
  provider's other settings (timeout, batch size…) unless given anew; a base URL equal
  to the kind's default is not written; a stored key is kept unless a new one is given
  or ``forget_key``; a renamed provider takes its roles with it.
* A provider a model role uses cannot be removed until the role uses another.
* Where a provider's key comes from is told without the key: ``key_source``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbdesk.config import Config
from kbdesk.config_write import update_config
from kbdesk.errors import InvalidInputError
from kbdesk.providers import DEFAULT_BASE_URLS
from kbdesk.providers.settings import KEY_ENV_HINT, check_base_url, key_env_for

KEY_NOT_SHOWN = "stored ••••••••"  # kept in config.toml, never shown


def save_provider(
    config_path: str | os.PathLike[str],
    name: str,
    kind: str,
    *,
    base_url: str = "",
    api_key_env: str = "",
    api_key: str = "",
    original: str | None = None,
    forget_key: bool = False,
    settings: Mapping[str, Any] | None = None,
    key_hint: str = KEY_ENV_HINT,
) -> Config:
    """Add provider ``name`` (or change ``original``, renaming it) and return the new config."""
    name = name.strip()
    if not name:
        raise InvalidInputError("a provider needs a name")
    if kind == "custom" and not base_url.strip():
        raise InvalidInputError("a custom provider needs a base URL")
    url = check_base_url(base_url, key_hint=key_hint) if base_url.strip() else ""
    original = original or None

    def change(raw: dict[str, Any]) -> None:
        providers = raw.setdefault("providers", {})
        if original and name != original and name in providers:
            raise InvalidInputError(f"a provider named '{name}' already exists")
        old = providers.pop(original or name, {})
        entry: dict[str, Any] = {k: v for k, v in old.items() if k not in ("kind", "base_url", "api_key_env")}
        entry["kind"] = kind
        if url and url.rstrip("/") != DEFAULT_BASE_URLS.get(kind):
            entry["base_url"] = url
        if api_key_env.strip():
            entry["api_key_env"] = api_key_env.strip()
        if api_key.strip():
            entry["api_key"] = api_key.strip()
        elif forget_key:
            entry.pop("api_key", None)
        entry.update({k: v for k, v in (settings or {}).items() if v is not None})
        providers[name] = entry
        if original and original != name:  # a rename: roles follow the provider
            for role in raw.get("roles", {}).values():
                if isinstance(role, dict) and role.get("provider") == original:
                    role["provider"] = name

    return update_config(Path(config_path), change)


def remove_provider(config_path: str | os.PathLike[str], name: str) -> Config:
    """Remove provider ``name``; refused while a model role uses it."""

    def change(raw: dict[str, Any]) -> None:
        if name not in raw.get("providers", {}):
            raise InvalidInputError(f"no provider named '{name}'")
        for role_name, role in raw.get("roles", {}).items():
            if isinstance(role, dict) and role.get("provider") == name:
                raise InvalidInputError(f"the {role_name} role uses '{name}': choose another provider for it first")
        del raw["providers"][name]

    return update_config(Path(config_path), change)


def key_source(settings: Any) -> str:
    """Where a provider's key comes from, never the key: "env VAR", "env VAR (not set)",
    "stored ••••••••" (in config.toml) or "none"."""
    env = key_env_for(settings)
    if env and os.environ.get(env, "").strip():
        return f"env {env}"
    if settings.api_key:
        return KEY_NOT_SHOWN
    return f"env {env} (not set)" if env else "none"
