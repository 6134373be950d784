"""``kbdesk model list|set|show``: the models the providers offer and the model roles.

The CLI face of the TUI's Settings → Model roles: the same listing, the same filter for
what suits chat or embeddings, the same writer of ``[roles.chat]`` / ``[roles.embedding]``
(:mod:`kbdesk.providers.models`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from kbdesk.cli.output import plain, print_json, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.errors import InvalidInputError, KbdeskError
from kbdesk.providers.models import ROLES, list_models, model_rows, set_role
from kbdesk.textsafe import inert_line

if TYPE_CHECKING:
    from kbdesk.config import Config

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
ROLE_USE = {
    "chat": "kbdesk ask, kbdesk chat and the TUI's chat",
    "embedding": "new knowledge bases (each KB keeps its own: 'kbdesk kb set-model' changes one)",
}


def _config_path(state: CliState) -> Path:
    from kbdesk.paths import get_paths

    return get_paths(state.home).config_file


def _load(state: CliState) -> Config:
    from kbdesk.config import load_config

    return load_config(_config_path(state))


@click.group("model")
def model_group() -> None:
    """Chat and embedding models: what the providers offer, and which model each role uses
    ([roles.chat] and [roles.embedding] in config.toml; Settings → Model roles in the TUI)."""


@model_group.command("list")
@click.option("--provider", metavar="NAME", help="Ask only this provider (default: every configured one).")
@json_option
@click.pass_obj
def model_list(state: CliState, provider: str | None, as_json: bool) -> None:
    """Ask each provider for its models: which suit chat, which suit embeddings, and which
    role uses which. A model whose server does not say what it is suits both.
    Exit status 1 when a provider could not be asked."""
    config = _load(state)
    if provider is not None and provider not in config.providers:
        raise InvalidInputError(
            f"no provider named '{provider}' (providers: {', '.join(sorted(config.providers)) or 'none yet'})"
        )
    names = [provider] if provider else sorted(config.providers)
    if not names:
        raise InvalidInputError(
            "no providers yet: add one with 'kbdesk provider add NAME --kind ollama' "
            "(or lmstudio, llamacpp, vllm, openai, custom --base-url …)"
        )
    rows: list[Any] = []
    errors: list[tuple[str, str]] = []
    for name in names:
        try:
            rows += model_rows(config, name, list_models(config, name))
        except KbdeskError as exc:
            errors.append((name, str(exc)))
    if as_json:
        print_json(
            {
                "data": [r.to_dict() for r in rows],
                "total": len(rows),
                "errors": [{"provider": n, "error": e} for n, e in errors],
            }
        )
    else:
        _print_rows(rows, names, errors)
    for _, error in errors:
        click.echo(f"error: {inert_line(error)}", err=True)
    if errors:
        raise SystemExit(1)


def _print_rows(rows: list[Any], names: list[str], errors: list[tuple[str, str]]) -> None:
    out = stdout()
    failed = {n for n, _ in errors}
    for name in names:
        if name not in failed and not any(r.provider == name for r in rows):
            out.print(plain(f"'{name}' lists no models (a local provider lists only those it has loaded)"))
    if not rows:
        return
    t = table("provider", "model", "type", "chat", "embedding", "role")
    for r in rows:
        t.add_row(
            plain(r.provider),
            plain(r.model),
            plain(r.model_type or "?"),
            "✓" if "chat" in r.suits else "",
            "✓" if "embedding" in r.suits else "",
            plain(", ".join(r.roles)),
        )
    out.print(t)
    if any(r.model_type is None for r in rows):
        out.print(Text("?: the server does not say what the model is; it is offered for both roles", style="dim"))
    out.print(Text("Set a role: kbdesk model set chat|embedding PROVIDER MODEL", style="dim"))


@model_group.command("set")
@click.argument("role", type=click.Choice(ROLES))
@click.argument("provider")
@click.argument("model")
@json_option
@click.pass_obj
def model_set(state: CliState, role: str, provider: str, model: str, as_json: bool) -> None:
    """Make MODEL of PROVIDER the chat or embedding model (writes [roles.ROLE] in config.toml,
    as the TUI's Settings → Model roles does). The provider is not asked: 'kbdesk model list'
    shows what it offers."""
    config = set_role(_config_path(state), _load(state), role, provider, model)
    chosen = getattr(config.roles, role)
    if as_json:
        print_json({"role": role, "provider": chosen.provider, "model": chosen.model})
    else:
        stdout().print(plain(f"{role} model: {chosen.model} via {chosen.provider} — used by {ROLE_USE[role]}"))


@model_group.command("show")
@json_option
@click.pass_obj
def model_show(state: CliState, as_json: bool) -> None:
    """Print the model roles and the [chat] settings."""
    config = _load(state)
    roles = {
        role: {"provider": getattr(config.roles, role).provider, "model": getattr(config.roles, role).model}
        for role in ROLES
    }
    chat = {
        "retrieval": config.chat.retrieval,
        "max_tokens": config.chat.max_tokens,
        "context_window": config.chat.context_window,
        "timeout": config.chat.timeout,
    }
    if as_json:
        print_json({"roles": roles, "chat": chat})
        return
    out = stdout()
    for role in ("chat", "embedding"):
        r = roles[role]
        if r["model"]:
            line = f"{role}: {r['model']} via {r['provider'] or '(the only provider)'}"
        else:
            line = f"{role}: not set — kbdesk model set {role} PROVIDER MODEL"
        out.print(plain(line))
    window = chat["context_window"] or "asked of the server (else 4096)"
    out.print(
        plain(
            f"[chat] retrieval {chat['retrieval']}, max_tokens {chat['max_tokens']}, "
            f"context_window {window}, timeout {chat['timeout']:g} s"
        )
    )
