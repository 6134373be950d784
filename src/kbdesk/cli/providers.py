"""``kbdesk provider add|list|test|rm`` and ``kbdesk kb set-model``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from kbdesk.cli.output import plain, print_json, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.errors import InvalidInputError
from kbdesk.provider_config import key_source
from kbdesk.providers import DEFAULT_BASE_URLS, OpenAICompatProvider, embedding_candidates
from kbdesk.providers.settings import display_url
from kbdesk.textsafe import inert_line

if TYPE_CHECKING:
    from kbdesk.config import Config

KINDS = ["openai", "ollama", "lmstudio", "llamacpp", "vllm", "openrouter", "custom", "local"]


def _config_path(state: CliState) -> Path:
    from kbdesk.paths import get_paths

    return get_paths(state.home).config_file


def _load(state: CliState) -> Config:
    from kbdesk.config import load_config

    return load_config(_config_path(state))


@click.group("provider")
def provider_group() -> None:
    """Embedding and chat providers (any OpenAI-compatible server, or in-process embeddings)."""


@provider_group.command("add")
@click.argument("name")
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="custom",
    show_default=True,
    help="Preset that picks the default base URL.",
)
@click.option("--base-url", help="API root ending in /v1 (default: the kind's); no user:password in it.")
@click.option("--api-key-env", metavar="VAR", help="Environment variable holding the API key (preferred).")
@click.option(
    "--store-key",
    is_flag=True,
    help="Ask for the API key (or read it from stdin) and keep it in config.toml (mode 0600).",
)
@click.option("--timeout", type=click.FloatRange(min=0.1), help="Seconds per request.")
@click.option("--batch-size", type=click.IntRange(1, 100), help="Inputs per embedding request.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def add(
    state: CliState,
    name: str,
    kind: str,
    base_url: str | None,
    api_key_env: str | None,
    store_key: bool,
    timeout: float | None,
    batch_size: int | None,
    as_json: bool,
) -> None:
    """Add provider NAME to config.toml, or set its kind, base URL and key variable
    anew (its other settings stay)."""
    from kbdesk import provider_config

    if kind == "custom" and not base_url:
        raise InvalidInputError("a custom provider needs --base-url")
    key = None
    if store_key:
        if sys.stdin.isatty():
            key = click.prompt("API key", hide_input=True, prompt_suffix=": ")
        else:
            key = sys.stdin.readline().strip()
        if not key:
            raise InvalidInputError("no API key given")
    provider_config.save_provider(
        _config_path(state),
        name,
        kind,
        base_url=base_url or "",
        api_key_env=api_key_env or "",
        api_key=key or "",
        settings={"timeout": timeout, "batch_size": batch_size},
    )
    url = base_url or DEFAULT_BASE_URLS.get(kind, "")
    where = display_url(url) if url else "in this process"
    from kbdesk.providers.reachable import default_url_note

    note = None if base_url else default_url_note(kind)
    if as_json:  # the URL as display_url shows it: never a password
        said = {"provider": name, "kind": kind, "base_url": display_url(url) if url else None}
        print_json(said | ({"warning": note} if note else {}))
        return
    stdout().print(plain(f"Provider '{name}' ({kind}, {where}) saved to {_config_path(state)}"))
    if note:
        click.echo(f"warning: {inert_line(note)}", err=True)


@provider_group.command("rm")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def remove(state: CliState, name: str, as_json: bool) -> None:
    """Remove provider NAME from config.toml (refused while a model role uses it)."""
    from kbdesk import provider_config

    provider_config.remove_provider(_config_path(state), name)
    if as_json:
        print_json({"removed": name})
    else:
        stdout().print(plain(f"Provider '{name}' removed"))


@provider_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def list_(state: CliState, as_json: bool) -> None:
    """List configured providers (keys are never shown)."""
    from kbdesk.providers import base_url_for

    providers = _load(state).providers
    rows = [
        {
            "name": name,
            "kind": s.kind,
            "base_url": "(in this process)" if s.kind == "local" else display_url(base_url_for(s, name)),
            "key": key_source(s),
        }
        for name, s in sorted(providers.items())
    ]
    if as_json:
        print_json({"data": rows, "total": len(rows)})
        return
    if not rows:
        stdout().print(plain("No providers. Add one: kbdesk provider add NAME --kind ollama"))
        return
    t = table("name", "kind", "base url", "api key")
    for r in rows:
        t.add_row(plain(r["name"]), r["kind"], plain(r["base_url"]), plain(r["key"]))
    stdout().print(t)


@provider_group.command("test")
@click.argument("name")
@click.option("--model", help="Also embed a test sentence with this model.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def test(state: CliState, name: str, model: str | None, as_json: bool) -> None:
    """Check that provider NAME answers: list its models (embedding candidates first)."""
    config = _load(state)
    settings = config.providers.get(name)
    if settings is None:
        raise InvalidInputError(f"no provider named '{name}'")
    if settings.kind == "local":
        from kbdesk.providers.local import LocalProvider

        opened: Any = LocalProvider(name, settings)
    else:
        opened = OpenAICompatProvider(name, settings)
    with opened as provider:
        models = provider.list_models()
        candidates = embedding_candidates(models)
        result: dict[str, Any] = {
            "provider": name,
            "models": [m.id for m in models],
            "embedding_candidates": [m.id for m in candidates],
        }
        if model:
            embedded = provider.embed(["kbdesk connection test"], model)
            result["model"] = model
            result["dimensions"] = embedded.dimensions
    from kbdesk.providers.server_kind import detect, mismatch

    found = detect(name, settings)
    result["answers_like"] = found.kind if found else None
    warning = mismatch(name, settings, found)
    if warning:
        result["kind_mismatch"] = warning
    if as_json:
        print_json(result)
        return
    out = stdout()
    out.print(Text(f"'{name}' answered: {len(models)} models, {len(candidates)} embedding candidates"))
    if found is not None:
        out.print(Text(f"it answers like {found.name} ({found.evidence})"))
    if warning:
        click.echo(f"warning: {inert_line(warning)}", err=True)
    for m in candidates:
        out.print(Text(f"  {m.id}" + (f"  ({m.model_type})" if m.model_type else "")))
    if model:
        out.print(Text(f"{model} embeds with {result['dimensions']} dimensions"))
