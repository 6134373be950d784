"""What a store does with KBs and their documents, as protocols, one per part of the store
(:mod:`kbdesk.store.core.records`, :mod:`~kbdesk.store.core.documents`,
:mod:`~kbdesk.store.core.cache`, :mod:`~kbdesk.store.core.bulk`, each engine's lookup):
:class:`kbdesk.store.api.Store` is the sum of them, with its connections and lifecycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kbdesk.filters import Filters
from kbdesk.models import ChunkInput, Document, DocumentBrief, KnowledgeBase
from kbdesk.store.doc_types import NewDocument, StatusUpdate
from kbdesk.store.keywords import KeywordParts
from kbdesk.store.within import KbFacts, Within

__all__ = ["CacheRows", "DocumentRows", "Filtering", "KbRows", "Retrieval", "TransferRows"]


class KbRows(Protocol):
    """Knowledge bases: made, found, listed, changed, deleted, counted."""

    def create_kb(
        self,
        name: str,
        description: str = "",
        *,
        embedding_config: dict[str, Any] | None = None,
        scope: str = "personal",
        team_id: str | None = None,
        discoverable: bool = True,
        kb_id: str | None = None,
    ) -> KnowledgeBase: ...
    def get_kb(self, kb_id: str) -> KnowledgeBase: ...
    def find_kb(self, ref: str) -> KnowledgeBase: ...
    def list_kbs(self) -> list[KnowledgeBase]: ...
    def update_kb(
        self,
        kb_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        discoverable: bool | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
    ) -> KnowledgeBase: ...
    def delete_kb(self, kb_id: str) -> KnowledgeBase: ...
    def recount(self, kb_id: str) -> KnowledgeBase: ...
    def set_kb_status(self, kb_id: str, status: str) -> None: ...
    def kb_by_id(self, kb_id: str) -> KnowledgeBase | None: ...
    def kb_named(self, name: str) -> KnowledgeBase | None: ...
    def resolve_team(self, ref: str) -> str: ...


class DocumentRows(Protocol):
    """Documents: identity, claims, versions, the ready transaction."""

    def source_key(self, path: Path) -> str:
        """The source a file's document is known by in this store."""
        ...

    def get_document(self, doc_id: str) -> Document: ...
    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, Document]: ...
    def find_document(self, kb_id: str, ref: str) -> Document: ...
    def list_documents(self, kb_id: str, status: str | None = None) -> list[Document]: ...
    def document_briefs(self, kb_id: str) -> list[DocumentBrief]:
        """Every document of a KB as a list shows it (no order): cheap for thousands of them."""
        ...

    def documents_by_source(self, kb_id: str) -> dict[str, Document]: ...
    def unfinished_documents(self, kb_id: str | None = None) -> list[Document]: ...
    def searchable_counts(self) -> dict[str, int]: ...
    def failed_counts(self) -> dict[str, int]: ...
    def document_sections(self, doc_id: str) -> list[tuple[str, dict[str, Any]]] | None: ...
    def document_text(self, doc_id: str) -> str | None: ...
    def take_versions(self, specs: Sequence[NewDocument], claim: str) -> list[Document | None]: ...
    def touch_documents(self, items: Sequence[tuple[str, int, float | None]]) -> None: ...
    def claim_documents(self, docs: Sequence[Document], claim: str) -> list[Document]: ...
    def release_claims(self, claim: str) -> int: ...
    def set_statuses(self, updates: Sequence[StatusUpdate]) -> None: ...
    def finish_documents(
        self,
        items: Sequence[tuple[Any, ...]],
        *,
        before: Sequence[StatusUpdate] = (),
        after: Sequence[StatusUpdate] = (),
        rows: bool = True,
    ) -> list[Document | Exception | None]: ...
    def add_document(
        self,
        kb_id: str,
        filename: str,
        chunks: Sequence[ChunkInput | str],
        *,
        vectors: Any = None,
        content_type: str = "text/plain",
        size_bytes: int | None = None,
        extracted_text: str | None = None,
        content_hash: str | None = None,
        source_path: str | None = None,
        doc_id: str | None = None,
    ) -> Document: ...
    def delete_document(self, doc_id: str) -> Document: ...


