"""The KB side of a store's surface: methods that are a composed repository's.

Both stores inherit :class:`StoreSurface` (methods only, no state and no hooks) and call
:meth:`StoreSurface.compose_store` while opening; ``store.cached_vectors(...)`` then
answers from ``store.cache`` (:func:`kbdesk.store.core.compose.via`), and so on for the
documents and the transfer. The KB records and the lookup are still classes the store
inherits (:mod:`kbdesk.store.core.records`, each engine's lookup).
"""

from __future__ import annotations

from kbdesk.store.core.bulk import Transfer
from kbdesk.store.core.cache import CacheVectors, EmbeddingCache
from kbdesk.store.core.compose import Base, via
from kbdesk.store.core.documents import Documents
from kbdesk.store.core.parts import BulkStorage, ChunkStorage, KbRecords

__all__ = ["StoreSurface"]


class StoreSurface:
    """The KB-side repositories of a store, and their methods as the store's."""

    documents: Documents
    transfer: Transfer
    cache: EmbeddingCache

    def compose_store(
        self,
        base: Base,
        kbs: KbRecords,
        chunks: ChunkStorage,
        bulk: BulkStorage,
        cache_vectors: CacheVectors,
    ) -> None:
        """Build the repositories over ``base`` (the store's connections and engine),
        ``kbs`` (its KB records) and the engine's own objects."""
        self.documents = Documents(base, kbs, chunks, bulk)
        self.transfer = Transfer(base, kbs, self.documents, chunks, bulk)
        self.cache = EmbeddingCache(base, kbs, cache_vectors)

    # ── documents: identity, claims, versions, the ready transaction (Documents) ──
    get_document = via("documents", Documents.get_document)
    get_documents = via("documents", Documents.get_documents)
    find_document = via("documents", Documents.find_document)
    list_documents = via("documents", Documents.list_documents)
    document_briefs = via("documents", Documents.document_briefs)
    document_sections = via("documents", Documents.document_sections)
    document_text = via("documents", Documents.document_text)
    searchable_counts = via("documents", Documents.searchable_counts)
    source_key = via("documents", Documents.source_key)
    failed_counts = via("documents", Documents.failed_counts)
    documents_by_source = via("documents", Documents.documents_by_source)
    unfinished_documents = via("documents", Documents.unfinished_documents)
    finish_documents = via("documents", Documents.finish_documents)
    finish_document = via("documents", Documents.finish_document)
    add_document = via("documents", Documents.add_document)
    delete_document = via("documents", Documents.delete_document)
    take_versions = via("documents", Documents.take_versions)
    create_documents = via("documents", Documents.create_documents)
    create_document = via("documents", Documents.create_document)
    touch_documents = via("documents", Documents.touch_documents)
    claim_documents = via("documents", Documents.claim_documents)
    claim_document = via("documents", Documents.claim_document)
    release_claims = via("documents", Documents.release_claims)
    set_statuses = via("documents", Documents.set_statuses)
    set_document_status = via("documents", Documents.set_document_status)

    # ── whole documents in and out (Transfer) ──
    document_summaries = via("transfer", Transfer.document_summaries)
    export_documents = via("transfer", Transfer.export_documents)
    import_documents = via("transfer", Transfer.import_documents)
    index_vectors = via("transfer", Transfer.index_vectors)
    delete_documents = via("transfer", Transfer.delete_documents)

    # ── the embedding cache, model swaps, the usage log (EmbeddingCache) ──
    cached_vectors = via("cache", EmbeddingCache.cached_vectors)
    put_cached_vectors = via("cache", EmbeddingCache.put_cached_vectors)
    drop_cached_vectors = via("cache", EmbeddingCache.drop_cached_vectors)
    prune_cached_vectors = via("cache", EmbeddingCache.prune_cached_vectors)
    chunk_texts = via("cache", EmbeddingCache.chunk_texts)
    swap_embedding_model = via("cache", EmbeddingCache.swap_embedding_model)
    log_usage = via("cache", EmbeddingCache.log_usage)
