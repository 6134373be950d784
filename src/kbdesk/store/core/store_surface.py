"""The KB side of a store's surface: methods that are a composed repository's.

Both stores inherit :class:`StoreSurface` (methods only, no state and no hooks) and call
:meth:`StoreSurface.compose_store` while opening; ``store.cached_vectors(...)`` then
answers from ``store.cache`` (:func:`kbdesk.store.core.compose.via`). The KB records,
documents, transfer and lookup are still classes the store inherits
(:mod:`kbdesk.store.core.records`, :mod:`~kbdesk.store.core.documents`, …).
"""

from __future__ import annotations

from kbdesk.store.core.cache import CacheVectors, EmbeddingCache, KbAccess
from kbdesk.store.core.compose import Base, via

__all__ = ["StoreSurface"]


class StoreSurface:
    """The KB-side repositories of a store, and their methods as the store's."""

    cache: EmbeddingCache

    def compose_store(self, base: Base, kbs: KbAccess, cache_vectors: CacheVectors) -> None:
        """Build the repositories over ``base`` (the store's connections and engine) and
        ``kbs`` (its KB records)."""
        self.cache = EmbeddingCache(base, kbs, cache_vectors)

    # ── the embedding cache, model swaps, the usage log (EmbeddingCache) ──
    cached_vectors = via("cache", EmbeddingCache.cached_vectors)
    put_cached_vectors = via("cache", EmbeddingCache.put_cached_vectors)
    drop_cached_vectors = via("cache", EmbeddingCache.drop_cached_vectors)
    prune_cached_vectors = via("cache", EmbeddingCache.prune_cached_vectors)
    chunk_texts = via("cache", EmbeddingCache.chunk_texts)
    swap_embedding_model = via("cache", EmbeddingCache.swap_embedding_model)
    log_usage = via("cache", EmbeddingCache.log_usage)
