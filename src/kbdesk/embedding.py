"""Embedding for a knowledge base: the KB's provider and model, cached and logged.

A KB's ``embedding_config`` names a provider (a ``[providers.NAME]`` table of
config.toml) and a model. :class:`Embedders` turns that into a :class:`KbEmbedder`
whose calls go through the provider client and write one ``usage_log`` row each.
Whatever the provider, every vector is checked against the KB's recorded dimension
before it can reach the store (:func:`~kbdesk.providers.faults.check_result`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbdesk.config import Config
from kbdesk.models import KnowledgeBase
from kbdesk.providers import EmbedResult, OpenAICompatProvider, ProviderConfigError
from kbdesk.providers.faults import check_result
from kbdesk.providers.local import LocalProvider


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
        mode = "collect" if collect else "raise"
        expected = self.kb.dimensions
        if isinstance(self.provider, (OpenAICompatProvider, LocalProvider)):
            result = self.provider.embed(items, self.model, expect_dimensions=expected, on_input_error=mode)
        else:  # a registered provider: embed(texts, model, on_input_error=...) is all it promises
            result = self.provider.embed(items, self.model, on_input_error=mode)
        return check_result(
            result, len(items), provider=self.provider_name, model=self.model, dimensions=expected, on_input_error=mode
        )


class Embedders:
    """Provider clients built from the config, one per provider name, shared by threads."""

    def __init__(self, config: Config, store: Any) -> None:
        self.config = config
        self.store = store
        self._lock = threading.Lock()
        self._providers: dict[str, Any] = {}

    def register(self, name: str, provider: Any) -> None:
        """Use ``provider`` (anything with ``embed(texts, model, on_input_error=...)``
        returning an :class:`EmbedResult`) for KBs that name ``name``.

        This is how an in-process embedder plugs in, exactly as the built-in HTTP
        client does; a registered provider wins over a config.toml table of that name.
        """
        with self._lock:
            self._providers[name] = provider

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

    def query_vector(self, kb: KnowledgeBase, query: str) -> list[float] | None:
        """Embed a search query for ``kb``; None when the KB's provider is not set up."""
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
        return embedder.embed([query]).vectors[0]

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
            for provider in self._providers.values():
                close = getattr(provider, "close", None)
                if close:
                    close()
            self._providers.clear()


def _hash(text: str) -> str:
    from kbdesk.store.doc_types import text_hash

    return text_hash(text)
