"""A chat model's context window, asked of the server where the server says it.

Each local server tells it somewhere else (all read here, the ones that fit the
provider's kind first, then the others; any failure means "not said"):

* llama.cpp's llama-server: ``GET {root}/props`` → ``default_generation_settings.n_ctx``
  (the context it was started with, ``-c``). llama-cpp-python's server has no such
  endpoint: nothing tells its ``--n_ctx`` (2048 unless set).
* Ollama: ``POST {root}/api/show {"model": …}`` → ``model_info["<arch>.context_length"]``
  (what the model was trained for) and ``num_ctx`` in ``parameters`` when the model sets
  one; without it the running model's ``context_length`` from ``GET {root}/api/ps``,
  else Ollama's default (:data:`OLLAMA_DEFAULT_CTX`). The smallest is what is used.
* LM Studio: ``GET {root}/api/v1/models`` → a loaded instance's ``config.context_length``
  (what it was loaded with), else ``max_context_length``; older versions
  ``GET {root}/api/v0/models`` → ``loaded_context_length`` or ``max_context_length``.
* vLLM (and OpenRouter): ``GET {base}/models`` → the model's ``max_model_len``
  (``context_length`` on OpenRouter).

``root`` is the base URL without a trailing ``/v1``. Answers are cached per (base URL,
model) in this process; a failure is remembered for :data:`RETRY_AFTER` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
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

log = logging.getLogger("kbdesk.providers")

OLLAMA_DEFAULT_CTX = 4096
"""Ollama's context when neither the model (num_ctx) nor the running instance says:
its documented default below 24 GiB of VRAM (OLLAMA_CONTEXT_LENGTH changes it)."""
RETRY_AFTER = 60.0

_cache: dict[tuple[str, str], tuple[int | None, float]] = {}
_lock = threading.Lock()


def context_window(
    name: str, settings: ProviderSettings, model: str, *, client: httpx.Client | None = None, timeout: float = 3.0
) -> int | None:
    """The context window (tokens) ``model`` runs with on provider ``name``, or None when
    no server endpoint says it. ``timeout`` bounds all the asking together."""
    if settings.kind == "local":
        return None
    try:
        base = base_url_for(settings, name)
    except ProviderConfigError:  # no base URL: nothing to ask
        return None
    key = (base, model)
    with _lock:
        known = _cache.get(key)
    if known is not None and (known[0] is not None or time.monotonic() - known[1] < RETRY_AFTER):
        return known[0]
    own = client is None
    http = client if client is not None else httpx.Client(headers={"User-Agent": "kbdesk"})
    try:
        found = _Asker(http, settings, base, timeout).ask(model)
    finally:
        if own:
            http.close()
    with _lock:
        _cache[key] = (found, time.monotonic())
    log.debug("provider %s: context window of %s: %s", name, model, found)
    return found


def server_model_types(
    name: str, settings: ProviderSettings, *, client: httpx.Client | None = None, timeout: float = 3.0
) -> dict[str, str]:
    """What the server's own endpoints say each model is ("embedding" or "chat"), by model
    id, where its OpenAI-compatible ``/models`` says nothing: LM Studio's ``type``
    (``/api/v1/models``, or ``/api/v0/models`` before 0.4) and Ollama's model family
    (``/api/tags``: the BERT families are its embedding models). Empty when none answers."""
    if settings.kind in ("local", "openai", "openrouter"):
        return {}
    try:
        base = base_url_for(settings, name)
    except ProviderConfigError:  # no base URL: nothing to ask
        return {}
    own = client is None
    http = client if client is not None else httpx.Client(headers={"User-Agent": "kbdesk"})
    try:
        return _Asker(http, settings, base, timeout).model_types()
    finally:
        if own:
            http.close()


def forget_context_windows() -> None:
    """Empty the cache (tests; a server restarted with another context)."""
    with _lock:
        _cache.clear()


class _Asker:
    def __init__(self, client: httpx.Client, settings: ProviderSettings, base: str, timeout: float) -> None:
        self.client, self.settings = client, settings
        self.base = without_credentials(base).rstrip("/")
        self.root = self.base[:-3] if self.base.endswith("/v1") else self.base
        self.deadline = time.monotonic() + timeout
        credentials = url_credentials(base)
        self.auth: Any = httpx.BasicAuth(*credentials) if credentials else httpx.USE_CLIENT_DEFAULT

    def ask(self, model: str) -> int | None:
        probes: dict[str, Callable[[str], int | None]] = {
            "llamacpp": self.llamacpp,
            "ollama": self.ollama,
            "lmstudio": self.lmstudio,
            "vllm": self.models_list,
        }
        order: list[Callable[[str], int | None]]
        if self.settings.kind in ("openai", "openrouter"):
            order = [self.models_list]
        else:
            first = probes.get(self.settings.kind)
            order = ([first] if first else []) + [p for p in probes.values() if p is not first]
        for probe in order:
            if time.monotonic() >= self.deadline:
                break
            try:
                found = probe(model)
            except (httpx.HTTPError, ValueError, TypeError, KeyError, AttributeError):
                found = None
            if found:
                return found
        return None

    def model_types(self) -> dict[str, str]:
        first = {"ollama": self._ollama_types}.get(self.settings.kind)
        probes = ([first] if first else []) + [p for p in (self._lmstudio_types, self._ollama_types) if p is not first]
        for probe in probes:
            if time.monotonic() >= self.deadline:
                break
            try:
                found = probe()
            except (httpx.HTTPError, ValueError, TypeError, KeyError, AttributeError):
                found = {}
            if found:
                return found
        return {}

    def _lmstudio_types(self) -> dict[str, str]:
        from kbdesk.providers.results import normalise_model_type

        out: dict[str, str] = {}
        try:
            items = [(m.get("key"), m.get("type")) for m in self._get(f"{self.root}/api/v1/models").get("models") or []]
        except httpx.HTTPStatusError:
            items = [(m.get("id"), m.get("type")) for m in self._get(f"{self.root}/api/v0/models").get("data") or []]
        for model_id, raw in items:
            kind = normalise_model_type(raw)
            if isinstance(model_id, str) and kind:
                out[model_id] = kind
        return out

    def _ollama_types(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for m in self._get(f"{self.root}/api/tags").get("models") or []:
            details = m.get("details") or {}
            families = [details.get("family"), *list(details.get("families") or [])]
            names = {m.get("name"), m.get("model")} - {None}
            if not names or not any(isinstance(f, str) for f in families):
                continue
            kind = "embedding" if any(isinstance(f, str) and "bert" in f.lower() for f in families) else "chat"
            out.update({n: kind for n in names if isinstance(n, str)})
        return out

    # ── one server each ────────────────────────────────────────────────────────
    def llamacpp(self, model: str) -> int | None:
        body = self._get(f"{self.root}/props")
        settings = body.get("default_generation_settings") if isinstance(body, dict) else None
        return _tokens((settings or {}).get("n_ctx")) or _tokens(body.get("n_ctx") if isinstance(body, dict) else None)

    def ollama(self, model: str) -> int | None:
        body = self._send("POST", f"{self.root}/api/show", {"model": model, "name": model})  # name: older Ollama
        if not isinstance(body, dict) or not isinstance(body.get("model_info"), dict):
            return None
        info = body["model_info"]
        arch = info.get("general.architecture")
        trained = _tokens(info.get(f"{arch}.context_length")) if isinstance(arch, str) else None
        trained = trained or next(
            (_tokens(v) for k, v in info.items() if k.endswith(".context_length") and _tokens(v)), None
        )
        used = _num_ctx(body.get("parameters")) or self._ollama_running(model) or OLLAMA_DEFAULT_CTX
        return min(used, trained) if trained else used

    def _ollama_running(self, model: str) -> int | None:
        try:
            body = self._get(f"{self.root}/api/ps")
        except (httpx.HTTPError, ValueError):
            return None
        models = body.get("models") if isinstance(body, dict) else None
        for item in models if isinstance(models, list) else []:
            if isinstance(item, dict) and model in (item.get("name"), item.get("model")):
                return _tokens(item.get("context_length"))
        return None

    def lmstudio(self, model: str) -> int | None:
        try:
            body = self._get(f"{self.root}/api/v1/models")
            for item in body.get("models") or []:
                if isinstance(item, dict) and (
                    item.get("key") == model
                    or any(isinstance(i, dict) and i.get("id") == model for i in item.get("loaded_instances") or [])
                ):
                    for instance in item.get("loaded_instances") or []:
                        loaded = _tokens(((instance or {}).get("config") or {}).get("context_length"))
                        if loaded:
                            return loaded
                    return _tokens(item.get("max_context_length"))
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        body = self._get(f"{self.root}/api/v0/models")
        for item in body.get("data") or []:
            if isinstance(item, dict) and item.get("id") == model:
                return _tokens(item.get("loaded_context_length")) or _tokens(item.get("max_context_length"))
        return None

    def models_list(self, model: str) -> int | None:
        body = self._get(f"{self.base}/models")
        for item in body.get("data") or []:
            if isinstance(item, dict) and item.get("id") == model:
                return _tokens(item.get("max_model_len")) or _tokens(item.get("context_length"))
        return None

    # ── HTTP ───────────────────────────────────────────────────────────────────
    def _get(self, url: str) -> Any:
        return self._send("GET", url, None)

    def _send(self, method: str, url: str, payload: dict[str, Any] | None) -> Any:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise httpx.TimeoutException("out of time")
        headers = {"Accept": "application/json"}
        key = resolve_api_key(self.settings)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        response = self.client.request(method, url, json=payload, headers=headers, timeout=left, auth=self.auth)
        response.raise_for_status()
        return response.json()


def _tokens(value: object) -> int | None:
    return value if type(value) is int and value > 0 else None


def _num_ctx(parameters: object) -> int | None:
    """``num_ctx`` from Ollama's ``parameters`` text ("num_ctx 8192\\nstop ...")."""
    if not isinstance(parameters, str):
        return None
    for line in parameters.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "num_ctx" and words[1].isdigit():
            return int(words[1]) or None
    return None


__all__ = ["OLLAMA_DEFAULT_CTX", "context_window", "forget_context_windows"]
