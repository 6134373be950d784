"""Vector indexes over ``kb_chunks.embedding``.

The canonical copy of every vector is the ``embedding`` column (unit-normalised
float32 at the KB's own dimension). A vector index is derived from it and rebuilt when
``kb_vector_state.version`` moved past the version it was built at, so a database
written under one backend is always correct under the other.

- Both backends search exactly by scanning a memory-mapped float32 copy of the KB's
  vectors (:mod:`kbdesk.store.sqlite.matrix_file`: one file per KB beside the database, written
  once per vector version and shared by every process through the page cache) whenever
  such a file is current or can be written.
- Otherwise :class:`SqliteVecIndex` answers from one sqlite-vec ``vec0`` table per KB,
  the stored index it keeps in step with every write. Vectors are unit length, so the
  L2 metric ranks exactly like cosine (cos = 1 - d²/2) and is the faster of the two in
  sqlite-vec (docs/BENCHMARKS.md).
- Otherwise :class:`NumpyIndex` scans an in-memory float32 matrix per KB, loaded on
  first use and reloaded when the KB's vectors change. Exact cosine.

Both are the *exact* path. A KB holding more than ``quantize_above`` chunks (config
``vector.quantize_above``) is searched by the binary-quantised path instead
(:mod:`kbdesk.store.sqlite.quantized`: sign bits scanned by Hamming distance, the nearest
ranked again by the full query against their bits, max(``k x oversample``, 500) of them
rescored with exact cosine), whichever backend is in use; ``quantize_above = 0`` keeps
every KB exact.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import numpy as np

from kbdesk.cpu_threads import scan
from kbdesk.store.api import Transactions
from kbdesk.store.dbapi import Connection
from kbdesk.store.sqlite.dbapi import SqliteConnection, as_sqlite
from kbdesk.store.sqlite.matrix_cache import MatrixFiles
from kbdesk.store.sqlite.positions import positions
from kbdesk.store.sqlite.quantized import (
    DEFAULT_OVERSAMPLE,
    DEFAULT_QUANTIZE_ABOVE,
    QuantizedIndex,
    rescore_vectors,
)


def top_k(seqs: np.ndarray, sims: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best of ``sims`` (one similarity per seq) as (seq, cosine), best first
    (ties by seq)."""
    if not len(seqs):
        return []
    k = min(int(k), len(sims))
    top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
    order = top[np.lexsort((seqs[top], -sims[top]))]
    return [(int(seqs[i]), float(sims[i])) for i in order]


# With a filter, the exact scan computes only the rows inside it when they are at most this
# share of the KB's (a gather of scattered rows costs about twice a row of the full scan:
# bench/bench_filters.py); above it, the whole scan runs and the rows outside are dropped.
SUBSET_SCAN_SHARE = 0.4


