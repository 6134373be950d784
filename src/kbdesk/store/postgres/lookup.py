"""Search primitives of the Postgres store: BM25 keyword ranking, vectors, result rows.

The same contract as :mod:`kbdesk.store.sqlite.lookup`, so :mod:`kbdesk.search` (fusion, the
seed's semantics) runs unchanged. Keyword search scores as SQLite's FTS5 ``bm25()``
does, from per-KB term statistics kept exact by triggers (:mod:`.keyword`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np

import kbdesk.store.postgres.keyword as keyword
from kbdesk.store.core.compose import Base
from kbdesk.store.headings import HEADING_POOL, MAX_NAMED, heading_key, headings_from, rank_with_headings
from kbdesk.store.keywords import KeywordParts, mark_stale
from kbdesk.store.postgres.dbapi import as_pg
from kbdesk.store.postgres.schema_steps import LAST_HEADING
from kbdesk.store.postgres.values import infer_dimensions
from kbdesk.store.postgres.vectors import PgVectorIndex
from kbdesk.store.within import Within


class PgLookup:
    """The Postgres store's retrieval (:class:`kbdesk.store.rows_api.Retrieval`): over the
    store's ``base`` (its connections) and pgvector's index."""

    def __init__(self, base: Base, vectors: PgVectorIndex) -> None:
        self.base = base
        self.vectors = vectors

    def kb_vector_dimensions(self, kb_id: str) -> int | None:
        """Dimensions of the KB's stored vectors, or None when it holds none."""
        conn = self.base.connection()
        row = conn.execute(
            "SELECT (k.embedding_config->>'dimensions')::int, EXISTS (SELECT 1 FROM kb_chunks c WHERE c.kb_id = k.id "
            "AND c.embedding IS NOT NULL) FROM knowledge_bases k WHERE k.id = %s",
            (kb_id,),
        ).fetchone()
        if row is None or not row[1]:
            return None
        if row[0]:
            return int(row[0])
        sample = (
            as_pg(conn)
            .execute(
                "SELECT embedding FROM kb_chunks WHERE kb_id = %s AND embedding IS NOT NULL LIMIT 20",
                (kb_id,),
                binary=True,
            )
            .fetchall()
        )  # a seed writer's KB: no dimensions recorded
        return infer_dimensions([r[0] for r in sample])

    def vector_candidates(
        self, kb_id: str, dimensions: int, query: np.ndarray, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` (seq, cosine) in one KB, best first (HNSW when the KB has its index);
        only chunks of documents inside ``within`` (a resolved filter) when given: see
        :meth:`kbdesk.store.postgres.vectors.PgVectorIndex.search` for how."""
        query = np.asarray(query, dtype=np.float32)
        if within is not None:
            docs = within.documents(kb_id)
            if not docs:
                return []
            return self.vectors.search(
                kb_id,
                dimensions,
                query,
                k,
                rows=within.total_chunks(kb_id),
                docs=docs,
                inside=within.chunk_count(kb_id),
            )
        row = (
            self.base.connection().execute("SELECT chunk_count FROM knowledge_bases WHERE id = %s", (kb_id,)).fetchone()
        )
        return self.vectors.search(kb_id, dimensions, query, k, rows=row[0] if row else 0)

    def keyword_candidates(
        self, kb_ids: Sequence[str], text: str, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` (seq, keyword score — higher is better) across ``kb_ids``: FTS5's bm25()
        over the KBs' statistics, bounded by a postings budget as on SQLite (:mod:`.keyword`),
        and the heading path as a field of its own (:mod:`kbdesk.store.headings`); only
        chunks of documents inside ``within`` (a resolved filter) when given."""
        if not kb_ids:
            return []
        docs = None if within is None else [doc for kb_id in kb_ids for doc in within.documents(kb_id)]
        if docs is not None and not docs:
            return []
        hits = keyword.candidates(self.base.connection(), kb_ids, text, max(k, HEADING_POOL), docs=docs)
        named = self.named_chunks(kb_ids, text, docs)
        scores = partial(self.keyword_scores, kb_ids, text)
        return rank_with_headings(text, k, hits, named, scores, self.chunk_headings)

    def named_chunks(self, kb_ids: Sequence[str], text: str, docs: Sequence[str] | None = None) -> list[int]:
        """Chunks of ``kb_ids`` whose last heading is ``text`` (case aside), through the
        index idx_kbchunk_heading; of the documents ``docs`` when given."""
        name = heading_key(text)
        if name is None:
            return []
        rows = (
            self.base.connection()
            .execute(
                f"SELECT seq FROM kb_chunks WHERE {LAST_HEADING} = lower(%s) AND kb_id = ANY(%s::uuid[]) "
                f"AND (%s::uuid[] IS NULL OR document_id = ANY(%s::uuid[])) ORDER BY seq LIMIT {MAX_NAMED}",
                (name, list(kb_ids), None if docs is None else list(docs), None if docs is None else list(docs)),
            )
            .fetchall()
        )
        return [int(seq) for (seq,) in rows]

    def chunk_headings(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        """The heading path of each chunk (by seq) that has one (:mod:`kbdesk.store.headings`)."""
        if not seqs:
            return {}
        rows = (
            self.base.connection()
            .execute(
                "SELECT seq, metadata->'headings' FROM kb_chunks WHERE seq = ANY(%s) "
                "AND jsonb_typeof(metadata->'headings') = 'array'",
                ([int(s) for s in seqs],),
            )
            .fetchall()
        )
        return headings_from(rows)

    def keyword_scores(self, kb_ids: Sequence[str], text: str, seqs: Sequence[int]) -> dict[int, float]:
        """The BM25 score of each of ``seqs`` that matches ``text`` (:func:`.keyword.scores`)."""
        return keyword.scores(self.base.connection(), kb_ids, text, seqs)

    def keyword_parts(self, kb_ids: Sequence[str], text: str, chunks: Sequence[tuple[str, int]]) -> KeywordParts:
        """What the BM25 of ``chunks`` (document id, chunk index) is made of, by query word
        (:func:`.keyword.parts`)."""
        return keyword.parts(self.base.connection(), kb_ids, text, chunks)

    def cosine_for(self, seqs: Iterable[int], query: np.ndarray) -> dict[int, float]:
        """Cosine similarity of stored vectors (of any KB whose dimension matches)."""
        seqs = [int(s) for s in seqs]
        if not seqs:
            return {}
        dims = int(np.asarray(query).size)
        rows = (
            self.base.connection()
            .execute(
                "SELECT c.seq, 1 - (subvector(c.embedding, 1, %s) <=> %s::vector) FROM kb_chunks c "
                "JOIN knowledge_bases k ON k.id = c.kb_id WHERE c.seq = ANY(%s) AND c.embedding IS NOT NULL "
                "AND coalesce((k.embedding_config->>'dimensions')::int, %s) = %s",
                (dims, np.asarray(query, dtype=np.float32), seqs, dims, dims),
            )
            .fetchall()
        )
        return {int(seq): float(sim) for seq, sim in rows}

    def chunk_neighbours(self, document_id: str, chunk_index: int, radius: int = 1) -> list[dict[str, Any]]:
        """A chunk with up to ``radius`` chunks before and after it in its document."""
        rows = (
            self.base.connection()
            .execute(
                "SELECT chunk_index, content, metadata FROM kb_chunks WHERE document_id = %s "
                "AND chunk_index BETWEEN %s AND %s ORDER BY chunk_index",
                (document_id, chunk_index - radius, chunk_index + radius),
            )
            .fetchall()
        )
        return [
            {"chunk_index": i, "content": c, "metadata": dict(m or {}), "current": i == chunk_index} for i, c, m in rows
        ]

    def chunk_kbs(self, seqs: Sequence[int]) -> dict[int, str]:
        """The KB id of each chunk."""
        if not seqs:
            return {}
        rows = (
            self.base.connection()
            .execute("SELECT seq, kb_id FROM kb_chunks WHERE seq = ANY(%s)", ([int(s) for s in seqs],))
            .fetchall()
        )
        return {int(seq): kb_id for seq, kb_id in rows}

    def result_rows(self, seqs: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Content, source filename, KB name and metadata of each chunk."""
        if not seqs:
            return {}
        rows = (
            self.base.connection()
            .execute(
                "SELECT c.seq, c.content, d.filename, kb.name, c.metadata, c.kb_id, c.document_id, c.chunk_index, "
                "d.indexed_hash IS NOT NULL AND d.indexed_hash IS DISTINCT FROM d.content_hash, d.indexed_at "
                "FROM kb_chunks c JOIN kb_documents d ON d.id = c.document_id "
                "JOIN knowledge_bases kb ON kb.id = c.kb_id WHERE c.seq = ANY(%s)",
                ([int(s) for s in seqs],),
            )
            .fetchall()
        )
        return {
            int(r[0]): {
                "content": r[1],
                "source": r[2],
                "kb": r[3],
                "metadata": mark_stale(dict(r[4] or {}), r[8], r[9]),
                "kb_id": r[5],
                "document_id": r[6],
                "chunk_index": r[7],
            }
            for r in rows
        }
