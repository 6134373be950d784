"""Model roles: which models a provider offers, which suit chat or embeddings, and who
serves each role (``[roles.chat]`` / ``[roles.embedding]`` in config.toml).

The one place both faces take this from: the TUI's model-role picker (Settings → Model
roles) and ``kbdesk model list|set|show``. Blocking calls, no UI toolkit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbdesk.config import Config
from kbdesk.config_write import update_config
from kbdesk.errors import InvalidInputError
from kbdesk.providers.openai_compat import OpenAICompatProvider
from kbdesk.providers.results import ModelInfo, embedding_candidates

ROLES = ("embedding", "chat")


def quick_settings(settings: Any) -> Any:
    """Settings for an interactive call: one retry at most, a short timeout."""
    return replace(
        settings,
        max_retries=min(settings.max_retries, 1),
        retry_budget=min(settings.retry_budget, 15.0),
        timeout=min(settings.timeout, 10.0),
    )


def list_models(config: Config, provider: str) -> list[ModelInfo]:
    """The provider's models (``GET /models``); raises a ProviderError with one line."""
    settings = config.providers.get(provider)
    if settings is None:
        raise InvalidInputError(f"no provider named '{provider}'")
    if settings.kind == "local":  # in-process: lists only what it has loaded (often nothing)
        from kbdesk.providers.local import LocalProvider

        with LocalProvider(provider, settings) as local:
            return local.list_models()
    with OpenAICompatProvider(provider, quick_settings(settings)) as client:
        models = client.list_models()
    if any(m.model_type is None for m in models):  # the server's own endpoints may say
        from kbdesk.providers.context import server_model_types

        types = server_model_types(provider, settings)
        models = [replace(m, model_type=types[m.id]) if m.model_type is None and m.id in types else m for m in models]
    return models


def role_candidates(models: list[ModelInfo], role: str) -> list[ModelInfo]:
    """Seed 000 §0: the embedding role takes typed embedding models and untyped ones;
    other roles take their own type, and untyped models count as chat models."""
    if role == "embedding":
        return embedding_candidates(models)
    return [m for m in models if (m.model_type or "chat") == role]


@dataclass(frozen=True)
class ModelRow:
    """One model of one provider, with the roles it suits and the roles it serves now."""

    provider: str
    model: str
    model_type: str | None
    """"chat", "embedding", or None when the server does not say (then it suits both)."""
    suits: tuple[str, ...]
    """The roles the picker offers it for, in :data:`ROLES` order."""
    roles: tuple[str, ...]
    """The roles config.toml gives it now."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "type": self.model_type,
            "chat": "chat" in self.suits,
            "embedding": "embedding" in self.suits,
            "roles": list(self.roles),
        }


def model_rows(config: Config, provider: str, models: list[ModelInfo]) -> list[ModelRow]:
    """``models`` of ``provider`` as rows: the picker's filter for each role, and the
    roles that use each model now (by provider and id)."""
    suits = {role: {m.id for m in role_candidates(models, role)} for role in ROLES}
    rows = []
    for m in models:
        using = tuple(
            role
            for role in ROLES
            if (getattr(config.roles, role).provider, getattr(config.roles, role).model) == (provider, m.id)
        )
        rows.append(ModelRow(provider, m.id, m.model_type, tuple(r for r in ROLES if m.id in suits[r]), using))
    return rows


def save_roles(config_path: Path, roles: dict[str, tuple[str | None, str | None]]) -> Config:
    """Set ``roles.NAME.provider`` / ``.model`` (None clears a value); roles not named stay."""

    def change(raw: dict[str, Any]) -> None:
        table = raw.setdefault("roles", {})
        for role, (provider, model) in roles.items():
            entry = {k: v for k, v in table.get(role, {}).items() if k not in ("provider", "model")}
            if provider:
                entry["provider"] = provider
            if model:
                entry["model"] = model
            table[role] = entry

    return update_config(config_path, change)


def set_role(config_path: Path, config: Config, role: str, provider: str, model: str) -> Config:
    """Give ``role`` to ``model`` of ``provider``, which must be configured."""
    if role not in ROLES:
        raise InvalidInputError(f"no role '{role}': choose {' or '.join(ROLES)}")
    if provider not in config.providers:
        known = ", ".join(sorted(config.providers)) or "none yet"
        raise InvalidInputError(
            f"no provider named '{provider}' (providers: {known}); add it with "
            f"'kbdesk provider add {provider} --kind …'"
        )
    if not model.strip():
        raise InvalidInputError("the model id is empty")
    return save_roles(config_path, {role: (provider, model.strip())})
