"""The KB side of a store's surface: methods that are a composed repository's.

Both stores inherit :class:`StoreSurface` (methods only, no state and no hooks) and call
:meth:`StoreSurface.compose_store` while opening; ``store.cached_vectors(...)`` then
answers from ``store.cache`` (:func:`kbdesk.store.core.compose.via`), and so on for the
KB records, the audit log, the documents and the transfer.
"""

from __future__ import annotations

from kbdesk.store.core.audit import AuditLog
from kbdesk.store.core.bulk import Transfer
from kbdesk.store.core.cache import CacheVectors, EmbeddingCache
from kbdesk.store.core.compose import Base, via
from kbdesk.store.core.documents import Documents
from kbdesk.store.core.facts import Facts
from kbdesk.store.core.parts import BulkStorage, ChunkStorage
from kbdesk.store.core.records import Records
from kbdesk.store.rows_api import Retrieval

__all__ = ["StoreSurface"]


class StoreSurface:
    """The KB-side repositories of a store, and their methods as the store's."""

    audit_log: AuditLog
    records: Records
    documents: Documents
    transfer: Transfer
    cache: EmbeddingCache
    facts: Facts
    lookup: Retrieval

    def compose_store(
        self,
        base: Base,
        records: Records,
        lookup: Retrieval,
        chunks: ChunkStorage,
        bulk: BulkStorage,
        cache_vectors: CacheVectors,
    ) -> None:
        """Build the repositories over ``base`` (the store's connections and engine),
        ``records`` (its KB records, with their audit log), ``lookup`` (its retrieval) and
        the engine's own objects."""
        self.facts = Facts(base)
        self.lookup = lookup
        self.audit_log = records.log
        self.records = records
        self.documents = Documents(base, records, chunks, bulk)
        self.transfer = Transfer(base, records, self.documents, chunks, bulk)
        self.cache = EmbeddingCache(base, records, cache_vectors)

    # ── knowledge bases (Records: the Postgres store's delete their own) ──
    create_kb = via("records", Records.create_kb)
    get_kb = via("records", Records.get_kb)
    find_kb = via("records", Records.find_kb)
    list_kbs = via("records", Records.list_kbs)
    update_kb = via("records", Records.update_kb)
    delete_kb = via("records", Records.delete_kb)
    recount = via("records", Records.recount)
    set_kb_status = via("records", Records.set_kb_status)
    kb_by_id = via("records", Records.kb_by_id)
    kb_named = via("records", Records.kb_named)
    resolve_team = via("records", Records.resolve_team)

    # ── the audit log (AuditLog) ──
    audit = via("audit_log", AuditLog.audit)
    audit_entries = via("audit_log", AuditLog.audit_entries)

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

    # ── search filters resolved to documents (Facts) ──
    filter_documents = via("facts", Facts.filter_documents)
    kb_facts = via("facts", Facts.kb_facts)

    # ── candidates and rows for search (the engine's lookup: a Retrieval) ──
    kb_vector_dimensions = via("lookup", Retrieval.kb_vector_dimensions)
    vector_candidates = via("lookup", Retrieval.vector_candidates)
    keyword_candidates = via("lookup", Retrieval.keyword_candidates)
    keyword_scores = via("lookup", Retrieval.keyword_scores)
    keyword_parts = via("lookup", Retrieval.keyword_parts)
    cosine_for = via("lookup", Retrieval.cosine_for)
    chunk_kbs = via("lookup", Retrieval.chunk_kbs)
    result_rows = via("lookup", Retrieval.result_rows)
    chunk_neighbours = via("lookup", Retrieval.chunk_neighbours)
