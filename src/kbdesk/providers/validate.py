"""Checking what a server sent back, and reading its error messages.

Pure functions over parsed JSON: they raise :class:`ShapeError` with a message that
the provider wraps (adding the provider and model names) into a ProviderResponseError.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kbdesk.providers.json_shapes import obj
from kbdesk.providers.results import ModelInfo, normalise_model_type

NESTED_VECTORS = (
    "server returned one vector per token (nested lists) instead of one per input: the model is not "
    "pooled; start llama.cpp's llama-server with --embeddings --pooling mean (or cls, last); "
    "llama-cpp-python's server has no pooling option: serve an embedding model there "
    "(one whose GGUF sets its pooling, e.g. nomic-embed-text or bge)"
)


class ShapeError(ValueError):
    """The response is not shaped like the OpenAI API's.

    ``splittable``: the answer cannot be matched to its inputs, but the same inputs in
    smaller batches may well be (a glitch, one input that trips the server). Not
    splittable: a setting every input would hit (base64 vectors, one vector per token).
    """

    def __init__(self, message: str, *, splittable: bool = True) -> None:
        super().__init__(message)
        self.splittable = splittable


@dataclass
class ParsedEmbeddings:
    vectors: list[list[float] | None]
    """In input order; None where ``bad`` has a reason."""
    bad: dict[int, str]
    """Input index -> what is wrong with its vector (NaN/infinity, all zeros, not numbers,
    the wrong dimension): faults that belong to one input, found without another call."""
    prompt_tokens: int | None
    total_tokens: int | None
    dimensions: int | None
    """The common length of the good vectors (None when there are none)."""


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
    """Check an ``/embeddings`` response for ``n_inputs`` inputs and return its vectors.

    A fault that belongs to one vector (see :func:`vector_problem`, and a length other
    than ``dimensions``) goes in ``bad``; a response that cannot be matched to its inputs
    (wrong number of vectors, bad indices, vectors of different lengths when no length
    is expected yet) raises a splittable :class:`ShapeError`.
    """
    if not isinstance(body, dict):
        raise ShapeError(f"expected a JSON object with a 'data' list, got {json_kind(body)}")
    data = body.get("data")
    if not isinstance(data, list):
        raise ShapeError(f"expected a 'data' list in the JSON object, got {json_kind(data)}")
    if len(data) != n_inputs:
        raise ShapeError(f"response had {len(data)} vectors for {n_inputs} inputs")
    slots: list[object] = [None] * n_inputs
    for position, item in enumerate(data):
        if not isinstance(item, dict) or "embedding" not in item:
            raise ShapeError(f"item {position} of 'data' has no 'embedding'")
        index = item.get("index", position)
        if type(index) is not int or not 0 <= index < n_inputs or slots[index] is not None:
            raise ShapeError(f"item {position} of 'data' has a missing, out-of-range or repeated index {index!r}")
        slots[index] = item["embedding"]
    if any(isinstance(raw, str) for raw in slots):
        raise ShapeError(
            "server returned base64 text although floats were requested (encoding_format=float)", splittable=False
        )
    if any(isinstance(raw, list) and raw and isinstance(raw[0], list) for raw in slots):
        raise ShapeError(NESTED_VECTORS, splittable=False)
    arrays: dict[int, np.ndarray] = {}
    bad: dict[int, str] = {}
    for i, raw in enumerate(slots):
        array, problem = vector_problem(raw)
        if array is not None:
            arrays[i] = array
        else:
            bad[i] = problem or "not a vector"
    lengths = sorted({a.size for a in arrays.values()})
    if dimensions is None and len(lengths) > 1:
        raise ShapeError(f"vectors have different lengths ({', '.join(map(str, lengths))})")
    for i, array in arrays.items():
        if dimensions is not None and array.size != dimensions:
            bad[i] = f"has {array.size} dimensions, expected {dimensions}"
    vectors = [None if i in bad else arrays[i].tolist() for i in range(n_inputs)]
    usage = obj(body.get("usage"))
    return ParsedEmbeddings(
        vectors,
        bad,
        _count(usage.get("prompt_tokens")),
        _count(usage.get("total_tokens")),
        next((len(v) for v in vectors if v is not None), None),
    )


def vector_problem(raw: object, dimensions: int | None = None) -> tuple[np.ndarray | None, str | None]:
    """``(array, None)`` for a usable vector, else ``(None, what is wrong with it)``: not a
    flat list of numbers, empty, NaN or infinity, all zeros, or not ``dimensions`` long."""
    if isinstance(raw, np.ndarray):
        array = raw
    elif not isinstance(raw, (list, tuple)):
        return None, f"is {json_kind(raw)}, expected a list of numbers"
    else:
        try:
            array = np.asarray(raw)
        except (ValueError, TypeError):
            return None, "is not a flat list of numbers"
    if array.ndim != 1:
        return None, "is not a flat list of numbers"
    if array.size == 0:
        return None, "is empty"
    if array.dtype.kind not in "fiu":
        return None, "contains something that is not a number"
    array = array.astype(np.float64, copy=False)
    if dimensions is not None and array.size != dimensions:
        return None, f"has {array.size} dimensions, expected {dimensions}"
    if not np.isfinite(array).all():
        return None, "contains NaN or infinity"
    if not array.any():
        return None, "is all zeros"
    return array, None


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
        model_id: object
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
_TOO_LARGE_CLAIM = re.compile(
    r"too (long|large|big|many)|exceed|larger than|longer than|maximum|"
    r"reduce the length|max(imum)? (context|length|size)",
    re.I,
)
_MODEL_MISSING = re.compile(
    r"model_not_found|model\b.{0,120}?\b(not found|does not exist|doesn't exist|not exist|not available|"
    r"not loaded|not a valid model)|(unknown|invalid|no such|unsupported) model",
    re.I | re.S,
)


def error_message(body: bytes, limit: int = 300, *, clean: Callable[[str], str] = str) -> str:
    """The human part of an error response (``error.message`` and the like), passed
    through ``clean`` (credentials masked) and then shortened."""
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return _shorten(clean(text), limit)
    return error_message_from(parsed, limit, clean=clean) or _shorten(clean(text), limit)


def error_message_from(parsed: object, limit: int = 300, *, clean: Callable[[str], str] = str) -> str:
    """The human part of a parsed JSON error body, cleaned then shortened, or "" when there is none."""
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
    return _shorten(clean(message if isinstance(message, str) else json.dumps(message)), limit)


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


# What servers say when the prompt does not fit: OpenAI, vLLM and llama-cpp-python ("This
# model's maximum context length is N tokens"), llama.cpp ("the request exceeds the
# available context size", type exceed_context_size_error), LM Studio ("context length of
# only N tokens"), others ("too many tokens", "prompt is too long").
_OVERFLOW = re.compile(
    r"context[_ ](length|window|size)|exceeds? the (available )?context|exceed_context|maximum context|"
    r"too many tokens|(prompt|input|conversation) is too long|reduce the length of the messages|"
    r"maximum model length|longer than the (model'?s? )?(maximum )?context|context overflow",
    re.I,
)
# Request validation: pydantic (llama-cpp-python, vLLM, LiteLLM), nlohmann::json type
# errors and message parsing (llama.cpp), OpenAI's schema checks.
_VALIDATION = re.compile(
    r"validation errors?\b|Input should be|Field required|Extra inputs are not permitted|\btype_error\b|"
    r"type must be \w+, but is|Failed to parse|Expected '\w+'|is too short - '|is not of type '|"
    r"Unsupported parameter|Invalid (type|value) for|invalid_request_error.*param",
    re.I,
)


def says_context_overflow(message: str) -> bool:
    """Whether an error message says the prompt is over the model's context window."""
    return bool(_OVERFLOW.search(message))


def says_invalid_request(message: str) -> bool:
    """Whether an error message is the server's request validation (never fixed by a retry)."""
    return bool(_VALIDATION.search(message))


def html_page_hint(url: str) -> str:
    """What a 200 with an HTML page means: the base URL points at a web page, not the API."""
    return (
        f"got an HTML page — is the base URL right (it usually ends in /v1)? (a web page, not JSON; "
        f"is {url} the API root?)"
    )


V1_KINDS = frozenset({"openai", "ollama", "lmstudio", "vllm", "llamacpp", "custom"})


def v1_hint(kind: str, base_url: str) -> str:
    """ " (does the base URL need /v1?)" for a 404 from a base URL without /v1, else ""."""
    if kind in V1_KINDS and not base_url.rstrip("/").endswith("/v1"):
        return " (does the base URL need /v1?)"
    return ""
