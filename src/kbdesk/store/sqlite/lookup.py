"""Search primitives of the SQLite store: keyword (FTS5/BM25), vectors, result rows.

The fusion and the seed's semantics live in :mod:`kbdesk.search`; this module only
answers "which chunks, with what score" from SQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np

from kbdesk.filters import Filters
from kbdesk.store.core.compose import Base
from kbdesk.store.dbapi import Connection
from kbdesk.store.headings import HEADING_POOL, MAX_NAMED, heading_key, headings_from, rank_with_headings
from kbdesk.store.keywords import SCORED_TERM_BUDGETS, KeywordParts, bounds, mark_stale, query_terms
from kbdesk.store.sqlite.vectors import VectorIndex as SqliteIndex
from kbdesk.store.within import Within

# FTS5 computes BM25 for every row that matches any OR-ed term (a few µs per row, and an
# IDF pass over each term's whole posting list), so a query's cost grows with its terms'
# document frequencies. When they add up past this budget the query is bounded
# (:meth:`SqliteLookup.bounded_fts_query`): rows must hold one of the rarest terms, and
# terms matching more rows than the budget on their own are left out of the score. An
# index whose rows times the query's terms fit in the budget is never touched
# (docs/BENCHMARKS-scale.md).
KEYWORD_POSTINGS_BUDGET = 50_000
_DF_CACHE_MAX = 50_000
# A filtered keyword search reads at most this many of the index's best matches and keeps
# those inside the filter; a filter too selective for that joins each match to its chunk
# (bench/bench_filters.py measures both)
KEYWORD_OVERFETCH_MAX = 5_000
# a chunk's last heading as the index idx_kbchunk_heading holds it (schema step 17)
LAST_HEADING = "lower(json_extract(metadata, '$.headings[#-1]'))"


def fts_query(text: str) -> str:
    """A natural-language query as an FTS5 expression: its words, quoted, OR-ed.

    Quoting makes every word a literal (no FTS5 syntax from the user's text); OR lets
    BM25 rank partial matches instead of demanding every word; stopwords are left out
    unless the query is nothing but stopwords.
    """
    return " OR ".join(f'"{t}"' for t in query_terms(text))


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


class SqliteLookup:
    """The SQLite store's retrieval (:class:`kbdesk.store.rows_api.Retrieval`): over the
    store's ``base`` (its connections) and its vector index (sqlite-vec's or numpy's)."""

    def __init__(self, base: Base, vectors: SqliteIndex) -> None:
        self.base = base
        self.vectors = vectors
        self.df_cache: dict[tuple[str, int], tuple[int, int]] = {}
        """Rows matching a query word (capped), by (word, budget): (count, chunks then)."""

    def kb_vector_dimensions(self, kb_id: str) -> int | None:
        """Dimensions of the KB's stored vectors, or None when it holds none."""
        conn = self.base.connection()
        row = conn.execute("SELECT dimensions FROM kb_vector_state WHERE kb_id = ?", (kb_id,)).fetchone()
        if row is None:
            return None
        has = conn.execute(
            "SELECT 1 FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL LIMIT 1", (kb_id,)
        ).fetchone()
        return int(row[0]) if has else None

    def vector_candidates(
        self, kb_id: str, dimensions: int, query: np.ndarray, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` (seq, cosine) in one KB, best first; only chunks of documents inside
        ``within`` (a resolved filter) when given."""
        if within is None:
            return self.vectors.search(self.base, kb_id, dimensions, query, k)
        allowed = self.allowed_seqs(kb_id, within)
        if not allowed.size:
            return []
        return self.vectors.search(self.base, kb_id, dimensions, query, k, allowed=allowed)

    def allowed_seqs(self, kb_id: str, within: Within) -> np.ndarray:
        """The seqs (ascending) of the KB's chunks inside ``within``."""
        facts, mask = within.facts.get(kb_id), within.masks.get(kb_id)
        if facts is None or mask is None or not mask.any():
            return np.zeros(0, dtype=np.int64)
        chunk_map = facts.extra.get("seqs")
        if chunk_map is None:  # which document each chunk is of, read once per state of the KB
            rows = (
                self.base.connection()
                .execute(
                    "SELECT document_id, seq FROM kb_chunks INDEXED BY idx_kbchunk_doc WHERE document_id IN "
                    "(SELECT id FROM kb_documents WHERE kb_id = ?)",
                    (kb_id,),
                )
                .fetchall()
            )
            index = {doc_id: i for i, doc_id in enumerate(facts.ids)}
            docs = np.fromiter((index.get(r[0], -1) for r in rows), dtype=np.int64, count=len(rows))
            seqs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
            order = np.argsort(seqs, kind="stable")
            chunk_map = facts.extra["seqs"] = (seqs[order], docs[order])
        with facts.lock:
            kept: dict[Filters, np.ndarray] = facts.extra.setdefault("allowed", {})
            found = kept.get(within.filters)
        if found is None:
            seqs, docs = chunk_map
            known = docs >= 0
            inside = np.zeros(seqs.size, dtype=bool)
            inside[known] = mask[docs[known]]
            found = seqs[inside]
            with facts.lock:
                found = kept.setdefault(within.filters, found)
                while len(kept) > 8:
                    kept.pop(next(iter(kept)))
        return found

    def _document_frequencies(self, terms: Sequence[str], budget: int) -> dict[str, int] | None:
        """Rows matching each term, counted up to ``SCORED_TERM_BUDGETS x budget + 1``; None when the index is too
        small for the query to need bounding. Cached until the number of chunks moves by a tenth."""
        conn = self.base.connection()
        total = conn.execute("SELECT coalesce(sum(chunk_count), 0) FROM knowledge_bases").fetchone()[0]
        if len(terms) <= 1 or total * len(terms) <= budget:
            return None
        cache = self.df_cache
        if len(cache) > _DF_CACHE_MAX:
            cache.clear()
        df: dict[str, int] = {}
        for term in terms:
            hit = cache.get((term, budget))
            if hit is None or abs(hit[1] - total) > total // 10:
                count = conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? LIMIT ?)",
                    (f'"{term}"', budget * SCORED_TERM_BUDGETS + 1),
                ).fetchone()[0]
                hit = cache[(term, budget)] = (int(count), int(total))
            df[term] = hit[0]
        return df

    def bounded_terms(self, terms: Sequence[str], budget: int | None = None) -> tuple[list[str], list[str]]:
        """(gate, scored): the rarest terms whose rows add up to at most ``budget`` (the
        rarest always), and the terms that count in the score (all but those matching more
        rows than ``budget`` alone). Both are ``terms`` when the query needs no bounding."""
        terms = list(terms)
        budget = KEYWORD_POSTINGS_BUDGET if budget is None else budget
        df = self._document_frequencies(terms, budget)
        if df is None:
            return terms, terms
        gate, scored = bounds(terms, [df[t] for t in terms], budget)
        return [terms[i] for i in gate], [terms[i] for i in scored]

    def bounded_fts_query(self, text: str, budget: int | None = None) -> str:
        """:func:`fts_query`, bounded when the index is large and the words common.

        Rows must match a gate term; the scored terms add their BM25 weight on top (the
        gate terms count twice then: once in each half of the AND).
        """
        gate, scored = self.bounded_terms(query_terms(text), budget)
        either = " OR ".join(f'"{t}"' for t in gate)
        if scored == gate:
            return either
        weighted = " OR ".join(f'"{t}"' for t in scored)
        return f"({either}) AND ({weighted})"

    def keyword_candidates(
        self, kb_ids: Sequence[str], text: str, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` (seq, keyword score — higher is better) across ``kb_ids``: BM25, and a
        chunk's heading path as a field of its own (:mod:`kbdesk.store.headings`); only
        chunks of documents inside ``within`` (a resolved filter) when given."""
        hits = self._bm25_candidates(kb_ids, text, max(k, HEADING_POOL), within)
        named = self.named_chunks(kb_ids, text, within) if kb_ids else []
        scores = partial(self.keyword_scores, kb_ids, text)
        return rank_with_headings(text, k, hits, named, scores, self.chunk_headings)

    def named_chunks(self, kb_ids: Sequence[str], text: str, within: Within | None = None) -> list[int]:
        """Chunks of ``kb_ids`` whose last heading is ``text`` (case aside), through the
        index idx_kbchunk_heading; inside ``within`` when given."""
        name = heading_key(text)
        if name is None:
            return []
        rows = (
            self.base.connection()
            .execute(
                f"SELECT seq, kb_id FROM kb_chunks WHERE {LAST_HEADING} = lower(?) AND kb_id IN ({_marks(kb_ids)}) "
                f"ORDER BY seq LIMIT {MAX_NAMED}",
                (name, *kb_ids),
            )
            .fetchall()
        )
        if within is None or not rows:
            return [int(seq) for seq, _ in rows]
        inside = {kb_id: set(self.allowed_seqs(kb_id, within).tolist()) for kb_id in {r[1] for r in rows}}
        return [int(seq) for seq, kb_id in rows if int(seq) in inside[kb_id]]

    def chunk_headings(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        """The heading path of each chunk (by seq) that has one."""
        if not seqs:
            return {}
        rows = (
            self.base.connection()
            .execute(
                f"SELECT seq, json_extract(metadata, '$.headings') FROM kb_chunks WHERE seq IN ({_marks(seqs)}) "
                "AND json_type(metadata, '$.headings') = 'array'",
                list(seqs),
            )
            .fetchall()
        )
        return headings_from(rows)

    def _bm25_candidates(
        self, kb_ids: Sequence[str], text: str, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        expr = self.bounded_fts_query(text) if kb_ids else ""
        if not expr or not kb_ids:
            return []
        conn = self.base.connection()
        if within is not None:
            return self._filtered_keyword(conn, kb_ids, expr, k, within)
        wanted = set(kb_ids)
        others = conn.execute(
            f"SELECT 1 FROM knowledge_bases WHERE id NOT IN ({_marks(kb_ids)}) AND chunk_count > 0 LIMIT 1",
            list(kb_ids),
        ).fetchone()
        # Without other KBs in the way the FTS index answers alone (no join: 2-3x faster
        # on common words). With them, over-fetch, filter, and fall back to the join
        # only when the filter leaves too few.
        fetch = int(k) if not others else int(k) * 4
        rows = conn.execute(
            "SELECT rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts "
            "WHERE kb_chunks_fts MATCH ? ORDER BY score DESC, rowid LIMIT ?",
            (expr, fetch),
        ).fetchall()
        kb_of = self.chunk_kbs([r[0] for r in rows])  # always checked: never a chunk of another KB
        kept = [r for r in rows if kb_of.get(r[0]) in wanted]
        if len(kept) >= k or len(rows) < fetch:
            rows = kept[:k]
        else:  # other KBs crowd the top: ask the index for these KBs only
            rows = conn.execute(
                f"SELECT f.rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts f "
                f"JOIN kb_chunks c ON c.seq = f.rowid "
                f"WHERE kb_chunks_fts MATCH ? AND c.kb_id IN ({_marks(kb_ids)}) "
                f"ORDER BY score DESC, f.rowid LIMIT ?",
                (expr, *kb_ids, int(k)),
            ).fetchall()
        return [(int(seq), float(score)) for seq, score in rows]

    def keyword_scores(self, kb_ids: Sequence[str], text: str, seqs: Sequence[int]) -> dict[int, float]:
        """The BM25 score (as :meth:`keyword_candidates` gives it) of each of ``seqs`` that
        matches ``text`` at all — however far down the keyword ranking it is.

        One pass of the match, ``bm25()`` called for the given rows only: the same query
        expression as the keyword ranking's, so the same score to the last bit. The ``+``
        keeps the rowid list out of FTS5's hands — given it, SQLite opens the match once per
        listed row, and each opening recounts every query word's rows for its IDF (50
        candidates on SciFact: 14 ms, against 1 ms for the one pass, a fifth of the keyword
        ranking's own query).
        """
        expr = self.bounded_fts_query(text) if kb_ids and seqs else ""
        if not expr:
            return {}
        rows = self.base.connection().execute(
            "SELECT rowid, -bm25(kb_chunks_fts) FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
            "AND +rowid IN (SELECT value FROM json_each(?))",
            (expr, json.dumps([int(s) for s in seqs])),
        )
        return {int(seq): float(score) for seq, score in rows}

    def keyword_parts(self, kb_ids: Sequence[str], text: str, chunks: Sequence[tuple[str, int]]) -> KeywordParts:
        """What the BM25 of ``chunks`` (document id, chunk index) for ``text`` is made of:
        FTS5's N and each query word's document frequency (over the whole index, as its
        ``bm25()`` counts them) and each chunk's score split by word (one ``bm25()`` per word:
        FTS5 sums its phrases' parts, each with its own IDF)."""
        terms = query_terms(text)
        conn = self.base.connection()
        docs = sorted({doc for doc, _ in chunks})
        if not terms or not docs:
            return KeywordParts()
        wanted = set(chunks)
        found = conn.execute(
            "SELECT seq, document_id, chunk_index FROM kb_chunks WHERE document_id IN (SELECT value FROM json_each(?))",
            (json.dumps(docs),),
        ).fetchall()
        key_of = {int(seq): (doc, int(i)) for seq, doc, i in found if (doc, int(i)) in wanted}
        out = KeywordParts(int(conn.execute("SELECT coalesce(sum(chunk_count), 0) FROM knowledge_bases").fetchone()[0]))
        out.parts = {key: {} for key in key_of.values()}
        seqs = json.dumps(list(key_of))
        for term in terms:
            phrase = f'"{term}"'
            out.df[term] = int(
                conn.execute("SELECT count(*) FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ?", (phrase,)).fetchone()[0]
            )
            for seq, part in conn.execute(
                "SELECT rowid, -bm25(kb_chunks_fts) FROM kb_chunks_fts WHERE kb_chunks_fts MATCH ? "
                "AND +rowid IN (SELECT value FROM json_each(?))",  # one pass, as keyword_scores
                (phrase, seqs),
            ):
                out.parts[key_of[int(seq)]][term] = float(part)
        return out

    def _filtered_keyword(
        self, conn: Connection, kb_ids: Sequence[str], expr: str, k: int, within: Within
    ) -> list[tuple[int, float]]:
        """The ``k`` best matches among the chunks inside ``within``: the index's best
        ``k ÷ share × 2`` matches (share: the filter's part of every chunk the index holds)
        kept when inside, as the unfiltered search reads the index alone; when that leaves
        too few, the matches joined to their chunk's document and kept when it is inside."""
        parts = [self.allowed_seqs(kb_id, within) for kb_id in kb_ids]
        allowed = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))  # each part ascending
        if not allowed.size:
            return []
        total = conn.execute("SELECT coalesce(sum(chunk_count), 0) FROM knowledge_bases").fetchone()[0]
        want = int(2 * k * max(int(total), 1) / allowed.size) + 16
        if want <= KEYWORD_OVERFETCH_MAX:
            rows = conn.execute(
                "SELECT rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts "
                "WHERE kb_chunks_fts MATCH ? ORDER BY score DESC, rowid LIMIT ?",
                (expr, want),
            ).fetchall()
            seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            at = np.minimum(np.searchsorted(allowed, seqs), allowed.size - 1)
            kept = [r for r, inside in zip(rows, allowed[at] == seqs, strict=True) if inside]
            if len(kept) >= k or len(rows) < want:
                return [(int(seq), float(score)) for seq, score in kept[:k]]
        docs = [doc for kb_id in kb_ids for doc in within.documents(kb_id)]
        rows = conn.execute(
            "SELECT f.rowid, -bm25(kb_chunks_fts) AS score FROM kb_chunks_fts f "
            "JOIN kb_chunks c ON c.seq = f.rowid "
            "WHERE kb_chunks_fts MATCH ? AND c.document_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY score DESC, f.rowid LIMIT ?",
            (expr, json.dumps(docs), int(k)),
        ).fetchall()
        return [(int(seq), float(score)) for seq, score in rows]

    def cosine_for(self, seqs: Iterable[int], query: np.ndarray) -> dict[int, float]:
        """Cosine similarity of stored vectors (of any KB whose dimension matches)."""
        seqs = list(seqs)
        if not seqs:
            return {}
        rows = (
            self.base.connection()
            .execute(
                f"SELECT seq, embedding FROM kb_chunks WHERE seq IN ({_marks(seqs)}) AND embedding IS NOT NULL", seqs
            )
            .fetchall()
        )
        out: dict[int, float] = {}
        for seq, blob in rows:
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.size == query.size:
                out[int(seq)] = float(vec @ query)
        return out

    def chunk_neighbours(self, document_id: str, chunk_index: int, radius: int = 1) -> list[dict[str, Any]]:
        """A chunk with up to ``radius`` chunks before and after it in its document."""
        rows = (
            self.base.connection()
            .execute(
                "SELECT chunk_index, content, metadata FROM kb_chunks "
                "WHERE document_id = ? AND chunk_index BETWEEN ? AND ? ORDER BY chunk_index",
                (document_id, chunk_index - radius, chunk_index + radius),
            )
            .fetchall()
        )
        return [
            {"chunk_index": i, "content": c, "metadata": json.loads(m), "current": i == chunk_index} for i, c, m in rows
        ]

    def chunk_kbs(self, seqs: Sequence[int]) -> dict[int, str]:
        """The KB id of each chunk."""
        if not seqs:
            return {}
        rows = (
            self.base.connection()
            .execute(f"SELECT seq, kb_id FROM kb_chunks WHERE seq IN ({_marks(seqs)})", list(seqs))
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
                f"SELECT c.seq, c.content, d.filename, kb.name, c.metadata, c.kb_id, c.document_id, c.chunk_index, "
                f"d.indexed_hash IS NOT NULL AND d.indexed_hash IS NOT d.content_hash, d.indexed_at "
                # the covering index reads the document's few columns without walking past its
                # extracted text (schema step document_lookup; SQLite's planner prefers the key)
                f"FROM kb_chunks c JOIN kb_documents d INDEXED BY idx_kbdoc_result ON d.id = c.document_id "
                f"JOIN knowledge_bases kb ON kb.id = c.kb_id WHERE c.seq IN ({_marks(seqs)})",
                list(seqs),
            )
            .fetchall()
        )
        return {
            int(r[0]): {
                "content": r[1],
                "source": r[2],
                "kb": r[3],
                "metadata": mark_stale(json.loads(r[4]), r[8], r[9]),
                "kb_id": r[5],
                "document_id": r[6],
                "chunk_index": r[7],
            }
            for r in rows
        }
