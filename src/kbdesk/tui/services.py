"""Blocking calls the TUI makes on the core: provider listing and config changes.

Model listing and the model roles live in :mod:`kbdesk.providers.models` (shared with
``kbdesk model``); they are imported here for the screens.

Plain functions, no Textual: screens run them in thread workers. Keys never leave
this module in clear: :func:`provider_rows` shows only where a key comes from.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from kbdesk import provider_config
from kbdesk.config import Config
from kbdesk.providers import ProviderKind, base_url_for
from kbdesk.providers.errors import ProviderConfigError
from kbdesk.providers.models import ROLES, list_models, role_candidates, save_roles
from kbdesk.providers.settings import display_url

# the model roles and model listing, shared with ``kbdesk model``, for the screens
__all__ = [
    "KINDS",
    "ROLES",
    "ProviderForm",
    "list_models",
    "provider_rows",
    "remove_provider",
    "role_candidates",
    "save_provider",
    "save_roles",
]

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


def provider_rows(config: Config) -> list[ProviderRow]:
    rows = []
    for name, settings in sorted(config.providers.items()):
        if settings.kind == "local":
            url = "(in this process)"
        else:
            try:
                url = display_url(base_url_for(settings, name))
            except ProviderConfigError:  # a custom provider without a base URL: say so, don't fail the list
                url = "(no base URL)"
        rows.append(ProviderRow(name, settings.kind, url, provider_config.key_source(settings)))
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
    """The form's provider, by the rules of :mod:`kbdesk.provider_config`."""
    return provider_config.save_provider(
        config_path,
        form.name,
        form.kind,
        base_url=form.base_url,
        api_key_env=form.api_key_env,
        api_key=form.api_key or "",
        original=form.original or None,
        forget_key=form.forget_key,
        key_hint=KEY_ENV_HINT,
    )


def remove_provider(config_path: Any, name: str) -> Config:
    return provider_config.remove_provider(config_path, name)
