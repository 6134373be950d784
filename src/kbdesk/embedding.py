"""Embedding for a knowledge base: the KB's provider and model, cached and logged.

A KB's ``embedding_config`` names a provider (a ``[providers.NAME]`` table of
config.toml) and a model. :class:`Embedders` turns that into a :class:`KbEmbedder`
whose calls go through the provider client and write one ``usage_log`` row each.
Whatever the provider, every vector is checked against the KB's recorded dimension
before it can reach the store (:func:`~kbdesk.providers.faults.check_result`).

A search query is embedded while someone waits, so it gets a short policy of its own
(:data:`QUERY_TIMEOUT`, :data:`QUERY_RETRIES`, :data:`QUERY_RETRY_BUDGET`) and goes
through the provider's circuit breaker (:mod:`kbdesk.providers.breaker`): a provider that
just failed is not asked again for a short, growing pause, and the search answers by
keyword meanwhile. Ingestion keeps the provider's own, patient policy.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kbdesk.config import Config
from kbdesk.models import KnowledgeBase
from kbdesk.providers import EmbedResult, ProviderConfigError, base_url_for
from kbdesk.providers.breaker import Breaker, breaker_for
from kbdesk.providers.faults import check_result
from kbdesk.providers.local import LocalProvider
from kbdesk.store.api import Store

QUERY_TIMEOUT = 2.0
"""Seconds one query embedding may take: a warm local model answers in tens of
milliseconds, a hosted API in a few hundred; a provider slower than this (a model still
loading, a server that hangs) costs that search its vector side, with a notice."""
QUERY_RETRIES = 0
"""A query embedding is not retried: the search answers at once by keyword, with a
notice, and the circuit breaker lets the provider be tried again a few seconds later (a
retry would cost every search during an outage the backoff, 0.25-0.5 s, for nothing)."""
QUERY_RETRY_BUDGET = 2.0
"""Seconds a query embedding may take altogether."""


def _is_http_provider(provider: Any) -> bool:
    from kbdesk.providers.openai_compat import OpenAICompatProvider  # imported with the provider anyway

    return isinstance(provider, OpenAICompatProvider)


@dataclass
class KbEmbedder:
    """Embeds texts with one KB's model."""

    kb: KnowledgeBase
    provider: Any  # OpenAICompatProvider or a local provider: .embed(texts, model, ...)
    provider_name: str

    @property
    def model(self) -> str:
        return str(self.kb.model_id)

    @property
    def model_key(self) -> str:
        """Key of the embedding cache: a model's vectors serve every KB that uses it
        (whichever provider serves the model; dimensions are checked on every write)."""
        return self.model

    def embed(self, texts: Sequence[str], *, collect: bool = False) -> EmbedResult:
        """One vector per text. With ``collect``, an input that fails alone (too long,
        empty, an unusable vector, a malformed answer even when sent alone) is a
        failure in the result and the others are kept; without it, it raises.

        A vector whose length is not the KB's recorded ``dimensions`` is such a failure,
        its message naming provider, model, expected and got dimensions.
        """
        items = list(texts)
        mode: Literal["raise", "collect"] = "collect" if collect else "raise"
        expected = self.kb.dimensions
        if isinstance(self.provider, LocalProvider) or _is_http_provider(self.provider):
            result = self.provider.embed(items, self.model, expect_dimensions=expected, on_input_error=mode)
        else:  # a registered provider: embed(texts, model, on_input_error=...) is all it promises
            result = self.provider.embed(items, self.model, on_input_error=mode)
        return check_result(
            result, len(items), provider=self.provider_name, model=self.model, dimensions=expected, on_input_error=mode
        )


