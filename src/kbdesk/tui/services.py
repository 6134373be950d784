"""Blocking calls the TUI makes on the core: provider listing and config changes.

Model listing and the model roles live in :mod:`kbdesk.providers.models` (shared with
``kbdesk model``); they are imported here for the screens.

Plain functions, no Textual: screens run them in thread workers. Keys never leave
this module in clear: :func:`provider_rows` shows only where a key comes from.
"""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass
from typing import Any

from kbdesk.config import Config
from kbdesk.config_write import update_config
from kbdesk.errors import InvalidInputError
from kbdesk.providers import DEFAULT_BASE_URLS, ProviderKind, base_url_for
from kbdesk.providers.models import ROLES, list_models, quick_settings, role_candidates, save_roles
from kbdesk.providers.settings import check_base_url, display_url, key_env_for

KINDS = list(typing.get_args(ProviderKind))
MASK = "••••••••"
KEY_ENV_HINT = "put the API key in an environment variable and name that variable under 'Key env var'"


@dataclass(frozen=True)
class ProviderRow:
    name: str
    kind: str
    base_url: str
    key: str
    """Where the key comes from; never the key itself."""


def key_source(settings: Any) -> str:
    env = key_env_for(settings)
    if env and os.environ.get(env, "").strip():
        return f"env {env}"
    if settings.api_key:
        return f"stored {MASK}"
    return f"env {env} (not set)" if env else "none"


def provider_rows(config: Config) -> list[ProviderRow]:
    rows = []
    for name, settings in sorted(config.providers.items()):
        if settings.kind == "local":
            url = "(in this process)"
        else:
            try:
                url = display_url(base_url_for(settings, name))
            except Exception:  # a custom provider without a base URL: say so, don't fail the list
                url = "(no base URL)"
        rows.append(ProviderRow(name, settings.kind, url, key_source(settings)))
    return rows


@dataclass
class ProviderForm:
    """What the provider form asks for. ``api_key`` None keeps a stored key as it is."""

    name: str
    kind: str = "custom"
    base_url: str = ""
    api_key_env: str = ""
    api_key: str | None = None
    forget_key: bool = False
    original: str | None = None
    """The provider's name before this edit (None: a new provider)."""


def save_provider(config_path: Any, form: ProviderForm) -> Config:
    name = form.name.strip()
    if not name:
        raise InvalidInputError("a provider needs a name")
    if form.kind == "custom" and not form.base_url.strip():
        raise InvalidInputError("a custom provider needs a base URL")
    base_url = check_base_url(form.base_url, key_hint=KEY_ENV_HINT) if form.base_url.strip() else ""

    def change(raw: dict[str, Any]) -> None:
        providers = raw.setdefault("providers", {})
        if name != form.original and name in providers:
            raise InvalidInputError(f"a provider named '{name}' already exists")
        old = providers.pop(form.original, {}) if form.original else {}
        entry: dict[str, Any] = {k: v for k, v in old.items()
                                 if k not in ("kind", "base_url", "api_key_env", "api_key")}
        entry["kind"] = form.kind
        if base_url and base_url.rstrip("/") != DEFAULT_BASE_URLS.get(form.kind):
            entry["base_url"] = base_url
        if form.api_key_env.strip():
            entry["api_key_env"] = form.api_key_env.strip()
        if form.api_key:
            entry["api_key"] = form.api_key.strip()
        elif old.get("api_key") and not form.forget_key:
            entry["api_key"] = old["api_key"]
        providers[name] = entry
        if form.original and form.original != name:  # a rename: roles follow the provider
            for role in raw.get("roles", {}).values():
                if isinstance(role, dict) and role.get("provider") == form.original:
                    role["provider"] = name

    return update_config(config_path, change)


def remove_provider(config_path: Any, name: str) -> Config:
    def change(raw: dict[str, Any]) -> None:
        if name not in raw.get("providers", {}):
            raise InvalidInputError(f"no provider named '{name}'")
        del raw["providers"][name]
        for role_name, role in raw.get("roles", {}).items():
            if isinstance(role, dict) and role.get("provider") == name:
                raise InvalidInputError(f"the {role_name} role uses '{name}': choose another provider first")

    return update_config(config_path, change)
