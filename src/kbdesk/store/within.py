"""A search's filter resolved for the KBs it searches: per KB, the facts of its searchable
documents (:class:`KbFacts`) and which of them the filter lets through (:class:`Within`).
The store core builds them (:mod:`kbdesk.store.core.facts`); each engine restricts its
candidate generators to them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbdesk.filters import DocumentFacts, Filters

MASKS_KEPT = 8  # filters remembered per KB


@dataclass
class KbFacts:
    """The searchable documents of one KB at one stamp, and what filters made of them."""

    stamp: tuple[Any, ...]
    ids: list[str]
    docs: list[DocumentFacts]
    chunks: np.ndarray  # chunks per document
    masks: OrderedDict[Filters, np.ndarray] = field(default_factory=OrderedDict)
    extra: dict[str, Any] = field(default_factory=dict)  # what an engine derives from them (seqs by document)
    lock: threading.Lock = field(default_factory=threading.Lock)  # searches run in several threads (serve)

    def names(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """(tags, folders, file types) these documents carry — what a filter on the KB can
        name, for completion: tags with the parents of nested ones, every folder of every
        path (``work`` and ``work/plans`` of ``work/plans/q3.md``). Worked out once per stamp."""
        with self.lock:
            found = self.extra.get("names")
        if found is None:
            tags: set[str] = set()
            folders: set[str] = set()
            for doc in self.docs:
                tags.update(doc.tags)
                parts = doc.path.split("/")[:-1]
                folders.update("/".join(parts[: i + 1]) for i in range(len(parts)))
            types = frozenset(d.file_type for d in self.docs if d.file_type)
            found = (frozenset(tags), frozenset(folders), types)
            with self.lock:
                self.extra["names"] = found
        return found

    def mask(self, filters: Filters) -> np.ndarray:
        with self.lock:
            found = self.masks.get(filters)
            if found is not None:
                self.masks.move_to_end(filters)
                return found
        found = np.fromiter((filters.admits(d) for d in self.docs), dtype=bool, count=len(self.docs))
        with self.lock:
            self.masks[filters] = found
            while len(self.masks) > MASKS_KEPT:
                self.masks.popitem(last=False)
        return found


@dataclass
class Within:
    """A filter resolved for the KBs of one search: per KB, the documents it may return."""

    filters: Filters
    facts: dict[str, KbFacts]
    masks: dict[str, np.ndarray]

    def documents(self, kb_id: str) -> list[str]:
        """Ids of the KB's documents inside the filter."""
        facts, mask = self.facts.get(kb_id), self.masks.get(kb_id)
        if facts is None or mask is None:
            return []
        return [facts.ids[i] for i in np.flatnonzero(mask)]

    def chunk_count(self, kb_id: str) -> int:
        """How many chunks of the KB are inside the filter."""
        facts, mask = self.facts.get(kb_id), self.masks.get(kb_id)
        return 0 if facts is None or mask is None else int(facts.chunks[mask].sum())

    def total_chunks(self, kb_id: str) -> int:
        facts = self.facts.get(kb_id)
        return 0 if facts is None else int(facts.chunks.sum())

    def empty(self, kb_id: str) -> bool:
        mask = self.masks.get(kb_id)
        return mask is None or not mask.any()

    def all_documents(self) -> list[str]:
        """Ids of every document inside the filter, over all the KBs."""
        return [doc for kb_id in self.facts for doc in self.documents(kb_id)]
