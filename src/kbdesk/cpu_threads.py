"""How many threads the numeric libraries use: chosen per call, not left to their defaults.

A vector search embeds its query (torch, for the in-process ``local`` provider) and then
scans the KB's matrix (numpy, whose ``@`` runs on BLAS). Left alone, each library runs a pool
as wide as the machine, and each pool keeps its threads spinning for a while after its work is done: in a
stream of searches the query's embedding finds the cores taken by BLAS threads still
spinning from the last scan, and the scan finds them taken by torch's. On a 2-core machine
that made back-to-back searches three times slower than spaced ones; under other load a
2-thread torch pool took 235 ms to embed one query that one thread embeds in 14 ms
(docs/BENCHMARKS.md, bench/bench_local_stream.py). So:

- a vector scan is computed on the calling thread (:func:`scan`: numpy's einsum, no BLAS
  pool): a scan is a matrix-vector product, bound by memory rather than arithmetic, so more
  threads gain little (einsum on one thread measured faster than OpenBLAS on two), and no
  pool is left spinning afterwards. It holds no process-wide setting, so scans in several
  threads at once need no coordination;
- torch embeds a query-sized batch on one thread and a batch of documents with its default
  pool (:func:`torch_threads_for`).

Torch's setting is process-wide: it is changed for the length of one call and put back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

# A batch this small is a query (or a handful): one torch thread embeds it faster than two
# that must meet at every layer, and much faster when the machine is busy.
SMALL_BATCH = 4


def scan(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Every row of ``matrix`` dotted with ``query`` (cosines, for unit rows), float32, on this thread."""
    if not len(matrix):
        return np.zeros(0, dtype=np.float32)
    return np.einsum("ij,j->i", matrix, query.astype(matrix.dtype, copy=False))


@contextmanager
def torch_threads_for(batch: int) -> Iterator[None]:
    """Torch's intra-op threads for embedding ``batch`` texts: one for a query-sized batch,
    its default otherwise. The caller serialises its calls (torch's setting is process-wide)."""
    import torch

    before = torch.get_num_threads()
    want = 1 if batch <= SMALL_BATCH else before
    if want != before:
        torch.set_num_threads(want)
    try:
        yield
    finally:
        if want != before:
            torch.set_num_threads(before)