class Embedders:
    """Provider clients built from the config, one per provider name, shared by threads."""

    def __init__(self, config: Config, store: Store) -> None:
        self.config = config
        self.store = store
        self._lock = threading.Lock()
        self._providers: dict[str, Any] = {}
        self._query_providers: dict[str, Any] = {}
        self._registered: set[str] = set()

    def register(self, name: str, provider: Any) -> None:
        """Use ``provider`` (anything with ``embed(texts, model, on_input_error=...)``
        returning an :class:`EmbedResult`) for KBs that name ``name``.

        This is how an in-process embedder plugs in, exactly as the built-in HTTP
        client does; a registered provider wins over a config.toml table of that name.
        """
        with self._lock:
            self._providers[name] = provider
            self._query_providers.pop(name, None)
            self._registered.add(name)

    @property
    def registered(self) -> frozenset[str]:
        """Names of the providers plugged in with :meth:`register` (they live in this process only)."""
        with self._lock:
            return frozenset(self._registered)

    def provider(self, name: str) -> Any:
        with self._lock:
            if name not in self._providers:
                settings = self.config.providers.get(name)
                if settings is None:
                    raise ProviderConfigError(
                        f"no provider named '{name}' in config.toml; add it with 'kbdesk provider add {name} --kind …'",
                        provider=name,
                    )
                if settings.kind == "local":
                    self._providers[name] = LocalProvider(name, settings, on_usage=self._log)
                else:
                    from kbdesk.providers.openai_compat import OpenAICompatProvider  # httpx: on first use

                    self._providers[name] = OpenAICompatProvider(name, settings, on_usage=self._log)
            return self._providers[name]

    def for_kb(self, kb: KnowledgeBase) -> KbEmbedder | None:
        """The KB's embedder, or None for a keyword-only KB."""
        if not kb.model_id:
            return None
        name = kb.embedding_config.get("provider")
        if not name:
            if len(self.config.providers) == 1:
                name = next(iter(self.config.providers))
            else:
                raise ProviderConfigError(f"knowledge base '{kb.name}' names no provider for {kb.model_id}")
        return KbEmbedder(kb, self.provider(name), name)

    def query_provider(self, name: str) -> Any:
        """The client search queries go through: an HTTP client with the short query
        policy (module docstring); an in-process or registered provider as it is."""
        with self._lock:
            if name in self._registered:
                return self._providers[name]
            if name in self._query_providers:
                return self._query_providers[name]
            settings = self.config.providers.get(name)
        if settings is None or settings.kind == "local":
            return self.provider(name)  # the one error message for a missing provider; local as it is
        quick = dataclasses.replace(
            settings,
            timeout=min(settings.timeout, QUERY_TIMEOUT),
            max_retries=min(settings.max_retries, QUERY_RETRIES),
            retry_budget=min(settings.retry_budget, QUERY_RETRY_BUDGET),
        )
        with self._lock:
            if name not in self._query_providers:
                from kbdesk.providers.openai_compat import OpenAICompatProvider  # httpx: on first use

                self._query_providers[name] = OpenAICompatProvider(name, quick, on_usage=self._log)
            return self._query_providers[name]

    def breaker(self, name: str) -> Breaker:
        """The circuit breaker of provider ``name`` (shared by every desk of this process
        that reaches the same server)."""
        settings = self.config.providers.get(name)
        if name in self._registered or settings is None or settings.kind == "local":
            return breaker_for(f"{name} (in this process: {id(self)})", name)
        return breaker_for(f"{name} {base_url_for(settings, name)}", name)

    def query_vector(self, kb: KnowledgeBase, query: str) -> list[float] | None:
        """Embed a search query for ``kb``; None when the KB's provider is not set up.

        Raises the provider's error when it fails, or :class:`~kbdesk.providers.breaker.BreakerOpen`
        at once while the provider is left alone after a failure."""
        try:
            embedder = self.for_kb(kb)
        except ProviderConfigError:
            return None
        if embedder is None:
            return None
        cached = self.store.cached_vectors(embedder.model_key, [_hash(query)])
        if cached:
            import numpy as np

            return np.frombuffer(next(iter(cached.values())), dtype=np.float32).tolist()
        quick = KbEmbedder(kb, self.query_provider(embedder.provider_name), embedder.provider_name)
        result: Any = self.breaker(embedder.provider_name).call(lambda: quick.embed([query]), embedder.model)
        return result.vectors[0]

    def _log(self, usage: dict[str, Any]) -> None:
        self.store.log_usage(
            usage.get("role", "embedding"),
            provider=usage.get("provider", ""),
            model=usage.get("model", ""),
            inputs=usage.get("inputs", 0),
            prompt_tokens=usage.get("prompt_tokens"),
            total_tokens=usage.get("total_tokens"),
        )

    def close(self) -> None:
        with self._lock:
            for provider in [*self._providers.values(), *self._query_providers.values()]:
                close = getattr(provider, "close", None)
                if close:
                    close()
            self._providers.clear()
            self._query_providers.clear()


def _hash(text: str) -> str:
    from kbdesk.store.doc_types import text_hash

    return text_hash(text)
