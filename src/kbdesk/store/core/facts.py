"""Which documents a filter lets through: a search's filter resolved before any ranking.

:class:`kbdesk.filters.Filters` is evaluated here, once for both engines, against the
facts of each searchable document of a KB (its path, file type, modified and indexed
times, tags: :class:`kbdesk.filters.DocumentFacts`, read from ``kb_documents`` through a
covering index). The answer, a :class:`Within`, names the documents of each KB a search
may return and how many chunks they hold; each engine then restricts its candidate
generators to it (:mod:`kbdesk.store.sqlite.lookup`, :mod:`kbdesk.store.postgres.lookup`), so
a filtered search ranks only what is inside the filter and returns the best ``limit`` of
it whenever that many exist.

A KB's facts are kept in memory, keyed by its row's ``updated_at``, document and chunk
counts (every write that changes which chunks a KB holds moves them), together with the
masks of the last few filters asked of it: a conversation that searches again and again
with the same filter pays for it once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from kbdesk.filters import DocumentFacts, Filters
from kbdesk.store.core.parts import StoreParts

# every document of the KB: one without chunks adds nothing to a search, and a row another
# program wrote on a team server may not keep its chunk_count
FACTS_SQL = (
    "SELECT id, filename, file_type, source_mtime, indexed_at, tags, chunk_count FROM kb_documents WHERE kb_id = ?"
)
MASKS_KEPT = 8  # filters remembered per KB
KBS_KEPT = 64  # KBs whose facts are kept


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


def epoch(value: Any) -> float | None:
    """A stored time (ISO-8601 text on SQLite, a datetime on Postgres) as seconds since the epoch."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class FactsCore(StoreParts):
    """Filters resolved over ``kb_documents`` (both engines)."""

    def filter_documents(self, kb_ids: Sequence[str], filters: Filters) -> Within:
        """The documents of each of ``kb_ids`` that ``filters`` lets through."""
        facts = {kb_id: self.kb_facts(kb_id) for kb_id in kb_ids}
        return Within(filters, facts, {kb_id: f.mask(filters) for kb_id, f in facts.items()})

    def kb_facts(self, kb_id: str) -> KbFacts:
        """The facts of the KB's searchable documents (cached while the KB's row stands still)."""
        cache: OrderedDict[str, KbFacts] = self.__dict__.setdefault("_facts_cache", OrderedDict())
        lock: threading.Lock = self.__dict__.setdefault("_facts_lock", threading.Lock())
        conn = self.connection()
        row = conn.execute(
            self.db.sql("SELECT updated_at, document_count, chunk_count FROM knowledge_bases WHERE id = ?"), (kb_id,)
        ).fetchone()
        stamp = tuple(row) if row else ()
        with lock:
            found = cache.get(kb_id)
            if found is not None and found.stamp == stamp:
                cache.move_to_end(kb_id)
                return found
        rows = conn.execute(self.db.sql(FACTS_SQL), (kb_id,)).fetchall()
        ids, docs, chunks = [], [], []
        for doc_id, filename, file_type, mtime, indexed_at, tags, count in rows:
            ids.append(str(doc_id))
            chunks.append(int(count))
            found_tags = self.db.json_out(tags) or []
            docs.append(
                DocumentFacts(
                    filename,
                    file_type or "",
                    None if mtime is None else float(mtime),
                    epoch(indexed_at),
                    frozenset(str(t) for t in found_tags),
                )
            )
        facts = KbFacts(stamp, ids, docs, np.asarray(chunks, dtype=np.int64))
        with lock:
            cache[kb_id] = facts
            while len(cache) > KBS_KEPT:
                cache.popitem(last=False)
        return facts
