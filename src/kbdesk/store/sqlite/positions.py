"""Where a search filter's chunks sit in a KB's vector arrays (the matrix file's rows, the
quantised tier's sign bits): looked up once per pair of arrays, not on every query."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

_positions: OrderedDict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = OrderedDict()
_positions_lock = threading.Lock()
POSITIONS_KEPT = 16


def positions(seqs: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Where the ``allowed`` seqs (ascending) sit in ``seqs`` (ascending), those present.

    A search filter hands the same ``allowed`` array to every search while its KB stands
    still, so the answer is kept for the last few pairs of arrays (each entry holds both,
    so their ids stay theirs)."""
    key = (id(seqs), id(allowed))
    with _positions_lock:
        hit = _positions.get(key)
        if hit is not None and hit[0] is seqs and hit[1] is allowed:
            _positions.move_to_end(key)
            return hit[2]
    if not seqs.size or not allowed.size:
        found = np.zeros(0, dtype=np.int64)
    else:
        at = np.minimum(np.searchsorted(seqs, allowed), seqs.size - 1)
        found = at[seqs[at] == allowed]
    with _positions_lock:
        _positions[key] = (seqs, allowed, found)
        while len(_positions) > POSITIONS_KEPT:
            _positions.popitem(last=False)
    return found