class CacheRows(Protocol):
    """The embedding cache, model swaps and the usage log."""

    def cached_vectors(self, model_id: str, hashes: Iterable[str]) -> dict[str, bytes]: ...
    def put_cached_vectors(self, model_key: str, items: Sequence[tuple[str, Any]]) -> None: ...
    def drop_cached_vectors(self, model_key: str, hashes: Iterable[str]) -> None: ...
    def prune_cached_vectors(self, prefix: str, days: int) -> int: ...
    def chunk_texts(self, kb_id: str) -> list[tuple[str, str]]: ...
    def swap_embedding_model(self, kb_id: str, provider: str, model_id: str, model_key: str) -> KnowledgeBase: ...
    def log_usage(
        self,
        role: str,
        *,
        provider: str = "",
        model: str = "",
        kb_id: str | None = None,
        inputs: int = 0,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        total_tokens: int | None = None,
    ) -> None: ...


class TransferRows(Protocol):
    """Whole documents in and out (:mod:`kbdesk.transfer`)."""

    def document_summaries(self, kb_id: str) -> dict[str, dict[str, Any]]: ...
    def export_documents(self, kb_id: str, doc_ids: Sequence[str], dims: int | None) -> list[dict[str, Any]]: ...
    def import_documents(self, kb_id: str, docs: Sequence[dict[str, Any]]) -> None: ...
    def delete_documents(self, kb_id: str, doc_ids: Sequence[str]) -> int: ...
    def index_vectors(self, kb_id: str) -> None: ...


class Filtering(Protocol):
    """Search filters resolved to documents (:class:`kbdesk.store.core.facts.Facts`)."""

    def filter_documents(self, kb_ids: Sequence[str], filters: Filters) -> Within:
        """A search filter resolved to the documents of each KB it lets through
        (:mod:`kbdesk.store.core.facts`): what the candidate methods below take as ``within``."""
        ...

    def kb_facts(self, kb_id: str) -> KbFacts:
        """What filters look at in each document of a KB (kept in memory while the KB does
        not change): its path, file type, dates and tags."""
        ...


class Retrieval(Protocol):
    """Candidates and rows for :mod:`kbdesk.search` (each engine's lookup:
    :class:`kbdesk.store.sqlite.lookup.SqliteLookup`, :class:`kbdesk.store.postgres.lookup.PgLookup`)."""

    def kb_vector_dimensions(self, kb_id: str) -> int | None: ...

    def vector_candidates(
        self, kb_id: str, dimensions: int, query: np.ndarray, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest chunks of one KB: (seq, cosine), best first; with ``within``,
        the ``k`` nearest among the chunks of the documents inside it."""
        ...

    def keyword_candidates(
        self, kb_ids: Sequence[str], text: str, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` best keyword matches over several KBs: (seq, BM25 score), best first;
        with ``within``, among the chunks of the documents inside it."""
        ...

    def keyword_scores(self, kb_ids: Sequence[str], text: str, seqs: Sequence[int]) -> dict[int, float]:
        """The BM25 score :meth:`keyword_candidates` would give each chunk (by seq) that
        matches ``text`` at all, however far down the keyword ranking."""
        ...

    def keyword_parts(self, kb_ids: Sequence[str], text: str, chunks: Sequence[tuple[str, int]]) -> KeywordParts:
        """What the keyword (BM25) score of each chunk (document id, chunk index) for
        ``text`` is made of: the collection's size, each query word's document frequency,
        each chunk's score split by word (federated search rescales them to one scale)."""
        ...

    def cosine_for(self, seqs: Iterable[int], query: np.ndarray) -> dict[int, float]:
        """The cosine of each chunk (by seq) that has a vector, to ``query``."""
        ...

    def chunk_kbs(self, seqs: Sequence[int]) -> dict[int, str]:
        """The KB id of each chunk (by seq)."""
        ...

    def result_rows(self, seqs: Sequence[int]) -> dict[int, dict[str, Any]]: ...
    def chunk_neighbours(self, document_id: str, chunk_index: int, radius: int = 1) -> list[dict[str, Any]]: ...