def masked_top_k(
    seqs: np.ndarray, allowed: np.ndarray | None, k: int, sims_of: Any, vectors: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """Top ``k`` over the rows whose seqs (ascending ``seqs``) are in ``allowed`` (ascending),
    or over all rows without it. ``sims_of(None)`` gives every row's similarity; with
    ``vectors`` a small ``allowed`` is scored from its own rows only."""
    if allowed is None:
        return top_k(seqs, sims_of(None), k)
    if not seqs.size or not allowed.size:
        return []
    rows = positions(seqs, allowed)
    if vectors is not None and rows.size <= SUBSET_SCAN_SHARE * seqs.size:
        return top_k(seqs[rows], sims_of(rows), k)
    return top_k(seqs[rows], sims_of(None)[rows], k)


def subset_similarities(matrix: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of ``query`` with the given rows of ``matrix``: gathered and scored in one
    thread (einsum; a BLAS call hands each small product to its threads, which costs more
    than the product on a busy machine)."""
    return np.einsum("ij,j->i", matrix[rows], query)


def vec_table(kb_id: str) -> str:
    return "vec_kb_" + kb_id.replace("-", "")


class VectorIndex(Protocol):
    name: str

    def after_write(
        self, conn: SqliteConnection, kb_id: str, added: list[tuple[int, bytes]], removed: list[int], was_fresh: bool
    ) -> None:
        """Called inside the write transaction that changed ``kb_id``'s vectors."""

    def search(
        self,
        store: Transactions,
        kb_id: str,
        dimensions: int,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``k`` (seq, cosine similarity) pairs, best first; only seqs in ``allowed``
        (ascending) when given."""

    def drop(self, conn: Connection, kb_id: str) -> None:
        """Forget ``kb_id``'s index (inside the transaction deleting the KB)."""

    def close(self) -> None:
        """Stop background work (before the store closes its connections)."""

    def warm(self, store: Transactions, kb_id: str, dimensions: int, *, wait: bool = False) -> None:
        """Get ready, in the background (``wait``: now), what the KB's next search will read."""


class _Tiered:
    """Exact search for small KBs, the quantised path for large ones (both backends)."""

    quantize_above: int = DEFAULT_QUANTIZE_ABOVE
    oversample: int = DEFAULT_OVERSAMPLE

    fallback = ""  # what answers exact searches when no matrix file can be had
    instead = ""  # why the files are read instead of the fallback

    def _init_tiers(self) -> None:
        self.matrices = MatrixFiles()
        self.quantized = QuantizedIndex(self.matrices)

    def close(self) -> None:
        """Stop work running in the background before the store closes its connections."""
        self.matrices.close()

    def configure(self, *, quantize_above: int | None = None, oversample: int | None = None) -> None:
        """Apply ``vector.quantize_above`` / ``vector.oversample`` (None keeps the current value)."""
        if quantize_above is not None:
            self.quantize_above = int(quantize_above)
        if oversample is not None:
            self.oversample = max(1, int(oversample))

    def uses_quantized(self, store: Transactions, kb_id: str) -> bool:
        """Whether ``kb_id`` is large enough for the quantised path."""
        if self.quantize_above <= 0:
            return False
        row = store.connection().execute("SELECT chunk_count FROM knowledge_bases WHERE id = ?", (kb_id,)).fetchone()
        return bool(row) and int(row[0]) > self.quantize_above

    def search(
        self,
        store: Transactions,
        kb_id: str,
        dimensions: int,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        if self.uses_quantized(store, kb_id):
            self._forget_exact(kb_id)
            return self.quantized.search(store, kb_id, dimensions, query, k, self.oversample, allowed=allowed)
        self.quantized.forget(kb_id)
        return self.exact_search(store, kb_id, dimensions, query, k, allowed)

    def warm(self, store: Transactions, kb_id: str, dimensions: int, *, wait: bool = False) -> None:
        """Start writing the KB's matrix file in the background (``wait``: write it now) if it is
        missing or stale, so that the next exact search finds it (long-lived faces call this
        after indexing; a search meanwhile waits for that build rather than starting its own)."""
        if getattr(store, "read_only", False) or self.uses_quantized(store, kb_id):
            return
        self.matrices.get(store, kb_id, dimensions, build="now" if wait else "background")

    def exact_search(
        self,
        store: Transactions,
        kb_id: str,
        dimensions: int,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        build = "never" if getattr(store, "read_only", False) else "now"
        mapped = self.matrices.get(store, kb_id, dimensions, build=build)
        if mapped is not None:
            self._forget_exact(kb_id)

            def sims(rows: np.ndarray | None) -> np.ndarray:
                return mapped.similarities(query) if rows is None else subset_similarities(mapped.vectors, rows, query)

            return masked_top_k(mapped.seqs, allowed, k, sims, mapped.vectors)
        return self.fallback_search(store, kb_id, dimensions, query, k, allowed)

    def fallback_search(
        self,
        store: Transactions,
        kb_id: str,
        dimensions: int,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        raise NotImplementedError

    def exact_path(self, store: Transactions) -> str:
        """One line for ``kbdesk doctor``: how exact searches are answered here, and why."""
        folder = self.matrices.folder(store)
        if not self.matrices.enabled:
            return f"{self.fallback} (memory-mapped matrix files are switched off)"
        if folder is None:
            return f"{self.fallback} (the database is not a file, so there are no matrix files)"
        why = self.matrices.cannot_write(store)
        if why is None:
            return (
                f"memory-mapped float32 matrix files in {folder}, rebuilt when a KB's vectors change "
                f"(fallback: {self.fallback}{self.instead})"
            )
        if getattr(store, "read_only", False):
            return f"matrix files in {folder} when current, else {self.fallback} ({why})"
        return f"{self.fallback} ({why})"

    def _forget_exact(self, kb_id: str) -> None:
        """Free what the exact path keeps in memory for ``kb_id``."""


# A filter holding at most this share of a KB's chunks has its vectors read and scored
# exactly: reading a stored vector costs about three times what vec0's scan spends on one
# (bench/bench_filters.py); a larger one asks vec0 for more neighbours until enough are inside.
VEC_EXACT_SHARE = 0.3
VEC_MAX_K = 4096  # the most neighbours sqlite-vec returns from one query


def _is_fresh(conn: Connection, kb_id: str) -> bool:
    row = conn.execute("SELECT version = indexed_version FROM kb_vector_state WHERE kb_id = ?", (kb_id,)).fetchone()
    return bool(row and row[0])


class SqliteVecIndex(_Tiered):
    name = "sqlite-vec"

    fallback = "sqlite-vec's vec0 table"
    instead = ", which scans 6-8x slower: its PyPI build has no SIMD"

    def __init__(self, vec_loaded: bool = True) -> None:
        self.vec_loaded = vec_loaded
        self._init_tiers()

    @staticmethod
    def is_fresh(conn: SqliteConnection, kb_id: str) -> bool:
        return _is_fresh(conn, kb_id)

    def after_write(
        self, conn: SqliteConnection, kb_id: str, added: list[tuple[int, bytes]], removed: list[int], was_fresh: bool
    ) -> None:
        self.quantized.after_write(conn, kb_id, added)
        if not was_fresh:
            return  # rebuilt whole at the next search
        table = vec_table(kb_id)
        if removed:
            conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(s,) for s in removed])
        if added:
            conn.executemany(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", added)
        conn.execute("UPDATE kb_vector_state SET indexed_version = version WHERE kb_id = ?", (kb_id,))

    def rebuild(self, conn: Connection, kb_id: str, dimensions: int) -> None:
        table = vec_table(kb_id)
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        # chunk_size 256 (vec0's default is 1024 rows per BLOB): the same answers, a
        # 10x faster build at 1536 dims and cheaper incremental writes (BENCHMARKS-search.md)
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING vec0("
            f"embedding float[{int(dimensions)}] distance_metric=l2, chunk_size=256)"
        )
        conn.execute(
            f"INSERT INTO {table}(rowid, embedding) SELECT seq, embedding FROM kb_chunks "
            "WHERE kb_id = ? AND embedding IS NOT NULL ORDER BY seq",
            (kb_id,),
        )
        conn.execute("UPDATE kb_vector_state SET indexed_version = version WHERE kb_id = ?", (kb_id,))

    def fallback_search(
        self,
        store: Transactions,
        kb_id: str,
        dimensions: int,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        conn = store.connection()
        row = conn.execute("SELECT chunk_count FROM knowledge_bases WHERE id = ?", (kb_id,)).fetchone()
        total = int(row[0]) if row else 0
        if allowed is not None and allowed.size <= VEC_EXACT_SHARE * total:
            # a small filtered set: its own vectors, scored exactly (no scan past the rest)
            got, matrix = rescore_vectors(store, allowed, dimensions)
            return top_k(got, matrix @ query if got.size else np.zeros(0, dtype=np.float32), k)
        if not _is_fresh(conn, kb_id):
            with store.write() as wconn:
                if not _is_fresh(wconn, kb_id):
                    self.rebuild(wconn, kb_id, dimensions)
        if allowed is None:
            return self._knn(conn, kb_id, query, k)
        # vec0 is an exact scan: ask it for more until k of them are inside the filter
        share = max(allowed.size / max(total, 1), 1e-9)
        want = max(int(k), int(2 * k / share) + 16)
        while True:
            asked = min(want, VEC_MAX_K, total)
            found = self._knn(conn, kb_id, query, asked)
            held = np.isin(np.fromiter((s for s, _ in found), dtype=np.int64, count=len(found)), allowed)
            inside = [pair for pair, keep in zip(found, held, strict=True) if keep]
            if len(inside) >= k or len(found) < asked or asked >= total:
                return inside[:k]
            if asked >= VEC_MAX_K:  # past what vec0 answers in one query: score the set exactly
                got, matrix = rescore_vectors(store, allowed, dimensions)
                return top_k(got, matrix @ query if got.size else np.zeros(0, dtype=np.float32), k)
            want = asked * 4

    @staticmethod
    def _knn(conn: Connection, kb_id: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        rows = conn.execute(
            f"SELECT rowid, distance FROM {vec_table(kb_id)} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (query.tobytes(), int(k)),
        ).fetchall()
        return [(int(seq), 1.0 - (float(d) * float(d)) / 2.0) for seq, d in rows]

    def drop(self, conn: Connection, kb_id: str) -> None:
        conn.execute(f"DROP TABLE IF EXISTS {vec_table(kb_id)}")
        self.quantized.drop(as_sqlite(conn), kb_id)
        self.matrices.drop(as_sqlite(conn), kb_id)

    @staticmethod
    def drop_orphans(conn: SqliteConnection) -> int:
        """Drop vec0 tables (and matrix files) whose KB is gone (left by a numpy-only or older session)."""
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'vec\\_kb\\_%' ESCAPE '\\' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        ).fetchall()
        live = {r[0].replace("-", "") for r in conn.execute("SELECT id FROM knowledge_bases")}
        dropped = 0
        for (name,) in rows:
            if name[len("vec_kb_") :] not in live:
                conn.execute(f"DROP TABLE IF EXISTS {name}")
                dropped += 1
        return dropped + MatrixFiles.drop_orphans(conn)


class NumpyIndex(_Tiered):
    name = "numpy"
    fallback = "numpy over the stored vectors loaded into memory"
    instead = ", which every new process must load: the file is mapped"

    def __init__(self, vec_loaded: bool = False) -> None:
        # when sqlite-vec is loaded alongside, its tables are dropped with their KB
        self.vec_loaded = vec_loaded
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}
        self._init_tiers()

    def after_write(
        self, conn: SqliteConnection, kb_id: str, added: list[tuple[int, bytes]], removed: list[int], was_fresh: bool
    ) -> None:
        self.quantized.after_write(conn, kb_id, added)  # the matrix reloads when the version moves

    def _forget_exact(self, kb_id: str) -> None:
        with self._lock:
            self._cache.pop(kb_id, None)

    def _matrix(self, store: Transactions, kb_id: str, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
        with store.read() as conn:  # one snapshot for the version and the rows
            row = conn.execute("SELECT version FROM kb_vector_state WHERE kb_id = ?", (kb_id,)).fetchone()
            version = row[0] if row else -1
            with self._lock:
                cached = self._cache.get(kb_id)
            if cached and cached[0] == version:
                return cached[1], cached[2]
            rows = conn.execute(
                "SELECT seq, embedding FROM kb_chunks WHERE kb_id = ? AND embedding IS NOT NULL ORDER BY seq",
                (kb_id,),
            ).fetchall()
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if rows:
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dimensions)
        else:
            matrix = np.zeros((0, dimensions), dtype=np.float32)
        with self._lock:
            self._cache[kb_id] = (version, seqs, matrix)
        return seqs, matrix

    def fallback_search(
        self,
        store: Transactions,
        kb_id: str,
        dimensions: int,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        seqs, matrix = self._matrix(store, kb_id, dimensions)

        def sims(rows: np.ndarray | None) -> np.ndarray:
            return scan(matrix, query) if rows is None else subset_similarities(matrix, rows, query)

        return masked_top_k(seqs, allowed, k, sims, matrix)

    def drop(self, conn: Connection, kb_id: str) -> None:
        with self._lock:
            self._cache.pop(kb_id, None)
        self.quantized.drop(as_sqlite(conn), kb_id)
        self.matrices.drop(as_sqlite(conn), kb_id)
        if self.vec_loaded:
            conn.execute(f"DROP TABLE IF EXISTS {vec_table(kb_id)}")
