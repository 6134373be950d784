"""Search primitives of the Postgres store: full-text keyword ranking, vectors, result rows.

The same contract as :mod:`kbdesk.store.lookup`, so :mod:`kbdesk.search` (fusion, the
seed's semantics) runs unchanged. Keyword search is Postgres full text: the generated
``content_tsv`` column (``english`` configuration: stemming, stopwords) under a GIN
index, ranked by ``ts_rank`` with length normalisation; the user's words are OR-ed
through ``websearch_to_tsquery``, never parsed as query syntax.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kbdesk.store.lookup import MAX_QUERY_TERMS, STOPWORDS, mark_stale
from kbdesk.store.postgres.values import infer_dimensions

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# rows a keyword query may rank before it is bounded to its rarest words (ts_rank costs
# some µs a row; BENCHMARKS-postgres.md)
KEYWORD_RANK_BUDGET = 5000


def _tsquery(lexemes: list[str]) -> str:
    """Lexemes (already normalised, letters and digits only) OR-ed as tsquery text."""
    return " | ".join("'" + lex.replace("'", "''") + "'" for lex in lexemes)


def ts_words(text: str) -> str:
    """The query's words for ``websearch_to_tsquery``: distinct, stopwords out, OR-ed.

    Only runs of letters and digits pass, so nothing in the user's text is syntax.
    """
    seen: list[str] = []
    for token in _WORD.findall(text.lower()):
        if token not in seen:
            seen.append(token)
        if len(seen) == MAX_QUERY_TERMS:
            break
    content = [t for t in seen if t not in STOPWORDS]
    return " or ".join(content or seen)


class LookupMixin:
    """Needs ``connection()``, ``read()`` and ``vectors`` from the store."""

    def kb_vector_dimensions(self, kb_id: str) -> int | None:
        """Dimensions of the KB's stored vectors, or None when it holds none."""
        conn = self.connection()
        row = conn.execute(
            "SELECT (k.embedding_config->>'dimensions')::int, EXISTS (SELECT 1 FROM kb_chunks c WHERE c.kb_id = k.id "
            "AND c.embedding IS NOT NULL) FROM knowledge_bases k WHERE k.id = %s", (kb_id,)).fetchone()
        if row is None or not row[1]:
            return None
        if row[0]:
            return int(row[0])
        sample = conn.execute("SELECT embedding FROM kb_chunks WHERE kb_id = %s AND embedding IS NOT NULL LIMIT 20",
                              (kb_id,), binary=True).fetchall()  # a seed writer's KB: no dimensions recorded
        return infer_dimensions([r[0] for r in sample])

    def vector_candidates(self, kb_id: str, dimensions: int, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top ``k`` (seq, cosine) in one KB, best first (HNSW when the KB has its index)."""
        row = self.connection().execute("SELECT chunk_count FROM knowledge_bases WHERE id = %s", (kb_id,)).fetchone()
        return self.vectors.search(kb_id, dimensions, np.asarray(query, dtype=np.float32), k,
                                   rows=row[0] if row else 0)

    def keyword_candidates(self, kb_ids: Sequence[str], text: str, k: int) -> list[tuple[int, float]]:
        """Top ``k`` (seq, rank — higher is better) across ``kb_ids``.

        Postgres ranks every row that matches (full text has no top-k), so a query
        holding a word found in a large share of the table would rank thousands of rows.
        When the planner's statistics say the words' rows add up past
        :data:`KEYWORD_RANK_BUDGET`, rows must hold one of the rarest words (the rarest
        always) and words matching more rows than the budget alone leave the score.
        """
        words = ts_words(text)
        if not words or not kb_ids:
            return []
        conn = self.connection()
        gate, scored = self._bounded_lexemes(conn, words)
        if gate is None:
            match = rank = "websearch_to_tsquery('english', %(words)s)"
        else:
            match, rank = "%(gate)s::tsquery", "%(scored)s::tsquery"
        rows = conn.execute(
            f"SELECT c.seq, ts_rank(c.content_tsv, {rank}, 1) AS score FROM kb_chunks c "
            f"WHERE c.kb_id = ANY(%(kbs)s::uuid[]) AND c.content_tsv @@ {match} "
            "ORDER BY score DESC, c.seq LIMIT %(k)s",
            {"words": words, "gate": gate, "scored": scored, "kbs": list(kb_ids), "k": int(k)}).fetchall()
        return [(int(seq), float(score)) for seq, score in rows]

    def _bounded_lexemes(self, conn: Any, words: str) -> tuple[str | None, str | None]:
        """(gate, scored) tsquery texts when the query needs bounding, else (None, None)."""
        row = conn.execute(
            "SELECT (SELECT array_agg(DISTINCT l) FROM unnest(tsvector_to_array(to_tsvector('english', "
            "replace(%s, ' or ', ' ')))) l), s.most_common_elems::text::text[], s.most_common_elem_freqs, "
            "(SELECT reltuples FROM pg_class WHERE oid = 'kb_chunks'::regclass) FROM (SELECT 1) one "
            "LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'kb_chunks' "
            "AND s.attname = 'content_tsv'", (words,)).fetchone()
        lexemes, common, freqs, rows = row
        if not lexemes or len(lexemes) < 2 or not common or not rows or rows < 0:
            return None, None
        share = dict(zip(common, freqs or []))
        df = {lex: share.get(lex, 0.0) * rows for lex in lexemes}
        if sum(df.values()) <= KEYWORD_RANK_BUDGET:
            return None, None
        by_rarity = sorted(lexemes, key=lambda lex: (df[lex], lex))
        gate, total = [], 0.0
        for lex in by_rarity:
            if gate and total + df[lex] > KEYWORD_RANK_BUDGET:
                break
            gate.append(lex)
            total += df[lex]
        scored = [lex for lex in by_rarity if df[lex] <= KEYWORD_RANK_BUDGET] or gate
        return _tsquery(gate), _tsquery(scored)

    def cosine_for(self, seqs: Iterable[int], query: np.ndarray) -> dict[int, float]:
        """Cosine similarity of stored vectors (of any KB whose dimension matches)."""
        seqs = [int(s) for s in seqs]
        if not seqs:
            return {}
        dims = int(np.asarray(query).size)
        rows = self.connection().execute(
            "SELECT c.seq, 1 - (subvector(c.embedding, 1, %s) <=> %s::vector) FROM kb_chunks c "
            "JOIN knowledge_bases k ON k.id = c.kb_id WHERE c.seq = ANY(%s) AND c.embedding IS NOT NULL "
            "AND coalesce((k.embedding_config->>'dimensions')::int, %s) = %s",
            (dims, np.asarray(query, dtype=np.float32), seqs, dims, dims)).fetchall()
        return {int(seq): float(sim) for seq, sim in rows}

    def chunk_neighbours(self, document_id: str, chunk_index: int, radius: int = 1) -> list[dict[str, Any]]:
        """A chunk with up to ``radius`` chunks before and after it in its document."""
        rows = self.connection().execute(
            "SELECT chunk_index, content, metadata FROM kb_chunks WHERE document_id = %s "
            "AND chunk_index BETWEEN %s AND %s ORDER BY chunk_index",
            (document_id, chunk_index - radius, chunk_index + radius)).fetchall()
        return [{"chunk_index": i, "content": c, "metadata": dict(m or {}), "current": i == chunk_index}
                for i, c, m in rows]

    def chunk_kbs(self, seqs: Sequence[int]) -> dict[int, str]:
        """The KB id of each chunk."""
        if not seqs:
            return {}
        rows = self.connection().execute("SELECT seq, kb_id FROM kb_chunks WHERE seq = ANY(%s)",
                                         ([int(s) for s in seqs],)).fetchall()
        return {int(seq): kb_id for seq, kb_id in rows}

    def result_rows(self, seqs: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Content, source filename, KB name and metadata of each chunk."""
        if not seqs:
            return {}
        rows = self.connection().execute(
            "SELECT c.seq, c.content, d.filename, kb.name, c.metadata, c.kb_id, c.document_id, c.chunk_index, "
            "d.indexed_hash IS NOT NULL AND d.indexed_hash IS DISTINCT FROM d.content_hash, d.indexed_at "
            "FROM kb_chunks c JOIN kb_documents d ON d.id = c.document_id "
            "JOIN knowledge_bases kb ON kb.id = c.kb_id WHERE c.seq = ANY(%s)", ([int(s) for s in seqs],)).fetchall()
        return {int(r[0]): {"content": r[1], "source": r[2], "kb": r[3],
                            "metadata": mark_stale(dict(r[4] or {}), r[8], r[9]),
                            "kb_id": r[5], "document_id": r[6], "chunk_index": r[7]}
                for r in rows}
