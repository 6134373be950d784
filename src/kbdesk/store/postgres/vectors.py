"""Vector search on Postgres: exact cosine, or an HNSW index per KB at its real width.

pgvector indexes ``vector`` up to 2,000 dimensions and ``halfvec`` up to 4,000, so the
seed's ``vector(3072)`` column cannot be indexed as it is. Every KB's vectors share one
real dimension D (``embedding_config.dimensions``; the rest is zero padding), so each KB
gets a partial expression index at D::

    CREATE INDEX kbvec_<kb>_<D> ON kb_chunks USING hnsw
        ((subvector(embedding, 1, D)::vector(D)) vector_cosine_ops) WHERE kb_id = '<kb>'

(``halfvec(D)`` with ``halfvec_cosine_ops`` when D > 2000). The search query orders by
the same expression with the same predicate, so the planner uses the index; the
candidates it returns are then scored by exact float32 cosine on the stored vectors.
A KB under :attr:`PgVectorIndex.min_rows` vectors is searched exactly (a scan of its
rows is fast and needs no index). Indexes are built CONCURRENTLY (writers are not
blocked) after an import, after ingestion crosses the size, or by the first search.

A filtered search (the documents a search filter lets through, :mod:`kbdesk.store.core.facts`)
scores a small filtered set exactly — from each chunk's vector at the KB's own width
(:mod:`.widths`), found by document — and walks the index for a large one (over 10,000 chunks and a
fifth of the KB) with pgvector's iterative scan (``hnsw.iterative_scan``), which keeps
going past rows outside the filter until it has enough inside; should it stop short
(``hnsw.max_scan_tuples``), the set is scored exactly.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from typing import Any, Protocol

import numpy as np

from kbdesk.store.api import Transactions
from kbdesk.store.dbapi import Connection
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.values import uuid_array
from kbdesk.store.postgres.widths import exact_sql as narrow_exact_sql

log = logging.getLogger("kbdesk.store.postgres")

HALFVEC_ABOVE = 2000  # vector indexes stop at 2,000 dimensions; halfvec at 4,000
DEFAULT_MIN_ROWS = 1000  # below, an exact scan is quicker than keeping an index
MIN_EF_SEARCH = 100
# A filter holding at most this many chunks, or less than ITERATIVE_SHARE of the KB's, is
# scored exactly; above both, the index is walked iteratively. Measured at 100k x 384
# (bench/bench_filters.py --postgres, docs/BENCHMARKS.md): an iterative scan keeps recall@10
# at 1.00 for a filter of half the KB, but falls to 0.60-0.90 at 5% and 0.57-0.74 at 0.5%
# (strict or relaxed order, asked for 1x or 4x k; still 0.75-0.91 at 5% and 0.62-0.73 at 0.5%
# with ITERATIVE_EF_SEARCH at 200-1,000, and slower than the exact scan at 5%), while the exact
# scan of a 5% filter (5,000 narrow rows: .widths) takes about as long as the unfiltered index scan.
EXACT_FILTERED_BELOW = 10_000
ITERATIVE_SHARE = 0.2
MAX_SCAN_TUPLES = 100_000  # how far an iterative scan may walk before it gives up
ITERATIVE_OVERFETCH = 2  # an iterative scan is asked for this many times k rows, the best k kept
ITERATIVE_ORDER = "relaxed_order"  # the outer query sorts by exact cosine anyway
ITERATIVE_EF_SEARCH = 0  # an iterative scan's least hnsw.ef_search (0: as any search asked for its rows)
VALID_FOR_S = 30.0  # how long a seen-valid index is trusted without asking the catalog again


def index_prefix(kb_id: str) -> str:
    return "kbvec_" + uuid.UUID(kb_id).hex


def index_name(kb_id: str, dims: int) -> str:
    return f"{index_prefix(kb_id)}_{int(dims)}"


def index_expression(dims: int) -> tuple[str, str, str]:
    """(indexed expression, the query's cast, operator class) for a KB of ``dims``."""
    dims = int(dims)
    kind = "halfvec" if dims > HALFVEC_ABOVE else "vector"
    return f"(subvector(embedding, 1, {dims})::{kind}({dims}))", f"{kind}({dims})", f"{kind}_cosine_ops"


def kb_literal(kb_id: str) -> str:
    """The KB id as a SQL literal: partial index predicates need a constant to match."""
    return f"'{uuid.UUID(kb_id)}'::uuid"


class Server(Transactions, Protocol):
    """What the index reads through: its store's connections (a kbdesk user's store also
    has a ``session``, whose indexes it leaves to the owner)."""

    def in_transaction(self) -> bool: ...


class PgVectorIndex:
    name = "pgvector"

    def __init__(self, store: Server, min_rows: int = DEFAULT_MIN_ROWS) -> None:
        self.store = store
        self.min_rows = min_rows
        self._lock = threading.Lock()
        self._failed: dict[str, str] = {}  # kb id -> why its index could not be built
        self._valid: dict[tuple[str, int], float] = {}  # (kb id, dims) -> seen valid until (monotonic)

    # ── the index ──────────────────────────────────────────────────────────────
    def state(self, conn: Connection, kb_id: str, dims: int) -> str | None:
        """'valid', 'invalid' (a concurrent build that died) or None (no index)."""
        row = conn.execute(
            "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
            "WHERE c.relname = %s AND c.relnamespace = to_regnamespace(current_schema())",
            (index_name(kb_id, dims),),
        ).fetchone()
        if row is None:
            return None
        return "valid" if row[0] else "invalid"

    def ensure(
        self, kb_id: str, dims: int | None, rows: int | None = None, *, force: bool = False, wait: bool = True
    ) -> bool:
        """Build the KB's index when it holds enough vectors; True when one is usable.

        Runs outside any transaction (CREATE INDEX CONCURRENTLY); a failure (say, the
        database user does not own the table) leaves exact search and is logged once.
        """
        if not dims or self.store.in_transaction():
            return False
        known = self._valid.get((kb_id, int(dims)))
        if known and known > time.monotonic():
            return True
        conn = self.store.connection()
        if self.state(conn, kb_id, dims) == "valid":
            self._valid[(kb_id, int(dims))] = time.monotonic() + VALID_FOR_S
            return True
        if kb_id in self._failed and not force:
            return False
        if rows is None:
            rows = conn.execute(
                "SELECT count(*) FROM kb_chunks WHERE kb_id = %s AND embedding IS NOT NULL", (kb_id,)
            ).fetchone()[0]
        if rows < (1 if force else self.min_rows):
            return False
        if not self._lock.acquire(blocking=wait):
            return False  # another thread is building: search exactly meanwhile
        try:
            return self._build(conn, kb_id, int(dims))
        finally:
            self._lock.release()

    def _build(self, conn: Connection, kb_id: str, dims: int) -> bool:
        name = index_name(kb_id, dims)
        expr, _, opclass = index_expression(dims)
        try:
            if self.state(conn, kb_id, dims) == "invalid":
                conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON kb_chunks USING hnsw "
                f"({expr} {opclass}) WHERE kb_id = {kb_literal(kb_id)}"
            )
            self._analyze(conn)
            return self.state(conn, kb_id, dims) == "valid"
        except Exception as exc:  # noqa: BLE001 - no privilege, out of memory…: exact search still works
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self._failed[kb_id] = why
            log.warning("no vector index for knowledge base %s (exact search instead): %s", kb_id, why)
            return False
        finally:
            with contextlib.suppress(Exception):  # the connection died with the build; the next use replaces it
                conn.execute("RESET maintenance_work_mem")

    @staticmethod
    def _analyze(conn: Connection) -> None:
        """Fresh planner statistics after a bulk load (skipped where this user may not)."""
        try:
            conn.execute("ANALYZE kb_chunks")
        except Exception as exc:  # noqa: BLE001 - not the owner: the next autovacuum analyses instead
            log.info("ANALYZE kb_chunks skipped: %s", exc)

    def close(self) -> None:
        """Nothing runs in the background here (the server keeps the index)."""

    def warm(self, store: Transactions, kb_id: str, dimensions: int, *, wait: bool = False) -> None:
        """Nothing to get ready: the server keeps its index current."""

    def drop(self, conn: Connection, kb_id: str) -> None:
        """Drop every index of the KB (inside the transaction deleting or re-embedding it).
        A kbdesk user does not own the indexes (the owner built them) and leaves them:
        ``pg setup`` drops the indexes of KBs that are gone (:func:`drop_orphans`)."""
        session = getattr(self.store, "session", None)
        if session is not None and session.kind == "user":
            self._failed.pop(kb_id, None)
            for key in [k for k in self._valid if k[0] == kb_id]:
                self._valid.pop(key, None)
            return
        rows = conn.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'i' AND relname LIKE %s "
            "AND relnamespace = to_regnamespace(current_schema())",
            (index_prefix(kb_id) + "\\_%",),
        ).fetchall()
        for (name,) in rows:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
        self._failed.pop(kb_id, None)
        for key in [k for k in self._valid if k[0] == kb_id]:
            self._valid.pop(key, None)

    # ── searching ──────────────────────────────────────────────────────────────
    def query_sql(self, kb_id: str, dims: int, k: int, *, exact: bool = False, docs: bool = False) -> str:
        """The top-k query; the inner ORDER BY is the index's expression unless ``exact``;
        ``docs``: only rows of the documents in the ``docs`` parameter."""
        expr, cast, _ = index_expression(dims)
        order = f"({expr} <=> %(qi)s::{cast}) + 0" if exact else f"{expr} <=> %(qi)s::{cast}"
        within = "AND document_id = ANY(%(docs)s::uuid[]) " if docs else ""
        return (
            f"SELECT seq, 1 - (subvector(embedding, 1, {int(dims)}) <=> %(q)s::vector) AS sim FROM ("
            f"SELECT seq, embedding FROM kb_chunks WHERE kb_id = {kb_literal(kb_id)} {within}"
            f"AND embedding IS NOT NULL ORDER BY {order} LIMIT {int(k)}) c ORDER BY sim DESC, seq"
        )

    @staticmethod
    def _settle(conn: Connection, indexed: bool, k: int, *, iterative: bool = False) -> None:
        """For an indexed search: enough candidates (ef_search), and the index's order
        preferred over sorting every row of the KB (the planner's estimate for one KB of
        a freshly loaded table can be far off); ``iterative``: a scan that goes on past
        rows outside a filter (one statement either way)."""
        if indexed:
            more = (
                ", set_config('hnsw.iterative_scan', %s, true), set_config('hnsw.max_scan_tuples', %s, true)"
                if iterative
                else ""
            )
            args = (str(max(MIN_EF_SEARCH, 2 * k)),) + ((ITERATIVE_ORDER, str(MAX_SCAN_TUPLES)) if iterative else ())
            conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), set_config('enable_sort', 'off', true)" + more, args
            )

    def search(
        self,
        kb_id: str,
        dims: int,
        query: np.ndarray,
        k: int,
        *,
        exact: bool = False,
        rows: int | None = None,
        docs: list[str] | None = None,
        inside: int | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``k`` (seq, cosine) of one KB, best first; among the chunks of ``docs`` (a
        filter holding ``inside`` chunks) when given."""
        indexed = False if exact else self.ensure(kb_id, dims, rows)
        params: dict[str, Any] = {"q": query, "qi": query}
        if docs is not None:
            params["docs"] = uuid_array(docs)
            small = inside is not None and (
                inside <= max(EXACT_FILTERED_BELOW, k) or inside < ITERATIVE_SHARE * (rows or 0)
            )
            if indexed and not small:
                wide = k * ITERATIVE_OVERFETCH
                with self.store.read() as conn:
                    self._settle(conn, True, max(wide, ITERATIVE_EF_SEARCH // 2), iterative=True)
                    found = conn.execute(self.query_sql(kb_id, dims, wide, docs=True), params).fetchall()
                if len(found) >= min(k, inside or k):
                    return [(int(seq), float(sim)) for seq, sim in found[:k]]
            fallback = self.query_sql(kb_id, dims, k, exact=True, docs=True)
            with self.store.read() as conn:  # exact over the filtered rows: narrow ones when they cover it
                found = conn.execute(narrow_exact_sql(kb_literal(kb_id), dims, k, fallback), params).fetchall()
            return [(int(seq), float(sim)) for seq, sim in found]
        with self.store.read() as conn:
            self._settle(conn, indexed, k)
            found = conn.execute(self.query_sql(kb_id, dims, k, exact=not indexed), params).fetchall()
        return [(int(seq), float(sim)) for seq, sim in found]

    def explain(self, kb_id: str, dims: int, query: np.ndarray, k: int) -> str:
        """EXPLAIN of the query a search would run now (for tests and benchmarks)."""
        indexed = self.state(self.store.connection(), kb_id, dims) == "valid"
        with self.store.read() as conn:
            self._settle(conn, indexed, k)
            rows = conn.execute(
                "EXPLAIN " + self.query_sql(kb_id, dims, k, exact=not indexed), {"q": query, "qi": query}
            ).fetchall()
        return "\n".join(r[0] for r in rows)


def drop_orphans(conn: PgConnection) -> int:
    """Drop the vector indexes of KBs that no longer exist (a user deleted or re-embedded
    one: the owner's index was theirs to leave); returns how many went."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relkind = 'i' AND c.relname LIKE 'kbvec\\_%%' "
        "AND c.relnamespace = to_regnamespace(current_schema())"
    ).fetchall()
    kbs = {r[0].replace("-", "") for r in conn.execute("SELECT id::text FROM knowledge_bases").fetchall()}
    gone = 0
    for (name,) in rows:
        kb_hex = name.split("_")[1] if name.count("_") >= 2 else ""
        if kb_hex and kb_hex not in kbs:
            conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            gone += 1
    return gone
