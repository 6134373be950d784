"""Checking what a server sent back, and reading its error messages.

Pure functions over parsed JSON: they raise :class:`ShapeError` with a message that
the provider wraps (adding the provider and model names) into a ProviderResponseError.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from kbdesk.providers.results import ModelInfo, normalise_model_type

NESTED_VECTORS = ("server returned one vector per token (nested lists) instead of one per input; "
                  "start llama.cpp's server with --pooling mean (or cls/last) so it pools them")


class ShapeError(ValueError):
    """The response is not shaped like the OpenAI API's."""


@dataclass
class ParsedEmbeddings:
    vectors: list[list[float] | None]
    """In input order; None where ``bad`` has a reason."""
    bad: dict[int, str]
    """Input index -> what is wrong with its vector (NaN/infinity, all zeros)."""
    prompt_tokens: int | None
    total_tokens: int | None
    dimensions: int | None
    """The common length of the vectors (None for no inputs)."""


def json_kind(value: object) -> str:
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, str):
        return "a JSON string"
    if value is None:
        return "null"
    return f"a JSON {type(value).__name__}"


def parse_embeddings(body: object, n_inputs: int, dimensions: int | None) -> ParsedEmbeddings:
    """Check an ``/embeddings`` response for ``n_inputs`` inputs and return its vectors."""
    if not isinstance(body, dict):
        raise ShapeError(f"expected a JSON object with a 'data' list, got {json_kind(body)}")
    data = body.get("data")
    if not isinstance(data, list):
        raise ShapeError(f"expected a 'data' list in the JSON object, got {json_kind(data)}")
    if len(data) != n_inputs:
        raise ShapeError(f"server returned {len(data)} vectors for {n_inputs} inputs")
    slots: list[object] = [None] * n_inputs
    for position, item in enumerate(data):
        if not isinstance(item, dict) or "embedding" not in item:
            raise ShapeError(f"item {position} of 'data' has no 'embedding'")
        index = item.get("index", position)
        if type(index) is not int or not 0 <= index < n_inputs or slots[index] is not None:
            raise ShapeError(f"item {position} of 'data' has a missing, out-of-range or repeated index {index!r}")
        slots[index] = item["embedding"]
    arrays = [_as_vector(raw, i) for i, raw in enumerate(slots)]
    lengths = sorted({len(a) for a in arrays})
    if len(lengths) > 1:
        raise ShapeError(f"vectors have different lengths ({', '.join(map(str, lengths))})")
    if n_inputs and dimensions is not None and lengths[0] != dimensions:
        raise ShapeError(f"vectors have {lengths[0]} dimensions, expected {dimensions}")
    vectors: list[list[float] | None] = []
    bad: dict[int, str] = {}
    for i, array in enumerate(arrays):
        if not np.isfinite(array).all():
            bad[i] = "contains NaN or infinity"
        elif not array.any():
            bad[i] = "is all zeros"
        vectors.append(None if i in bad else array.tolist())
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return ParsedEmbeddings(vectors, bad, _count(usage.get("prompt_tokens")), _count(usage.get("total_tokens")),
                            lengths[0] if lengths else None)


def _as_vector(raw: object, index: int) -> np.ndarray:
    if isinstance(raw, str):
        raise ShapeError("server returned base64 text although floats were requested (encoding_format=float)")
    if not isinstance(raw, list) or not raw:
        raise ShapeError(f"vector {index} is {json_kind(raw) if not isinstance(raw, list) else 'empty'}, "
                         "expected a list of numbers")
    if isinstance(raw[0], list):
        raise ShapeError(NESTED_VECTORS)
    try:
        array = np.asarray(raw)
    except (ValueError, TypeError):
        array = None
    if array is None or array.ndim != 1:
        raise ShapeError(NESTED_VECTORS if any(isinstance(x, list) for x in raw)
                         else f"vector {index} is not a flat list of numbers")
    if array.dtype.kind not in "fiu":
        raise ShapeError(f"vector {index} contains something that is not a number")
    return array.astype(np.float64, copy=False)


def _count(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def parse_models(body: object) -> list[ModelInfo]:
    """Models from a ``/models`` response, tolerant of the shapes servers really send."""
    items: object = body
    if isinstance(body, dict):
        items = body.get("data") if isinstance(body.get("data"), list) else body.get("models")
    if not isinstance(items, list):
        what = "a JSON object without one" if isinstance(body, dict) else json_kind(body)
        raise ShapeError(f"expected a JSON object with a 'data' list of models, got {what}")
    models: list[ModelInfo] = []
    seen: set[str] = set()
    for item in items:
        model_type = None
        if isinstance(item, str):
            model_id = item
        elif isinstance(item, dict):
            model_id = item.get("id") or item.get("name") or item.get("model")
            for key in ("type", "model_type", "object", "task"):
                model_type = normalise_model_type(item.get(key))
                if model_type:
                    break
        else:
            continue
        if isinstance(model_id, str) and model_id and model_id not in seen:
            seen.add(model_id)
            models.append(ModelInfo(model_id, model_type))
    return models


# ── the server's own words ────────────────────────────────────────────────────────

_TOO_LARGE_SUBJECT = re.compile(r"input|context|batch|prompt|token|request|length|size|payload|body", re.I)
_TOO_LARGE_CLAIM = re.compile(r"too (long|large|big|many)|exceed|larger than|longer than|maximum|"
                              r"reduce the length|max(imum)? (context|length|size)", re.I)
_MODEL_MISSING = re.compile(
    r"model_not_found|model\b.{0,120}?\b(not found|does not exist|doesn't exist|not exist|not available|"
    r"not loaded|not a valid model)|(unknown|invalid|no such|unsupported) model", re.I | re.S)


def error_message(body: bytes, limit: int = 300) -> str:
    """The human part of an error response (``error.message`` and the like), shortened."""
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return _shorten(text, limit)
    return error_message_from(parsed, limit) or _shorten(text, limit)


def error_message_from(parsed: object, limit: int = 300) -> str:
    """The human part of a parsed JSON error body, or "" when there is none."""
    message: object = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict):
            message = error.get("message") or error.get("code") or error.get("type")
        elif isinstance(error, str):
            message = error
        message = message or parsed.get("message") or parsed.get("detail")
    if message is None:
        return ""
    return _shorten(message if isinstance(message, str) else json.dumps(message), limit)


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def says_too_large(status: int, message: str) -> bool:
    """Whether the server rejected the request because the input was too big."""
    if status == 413:
        return True
    if status in (400, 422, 500):
        return bool(_TOO_LARGE_SUBJECT.search(message) and _TOO_LARGE_CLAIM.search(message))
    return False


def says_model_missing(message: str) -> bool:
    """Whether an error message says the model does not exist."""
    return bool(_MODEL_MISSING.search(message))
