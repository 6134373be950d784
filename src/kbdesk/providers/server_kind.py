"""Which server a provider's URL answers like: llama.cpp's llama-server, llama-cpp-python,
Ollama, LM Studio or vLLM — for ``kbdesk provider test`` and ``kbdesk doctor``.

The kind a provider is registered with decides a few things (the default URL, how a
forced tool choice is sent, where the context window is asked), and two servers are easy
to mix up: llama.cpp's ``llama-server`` (kind ``llamacpp``) and the Python package
llama-cpp-python (kind ``custom``). Each server has a sign only it gives:

* llama-server: ``GET {root}/props`` answers with its generation settings;
* llama-cpp-python: ``GET {root}/openapi.json`` is titled "llama.cpp Python API" (and its
  ``/v1/models`` entries say ``owned_by: "me"``);
* Ollama: ``GET {root}/api/version``;
* LM Studio: ``GET {root}/api/v0/models`` (or ``/api/v1/models``) with its model states;
* vLLM: ``/v1/models`` entries ``owned_by: "vllm"`` (and ``GET {root}/version``).

:func:`detect` asks them, within ``timeout`` seconds altogether, and returns the first
that answers like one (None when none does: a hosted API or an unknown server).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from kbdesk.providers.errors import ProviderConfigError
from kbdesk.providers.settings import (
    ProviderSettings,
    base_url_for,
    resolve_api_key,
    url_credentials,
    without_credentials,
)

LLAMA_CPP_PYTHON = "llama-cpp-python"
# what kind= fits each detected server; llama-cpp-python has no preset of its own
FITTING_KIND = {
    "llamacpp": "llamacpp",
    LLAMA_CPP_PYTHON: "custom",
    "ollama": "ollama",
    "lmstudio": "lmstudio",
    "vllm": "vllm",
}
NAMES = {
    "llamacpp": "llama.cpp's llama-server",
    LLAMA_CPP_PYTHON: "llama-cpp-python's server",
    "ollama": "Ollama",
    "lmstudio": "LM Studio",
    "vllm": "vLLM",
}


@dataclass(frozen=True)
class ServerKind:
    kind: str
    """llamacpp, llama-cpp-python, ollama, lmstudio or vllm."""
    evidence: str

    @property
    def name(self) -> str:
        return NAMES[self.kind]

    @property
    def fitting_kind(self) -> str:
        return FITTING_KIND[self.kind]


def detect(
    name: str, settings: ProviderSettings, *, client: httpx.Client | None = None, timeout: float = 3.0
) -> ServerKind | None:
    """What server the provider's URL answers like, or None (see the module docstring)."""
    if settings.kind in ("local", "openai", "openrouter"):
        return None
    try:
        base = base_url_for(settings, name)
    except ProviderConfigError:
        return None
    own = client is None
    http = client if client is not None else httpx.Client(headers={"User-Agent": "kbdesk"})
    try:
        return _Probe(http, settings, base, timeout).run()
    finally:
        if own:
            http.close()


def mismatch(name: str, settings: ProviderSettings, found: ServerKind | None) -> str | None:
    """One line when the URL answers like another server than the kind says, else None."""
    if found is None or found.fitting_kind == settings.kind:
        return None
    if settings.kind == "custom" and found.kind != LLAMA_CPP_PYTHON:
        return f"'{name}' answers like {found.name} ({found.evidence}); --kind {found.fitting_kind} would fit it"
    fix = f"kbdesk provider add {name} --kind {found.fitting_kind}"
    if settings.kind == "llamacpp" and found.kind == LLAMA_CPP_PYTHON:
        return (
            f"'{name}' is registered as kind llamacpp (llama.cpp's llama-server), but answers like "
            f"llama-cpp-python's server ({found.evidence}): register it again with {fix} --base-url URL"
        )
    return (
        f"'{name}' is registered as kind {settings.kind}, but answers like {found.name} ({found.evidence}): "
        f"register it again with {fix} --base-url URL"
    )


class _Probe:
    def __init__(self, client: httpx.Client, settings: ProviderSettings, base: str, timeout: float) -> None:
        self.client, self.settings = client, settings
        self.base = without_credentials(base).rstrip("/")
        self.root = self.base[:-3] if self.base.endswith("/v1") else self.base
        self.deadline = time.monotonic() + timeout
        credentials = url_credentials(base)
        self.auth: Any = httpx.BasicAuth(*credentials) if credentials else httpx.USE_CLIENT_DEFAULT

    def run(self) -> ServerKind | None:
        probes = [self.models, self.props, self.openapi, self.ollama, self.lmstudio, self.vllm_version]
        for probe in probes:
            if time.monotonic() >= self.deadline:
                break
            try:
                found = probe()
            except (httpx.HTTPError, ValueError, TypeError, KeyError, AttributeError):
                found = None
            if found is not None:
                return found
        return None

    def models(self) -> ServerKind | None:
        body = self._get(f"{self.base}/models")
        items = [m for m in (body.get("data") or []) if isinstance(m, dict)]
        owners = {m.get("owned_by") for m in items}
        if "vllm" in owners or any("max_model_len" in m for m in items):
            return ServerKind("vllm", "its /v1/models says owned_by vllm")
        if items and owners == {"me"} and all(m.get("permissions") == [] for m in items):
            return ServerKind(LLAMA_CPP_PYTHON, "its /v1/models says owned_by me")
        return None

    def props(self) -> ServerKind | None:
        body = self._get(f"{self.root}/props")
        if isinstance(body, dict) and ("default_generation_settings" in body or "n_ctx" in body):
            return ServerKind("llamacpp", "it answers GET /props")
        return None

    def openapi(self) -> ServerKind | None:
        body = self._get(f"{self.root}/openapi.json")
        title = str(((body or {}).get("info") or {}).get("title") or "")
        if "llama.cpp python" in title.lower():
            return ServerKind(LLAMA_CPP_PYTHON, f"its API is titled {title.strip()!r}")
        if "vllm" in title.lower():
            return ServerKind("vllm", f"its API is titled {title.strip()!r}")
        return None

    def ollama(self) -> ServerKind | None:
        body = self._get(f"{self.root}/api/version")
        if isinstance(body, dict) and isinstance(body.get("version"), str) and len(body) <= 2:
            return ServerKind("ollama", f"GET /api/version says {body['version']}")
        return None

    def lmstudio(self) -> ServerKind | None:
        body = self._get(f"{self.root}/api/v0/models")
        items = [m for m in (body.get("data") or []) if isinstance(m, dict)]
        if items and all("state" in m for m in items):
            return ServerKind("lmstudio", "it answers GET /api/v0/models")
        return None

    def vllm_version(self) -> ServerKind | None:
        body = self._get(f"{self.root}/version")
        if isinstance(body, dict) and set(body) == {"version"}:
            return ServerKind("vllm", f"GET /version says {body['version']}")
        return None

    def _get(self, url: str) -> Any:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise httpx.TimeoutException("out of time")
        headers = {"Accept": "application/json"}
        key = resolve_api_key(self.settings)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        response = self.client.get(url, headers=headers, timeout=min(left, 2.0), auth=self.auth)
        response.raise_for_status()
        return response.json()


__all__ = ["LLAMA_CPP_PYTHON", "ServerKind", "detect", "mismatch"]
