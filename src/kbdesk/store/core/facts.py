"""Which documents a filter lets through: a search's filter resolved before any ranking.

:class:`kbdesk.filters.Filters` is evaluated here, once for both engines, against the
facts of each searchable document of a KB (its path, file type, modified and indexed
times, tags, own date: :class:`kbdesk.filters.DocumentFacts`, read from ``kb_documents`` through a
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
from datetime import datetime

import numpy as np

from kbdesk.filters import DocumentFacts, Filters, with_parents
from kbdesk.store.core.compose import Base
from kbdesk.store.within import KbFacts, Within

# every document of the KB: one without chunks adds nothing to a search, and a row another
# program wrote on a team server may not keep its chunk_count
FACTS_SQL = (
    "SELECT id, filename, file_type, source_mtime, indexed_at, tags, chunk_count, doc_date "
    "FROM kb_documents WHERE kb_id = ?"
)
KBS_KEPT = 64  # KBs whose facts are kept


def epoch(value: object) -> float | None:
    """A stored time (ISO-8601 text on SQLite, a datetime on Postgres) as seconds since the epoch."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Facts:
    """Filters resolved over ``kb_documents`` (both engines), over the store's ``base``;
    the facts of the last :data:`KBS_KEPT` KBs asked about are kept in :attr:`cache`."""

    def __init__(self, base: Base) -> None:
        self.base = base
        self.cache: OrderedDict[str, KbFacts] = OrderedDict()
        self.lock = threading.Lock()

    def filter_documents(self, kb_ids: Sequence[str], filters: Filters) -> Within:
        """The documents of each of ``kb_ids`` that ``filters`` lets through."""
        facts = {kb_id: self.kb_facts(kb_id) for kb_id in kb_ids}
        return Within(filters, facts, {kb_id: f.mask(filters) for kb_id, f in facts.items()})

    def kb_facts(self, kb_id: str) -> KbFacts:
        """The facts of the KB's searchable documents (cached while the KB's row stands still)."""
        cache, lock, db = self.cache, self.lock, self.base.db
        conn = self.base.connection()
        row = conn.execute(
            db.sql("SELECT updated_at, document_count, chunk_count FROM knowledge_bases WHERE id = ?"), (kb_id,)
        ).fetchone()
        stamp = tuple(row) if row else ()
        with lock:
            found = cache.get(kb_id)
            if found is not None and found.stamp == stamp:
                cache.move_to_end(kb_id)
                return found
        rows = conn.execute(db.sql(FACTS_SQL), (kb_id,)).fetchall()
        ids, docs, chunks = [], [], []
        read: dict[object, frozenset[str]] = {}  # tag lists repeat (most often: none)
        for doc_id, filename, file_type, mtime, indexed_at, tags, count, dated in rows:
            ids.append(str(doc_id))
            chunks.append(int(count))
            key = tags if isinstance(tags, str) else tuple(tags or ())
            found_tags = read.get(key)
            if found_tags is None:
                found_tags = read[key] = with_parents(str(t) for t in db.json_out(tags) or [])
            docs.append(
                DocumentFacts(
                    filename,
                    file_type or "",
                    None if mtime is None else float(mtime),
                    epoch(indexed_at),
                    found_tags,
                    None if dated is None else float(dated),
                )
            )
        facts = KbFacts(stamp, ids, docs, np.asarray(chunks, dtype=np.int64))
        with lock:
            cache[kb_id] = facts
            while len(cache) > KBS_KEPT:
                cache.popitem(last=False)
        return facts
