"""Binary-quantised vector search for large knowledge bases.

An exact scan reads every float of every vector per query (1M x 768 float32 is 3 GB).
Here each vector is reduced to its sign bits (one bit per dimension: 96 bytes at 768
dims) and a search runs in three steps:

1. Hamming distance from the query's sign bits to every vector's (XOR + popcount,
   ``np.bitwise_count``), keeping the ``PRESELECT x R`` nearest;
2. those ranked again by the *full* query against their bits (the sum of the query's
   components where a bit is set, which ranks like ``q . sign(x)``: far finer than
   Hamming, at a table lookup per byte), keeping the best ``R = k x oversample``;
3. those R rescored exactly: cosine with their float32 vectors, read from the KB's
   memory-mapped matrix file (:mod:`kbdesk.store.sqlite.matrix_file`) when it is current, else
   from ``kb_chunks.embedding`` by ``seq`` while the file is (re)written in a background
   thread; the top ``k`` returned.

So what a search returns carries exact cosines (the threshold keeps its meaning); only
*which* chunks reach the rescoring is approximate (recall against exact search:
docs/BENCHMARKS-scale.md).

Memory: the bits and the seqs only (1M x 768: 96 + 8 MB), never the float matrix.

The bits are persisted in ``kb_vector_bits`` (migration 6) so that loading a 1M-chunk KB
reads ~100 MB instead of 3 GB of vectors:

- a chunk's bits row goes when the chunk goes or its embedding changes (triggers, so
  whatever deleted it: cascades, raw SQL);
- the store's own inserts write their bits in the same transaction
  (:meth:`QuantizedIndex.after_write`) once the KB has bits at all; a KB is given its
  bits whole at its first quantised search;
- anything else (a raw import, a write while the KB had no bits) shows up as missing
  rows, which are computed and written at the next load.

The in-memory copy is keyed by ``kb_vector_state.version`` and reloaded from the table
when the version moves, like the numpy index.
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from kbdesk.cpu_threads import scan
from kbdesk.store.api import Transactions
from kbdesk.store.dbapi import Connection
from kbdesk.store.sqlite.dbapi import SqliteConnection, as_sqlite
from kbdesk.store.sqlite.matrix_cache import MatrixFiles
from kbdesk.store.sqlite.positions import positions

DEFAULT_QUANTIZE_ABOVE = 250_000
DEFAULT_OVERSAMPLE = 10
MIN_RESCORE = 500  # never rescore fewer candidates than this (recall at limit 10: docs/BENCHMARKS-scale.md)
PRESELECT = 10  # Hamming keeps this many candidates per one rescored
BLOCK = 16_384  # columns per block of the Hamming scan: its temporaries stay in cache
PARALLEL_ABOVE = 200_000  # split the scan across threads above this many vectors
FETCH_BATCH = 65_536
# a filter holding at most this share of the KB's chunks has its own codes scanned (gathered
# first); a larger one is scanned with the rest, which is then pushed out of reach
SUBSET_SCAN_SHARE = 0.25


def sign_bits(matrix: np.ndarray) -> np.ndarray:
    """Rows of float vectors as packed sign bits (1 where > 0), padded to whole 64-bit words."""
    packed = np.packbits(np.asarray(matrix) > 0, axis=-1)
    pad = (-packed.shape[-1]) % 8
    if pad:
        widths = [(0, 0)] * (packed.ndim - 1) + [(0, pad)]
        packed = np.pad(packed, widths)
    return np.ascontiguousarray(packed)


def _scan(words: np.ndarray, q: np.ndarray, out: np.ndarray, lo: int, hi: int) -> None:
    """Hamming distances of columns lo..hi of ``words`` (word-major, w x n) to ``q``.

    Per block: XOR and popcount one 64-bit word of every vector at a time; up to three
    words' counts (<= 192) add up in uint8 before joining the uint16 total.
    """
    w = words.shape[0]
    size = min(BLOCK, hi - lo)
    tmp = np.empty(size, dtype=np.uint64)
    cnt = np.empty(size, dtype=np.uint8)
    grp = np.empty(size, dtype=np.uint8)
    for s in range(lo, hi, BLOCK):
        e = min(hi, s + BLOCK)
        m = e - s
        acc = out[s:e]
        t, c, g = tmp[:m], cnt[:m], grp[:m]
        for j in range(w):
            np.bitwise_xor(words[j, s:e], q[j], out=t)
            if j % 3 == 0:
                np.bitwise_count(t, out=g)
            else:
                np.bitwise_count(t, out=c)
                np.add(g, c, out=g)
            if j % 3 == 2 or j == w - 1:
                if j < 3:
                    acc[...] = g
                else:
                    np.add(acc, g, out=acc, casting="unsafe")


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _threads() -> int:
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def hamming(words: np.ndarray, q: np.ndarray, threads: int | None = None) -> np.ndarray:
    """Hamming distance (uint16) from ``q`` (w,) uint64 to each column of ``words`` (w, n)."""
    global _pool
    n = words.shape[1]
    out = np.empty(n, dtype=np.uint16)
    threads = _threads() if threads is None else threads
    if threads <= 1 or n < PARALLEL_ABOVE:
        _scan(words, q, out, 0, n)
        return out
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="kbdesk-hamming")
    step = -(-n // threads)
    step = -(-step // BLOCK) * BLOCK
    jobs = [_pool.submit(_scan, words, q, out, lo, min(n, lo + step)) for lo in range(0, n, step)]
    for job in jobs:
        job.result()  # numpy releases the GIL in these loops
    return out


def nearest(distances: np.ndarray, r: int) -> np.ndarray:
    """Indices of the ``r`` smallest distances, ties at the cut broken by position.

    A histogram finds the cut-off distance (distances are small integers), which is
    several times cheaper than ``argpartition`` over a million entries.
    """
    n = distances.size
    if r >= n:
        return np.arange(n)
    counts = np.bincount(distances)
    cutoff = int(np.searchsorted(np.cumsum(counts), r))  # first distance whose cumulative count reaches r
    below = np.flatnonzero(distances < cutoff)
    at = np.flatnonzero(distances == cutoff)[: r - below.size]
    return np.concatenate([below, at])


_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)  # (256, 8)


def asymmetric_scores(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """For packed sign bits ``codes`` (m, bytes): the sum of ``query``'s components where
    a bit is set. Equal to (q . sign(x) + sum(q)) / 2, so it ranks like q . sign(x)."""
    width = codes.shape[1]
    q = np.zeros(width * 8, dtype=np.float32)
    q[: query.size] = query
    table = q.reshape(width, 8) @ _BYTE_BITS.T  # (bytes, 256): partial sums for each byte value
    return table[np.arange(width), codes].sum(axis=1)


@dataclass
class Codes:
    version: int
    seqs: np.ndarray  # (n,) int64, ascending
    words: np.ndarray  # (w, n) uint64, word-major for the scan
    dims: int

    @property
    def nbytes(self) -> int:
        return int(self.seqs.nbytes + self.words.nbytes)


class QuantizedIndex:
    """Sign-bit codes of a KB's vectors in memory, persisted in ``kb_vector_bits``."""

    name = "quantized"

    def __init__(self, matrices: MatrixFiles | None = None) -> None:
        self.matrices = matrices  # a MatrixFiles to rescore from, when it has the KB's current file
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._cache: dict[str, Codes] = {}
        self.threads: int | None = None  # None: all usable cores (at most 4)

    # ── writes ─────────────────────────────────────────────────────────────────
    def after_write(self, conn: SqliteConnection, kb_id: str, added: list[tuple[int, bytes]]) -> None:
        """Bits of the vectors just written, in the same transaction, once the KB has bits.

        Deleted and re-embedded chunks lose their bits by trigger.
        """
        if not added:
            return
        if conn.execute("SELECT 1 FROM kb_vector_bits WHERE kb_id = ? LIMIT 1", (kb_id,)).fetchone() is None:
            return  # never searched quantised: its bits are made whole at the first such search
        matrix = np.frombuffer(b"".join(blob for _, blob in added), dtype=np.float32).reshape(len(added), -1)
        bits = sign_bits(matrix)
        conn.executemany(
            "INSERT OR REPLACE INTO kb_vector_bits(kb_id, seq, bits) VALUES (?, ?, ?)",
            [(kb_id, int(seq), bits[i].tobytes()) for i, (seq, _) in enumerate(added)],
        )

    def drop(self, conn: SqliteConnection, kb_id: str) -> None:
        with self._lock:
            self._cache.pop(kb_id, None)
        conn.execute("DELETE FROM kb_vector_bits WHERE kb_id = ?", (kb_id,))

    def forget(self, kb_id: str) -> None:
        """Free the in-memory codes of ``kb_id`` (they reload on the next search)."""
        with self._lock:
            self._cache.pop(kb_id, None)

    # ── loading ────────────────────────────────────────────────────────────────
    @staticmethod
    def _version(conn: Connection, kb_id: str) -> int:
        row = conn.execute("SELECT version FROM kb_vector_state WHERE kb_id = ?", (kb_id,)).fetchone()
        return int(row[0]) if row else -1

    def codes(self, store: Transactions, kb_id: str, dims: int) -> Codes:
        """The KB's codes at the current version: cached, or read from ``kb_vector_bits``."""
        version = self._version(store.connection(), kb_id)
        with self._lock:
            cached = self._cache.get(kb_id)
        if cached is not None and cached.version == version and cached.dims == dims:
            return cached
        with self._load_lock:  # one load at a time: a 1M-chunk KB is not read twice at once
            with self._lock:
                cached = self._cache.get(kb_id)
            if (
                cached is not None
                and cached.version == self._version(store.connection(), kb_id)
                and cached.dims == dims
            ):
                return cached
            with self._lock:
                self._cache.pop(kb_id, None)  # the old copy is garbage before the new one is read
            codes = self._read(store, kb_id, dims)
            if codes is None:  # bits are missing: make them, then read again
                with store.write() as conn:
                    self.fill(conn, kb_id, dims)
                codes = self._read(store, kb_id, dims)
                if codes is None:  # pragma: no cover - chunks without vectors in a vector KB
                    codes = self._read(store, kb_id, dims, partial_ok=True)
                assert codes is not None, "a partial read always gives the bits there are"
            with self._lock:
                self._cache[kb_id] = codes
            return codes

    def _read(self, store: Transactions, kb_id: str, dims: int, partial_ok: bool = False) -> Codes | None:
        """Read the bits in one snapshot; None when some chunk's bits are missing."""
        width = -(-dims // 64) * 8
        with store.read() as conn:
            version = self._version(conn, kb_id)
            # bits rows are a subset of the KB's chunks (triggers see to it): size for all of them
            chunks = conn.execute("SELECT count(*) FROM kb_chunks WHERE kb_id = ?", (kb_id,)).fetchone()[0]
            seqs = np.empty(chunks, dtype=np.int64)
            rows = np.empty((chunks, width), dtype=np.uint8)
            cur = conn.execute(
                "SELECT seq, bits FROM kb_vector_bits WHERE kb_id = ? AND length(bits) = ? ORDER BY seq", (kb_id, width)
            )
            at = 0
            while True:
                batch = cur.fetchmany(FETCH_BATCH)
                if not batch:
                    break
                m = min(len(batch), chunks - at)
                if m <= 0:
                    break
                seqs[at : at + m] = [r[0] for r in batch[:m]]
                rows[at : at + m] = np.frombuffer(b"".join(r[1] for r in batch[:m]), dtype=np.uint8).reshape(m, width)
                at += m
            if at < chunks and not partial_ok and self._missing(conn, kb_id, width):
                return None
        seqs, rows = seqs[:at], rows[:at]
        words = np.ascontiguousarray(rows.view(np.uint64).T)
        return Codes(version, seqs, words, dims)

    @staticmethod
    def _missing(conn: Connection, kb_id: str, width: int) -> bool:
        """Whether a chunk with a vector has no usable bits row (chunks without vectors don't count)."""
        row = conn.execute(
            "SELECT 1 FROM kb_chunks c WHERE c.kb_id = ? AND c.embedding IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM kb_vector_bits b WHERE b.kb_id = c.kb_id AND b.seq = c.seq AND length(b.bits) = ?) "
            "LIMIT 1",
            (kb_id, width),
        ).fetchone()
        return row is not None

    def fill(self, conn: Connection, kb_id: str, dims: int) -> int:
        """Compute and store the bits of every chunk that has a vector but no bits row
        (inside the caller's write transaction); return how many were written."""
        width = -(-dims // 64) * 8
        conn.execute("DELETE FROM kb_vector_bits WHERE kb_id = ? AND length(bits) != ?", (kb_id, width))  # old dims
        have = conn.execute("SELECT count(*) FROM kb_vector_bits WHERE kb_id = ?", (kb_id,)).fetchone()[0]
        if have == 0:  # all of them: stream the KB in seq order
            cur = conn.execute(
                "SELECT seq, embedding FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL", (kb_id,)
            )
        else:
            cur = conn.execute(
                "SELECT c.seq, c.embedding FROM kb_chunks c WHERE c.kb_id = ? AND c.embedding IS NOT NULL AND "
                "NOT EXISTS (SELECT 1 FROM kb_vector_bits b WHERE b.kb_id = c.kb_id AND b.seq = c.seq)",
                (kb_id,),
            )
        written = 0
        while True:
            batch = cur.fetchmany(FETCH_BATCH // 4)
            if not batch:
                break
            good = [(seq, blob) for seq, blob in batch if len(blob) == dims * 4]
            if not good:
                continue
            bits = sign_bits(np.frombuffer(b"".join(b for _, b in good), dtype=np.float32).reshape(len(good), dims))
            as_sqlite(conn).executemany(
                "INSERT OR REPLACE INTO kb_vector_bits(kb_id, seq, bits) VALUES (?, ?, ?)",
                [(kb_id, int(seq), bits[i].tobytes()) for i, (seq, _) in enumerate(good)],
            )
            written += len(good)
        return written

    # ── search ─────────────────────────────────────────────────────────────────
    def candidates(
        self,
        store: Transactions,
        kb_id: str,
        dims: int,
        query: np.ndarray,
        r: int,
        preselect: int = PRESELECT,
        allowed: np.ndarray | None = None,
    ) -> np.ndarray:
        """Seqs of ``r`` chunks near ``query``: the ``preselect x r`` nearest by Hamming
        distance, narrowed to ``r`` by :func:`asymmetric_scores`; ascending. With
        ``allowed`` (ascending seqs: a search filter) only those chunks compete: a set no
        larger than ``r`` is returned whole (rescored exactly), a small one is scanned on
        its own, a large one is scanned with everything else pushed to the far end."""
        codes = self.codes(store, kb_id, dims)
        n = codes.seqs.size
        pool: np.ndarray | None = None  # positions the search may return
        if allowed is not None:
            if not n or not allowed.size:
                return np.zeros(0, dtype=np.int64)
            pool = positions(codes.seqs, allowed)
            if pool.size <= r:
                return codes.seqs[pool]
        elif r >= n:
            return codes.seqs
        size = n if pool is None else pool.size
        wide = min(size, r * max(preselect, 1))
        qbits = sign_bits(query[None, :])[0].view(np.uint64)
        if pool is not None and pool.size <= SUBSET_SCAN_SHARE * n:
            words = np.ascontiguousarray(codes.words[:, pool])
            dist = hamming(words, qbits, self.threads)
            local = nearest(dist, wide)
            idx, dist = pool[local], dist[local]
        else:
            dist_all = hamming(codes.words, qbits, self.threads)
            if pool is not None:
                far = np.ones(n, dtype=bool)
                far[pool] = False
                dist_all[far] = np.iinfo(np.uint16).max  # never nearer than a chunk inside the filter
            idx = nearest(dist_all, wide)
            dist = dist_all[idx]
        packed = np.ascontiguousarray(codes.words[:, idx].T).view(np.uint8)  # (wide, bytes)
        scores = asymmetric_scores(packed, query)
        # best score first; ties (a query with few non-zero components) go to the nearer by Hamming
        idx = idx[np.lexsort((dist, -scores))[:r]]
        return codes.seqs[np.sort(idx)]

    def search(
        self,
        store: Transactions,
        kb_id: str,
        dims: int,
        query: np.ndarray,
        k: int,
        oversample: int = DEFAULT_OVERSAMPLE,
        *,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``k`` (seq, exact cosine), best first: Hamming preselection, exact rescoring
        (only among ``allowed`` seqs, ascending, when given)."""
        r = max(int(k) * max(int(oversample), 1), MIN_RESCORE, int(k))
        seqs = self.candidates(store, kb_id, dims, query, r, allowed=allowed)
        if seqs.size == 0:
            return []
        got, matrix = self.rescore_vectors(store, kb_id, seqs, dims)
        if not got.size:
            return []
        sims = scan(matrix, query)
        k = min(int(k), got.size)
        top = np.argpartition(-sims, k - 1)[:k] if k < got.size else np.arange(got.size)
        order = top[np.lexsort((got[top], -sims[top]))]
        return [(int(got[i]), float(sims[i])) for i in order]

    def rescore_vectors(
        self, store: Transactions, kb_id: str, seqs: np.ndarray, dims: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The float32 vectors of ``seqs`` (ascending), from the mapped file when it is current."""
        mapped = None
        if self.matrices is not None:
            build = "never" if getattr(store, "read_only", False) else "background"
            mapped = self.matrices.get(store, kb_id, dims, build=build)
        if mapped is None:
            return rescore_vectors(store, seqs, dims)
        got, rows = mapped.rows_of(seqs)
        return got, mapped.vectors[rows]


def rescore_vectors(store: Transactions, seqs: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """The stored float32 vectors of ``seqs`` (those still there), as (seqs, matrix)."""
    rows = (
        store.connection()
        .execute(
            "SELECT seq, embedding FROM kb_chunks WHERE seq IN (SELECT value FROM json_each(?)) "
            "AND embedding IS NOT NULL",
            (json.dumps(seqs.tolist()),),
        )
        .fetchall()
    )
    rows = [r for r in rows if len(r[1]) == dims * 4]
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dims), dtype=np.float32)
    got = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dims)
    return got, matrix
