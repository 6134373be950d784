"""Thread pools sized on purpose (kbdesk.cpu_threads): a vector scan runs on the calling thread
(no BLAS pool left spinning against an embedder), a query is embedded on one torch thread and a
batch with torch's default. The speed this buys is measured in bench/bench_local_stream.py."""

from __future__ import annotations

import numpy as np
import pytest

from kbdesk.cpu_threads import SMALL_BATCH, scan, torch_threads_for


def test_a_scan_gives_every_rows_cosine_and_ranks_as_blas_does():
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((5_000, 384), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[17] * 0.7 + matrix[4_000] * 0.3
    query /= np.linalg.norm(query)
    got = scan(matrix, query)
    assert got.dtype == np.float32 and got.shape == (5_000,)
    assert np.allclose(got, matrix @ query, atol=1e-5)
    assert list(np.argsort(-got)[:2]) == [17, 4_000]
    assert scan(np.zeros((0, 384), dtype=np.float32), query).shape == (0,)


@pytest.mark.slow  # imports torch: seconds
def test_a_query_is_embedded_on_one_torch_thread_and_a_batch_on_its_default():
    torch = pytest.importorskip("torch")
    default = torch.get_num_threads()
    with torch_threads_for(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == default
    with torch_threads_for(SMALL_BATCH + 1):
        assert torch.get_num_threads() == default
