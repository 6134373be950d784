"""A desk's search: the KBs named, their query vectors, the search and its notes; what a
filter on some KBs can name.

:meth:`kbdesk.desk.Desk.search` (its documentation is there) runs :func:`search_kbs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kbdesk.desk_api import DeskApi
from kbdesk.errors import InvalidInputError, KbdeskError
from kbdesk.filters import Filters
from kbdesk.filters_text import as_filters
from kbdesk.models import KnowledgeBase
from kbdesk.remote.names import split_refs
from kbdesk.search import SearchResponse, search
from kbdesk.store.api import Store

# (kb) -> query vector or None: filled in by the provider layer when one is configured
QueryEmbedder = Callable[[KnowledgeBase, str], Any]


def search_kbs(
    desk: DeskApi,
    query_embedder: QueryEmbedder | None,
    refs: Sequence[str],
    query: str,
    *,
    query_vector: Any = None,
    limit: int | None = None,
    threshold: float | None = None,
    mode: str | None = None,
    explain: bool = False,
    filters: Filters | dict[str, Any] | str | None = None,
) -> SearchResponse:
    """Search the KBs named by ``refs`` (:meth:`kbdesk.desk.Desk.search`)."""
    if not refs:
        raise InvalidInputError("name at least one knowledge base to search")
    filters = as_filters(filters) if not isinstance(filters, Filters) else filters
    if desk.config.remotes:  # remote KBs (team:Product Docs) searched at once, in one ranking
        local_refs, remote_refs = split_refs(refs, desk.config.remotes)
        if remote_refs:
            from kbdesk.remote.federation import federated_search

            return federated_search(
                desk,
                local_refs,
                remote_refs,
                query,
                query_vector=query_vector,
                limit=limit,
                threshold=threshold,
                mode=mode,
                explain=explain,
                filters=filters,
            )
    kbs = unique_kbs([desk.kb(ref) for ref in refs])
    mode = mode or desk.config.search.mode
    notes: list[str] = []
    fallback: list[str] = []
    if query_vector is None and mode != "keyword":
        query_vector, notes, fallback, error = embed_query(desk.store, query_embedder, kbs, query)
        if error is not None and mode == "vector":
            raise error
        if fallback and query_vector is None and mode == "hybrid":
            mode = "keyword"  # nothing to fuse: every vector KB lost its query vector
    response = search(
        desk.store,
        kbs,
        query,
        query_vector,
        limit=limit if limit is not None else desk.config.search.limit,
        threshold=threshold if threshold is not None else desk.config.search.threshold,
        mode=mode,
        explain=explain,
        fusion=desk.config.search.fusion,
        alpha=desk.config.search.alpha,
        filters=filters or None,
    )
    response.notes.extend(notes)
    response.keyword_fallback.extend(fallback)
    if threshold is not None and response.mode == "keyword" and not fallback:  # asked for, and it cannot apply
        response.notes.append("keyword search has no cosine: the threshold applies to vector and hybrid search only")
    return response


def embed_query(
    store: Store, query_embedder: QueryEmbedder | None, kbs: Sequence[KnowledgeBase], query: str
) -> tuple[dict[str, Any] | None, list[str], list[str], KbdeskError | None]:
    """Query vectors of the KBs that hold vectors, embedded once per (provider, model):
    ``(vectors, notes, names searched by keyword instead, the first error)``."""
    groups: dict[tuple[Any, str], list[KnowledgeBase]] = {}
    for kb in kbs:
        if kb.model_id and store.kb_vector_dimensions(kb.id) is not None:
            groups.setdefault((kb.embedding_config.get("provider"), kb.model_id), []).append(kb)
    vectors: dict[str, Any] = {}
    notes: list[str] = []
    fallback: list[str] = []
    first_error: KbdeskError | None = None
    for (_, model), members in groups.items():
        names = ", ".join(f"'{kb.name}'" for kb in members)
        try:
            vector = query_embedder(members[0], query) if query_embedder else None
        except KbdeskError as exc:
            first_error = first_error or exc
            fallback.extend(kb.name for kb in members)
            notes.append(f"the query could not be embedded with {model} ({_short(exc)}): keyword search in {names}")
            continue
        if vector is None:
            fallback.extend(kb.name for kb in members)
            notes.append(f"{names} embed with {model}, but no provider for it is set up: keyword search only")
            continue
        vectors.update({kb.id: vector for kb in members})
    return (vectors or None), notes, fallback, first_error


def _short(error: BaseException, limit: int = 200) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class FilterHints:
    """What a filter can name in some KBs (:meth:`kbdesk.desk.Desk.filter_hints`)."""

    tags: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    types: tuple[str, ...] = ()


def filter_hints(store: Store, kbs: Sequence[KnowledgeBase]) -> FilterHints:
    """The tags, folders and file types a filter on ``kbs`` can name, from the facts the
    store keeps for filtering (:meth:`kbdesk.desk.Desk.filter_hints`)."""
    tags: set[str] = set()
    folders: set[str] = set()
    types: set[str] = set()
    for kb in kbs:
        kb_tags, kb_folders, kb_types = store.kb_facts(kb.id).names()
        tags |= kb_tags
        folders |= kb_folders
        types |= kb_types
    return FilterHints(tuple(sorted(tags)), tuple(sorted(folders)), tuple(sorted(types)))


def unique_kbs(kbs: list[KnowledgeBase]) -> list[KnowledgeBase]:
    """``kbs`` without repeats (the first of each), in order."""
    first: dict[str, KnowledgeBase] = {}
    for kb in kbs:
        first.setdefault(kb.id, kb)
    return list(first.values())
