"""Unit vectors, as both engines store and compare them: every stored vector and every
query is unit length (cosine is then a dot product), checked for the KB's dimension,
NaN, infinity and all-zero before it reaches a store."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kbdesk.errors import InvalidInputError


def normalise(vector: Any, dimensions: int | None = None, *, what: str = "vector") -> np.ndarray:
    """Return ``vector`` as unit-length float32, or raise a clear error."""
    try:
        arr = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{what} is not a list of numbers") from None
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidInputError(f"{what} must be a flat list of numbers, got shape {arr.shape}")
    if dimensions is not None and arr.size != dimensions:
        raise InvalidInputError(f"{what} has {arr.size} dimensions, expected {dimensions}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{what} contains NaN or infinite values")
    norm = float(np.linalg.norm(arr.astype(np.float64)))
    if norm == 0.0 or not math.isfinite(norm):
        raise InvalidInputError(f"{what} is all zeros")
    return (arr / norm).astype(np.float32)


def normalise_rows(vectors: Any, dimensions: int | None = None, *, first: int = 0) -> np.ndarray:
    """Many vectors at once: unit-length float32 rows, or a clear error naming the bad one."""
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        # ragged or non-numeric: find and name the culprit one by one
        for i, vector in enumerate(vectors):
            normalise(vector, dimensions, what=f"vector {first + i}")
        raise InvalidInputError("vectors are not all lists of numbers of one length") from None
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        for i, vector in enumerate(vectors):
            normalise(vector, dimensions, what=f"vector {first + i}")
        raise InvalidInputError(f"vectors must be flat lists of numbers, got shape {matrix.shape}")
    if dimensions is not None and matrix.shape[1] != dimensions:
        raise InvalidInputError(f"vector {first} has {matrix.shape[1]} dimensions, expected {dimensions}")
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise InvalidInputError(f"vector {first + int(np.argmin(finite))} contains NaN or infinite values")
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
    if (norms == 0).any():
        raise InvalidInputError(f"vector {first + int(np.argmin(norms))} is all zeros")
    return (matrix / norms[:, None]).astype(np.float32)
