"""Values on their way into and out of Postgres.

- Text: Postgres ``text`` and ``jsonb`` refuse NUL (``\\x00``), and no UTF-8 can carry a
  lone surrogate. NULs are stripped (section offsets into the text are moved to match)
  and lone surrogates become U+FFFD, so a batch never fails on them; ``jsonb`` has no
  NaN or Infinity either, which become null.
- Vectors: stored unit-normalised, zero-padded to the seed's 3072 columns; the real
  dimension lives in ``embedding_config.dimensions``. Padding does not change cosine.
- Timestamps: ISO-8601 UTC with milliseconds and ``Z``, as the SQLite store writes them.
"""

from __future__ import annotations

import bisect
import math
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import numpy as np

from kbdesk.errors import InvalidInputError
from kbdesk.store.postgres.seed import VECTOR_COLUMN_DIMS

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: str | None) -> str | None:
    """``value`` without NULs and with lone surrogates replaced: text Postgres accepts."""
    if value is None:
        return None
    if "\x00" in value:
        value = value.replace("\x00", "")
    if _SURROGATE.search(value):
        value = _SURROGATE.sub("\ufffd", value)
    return value


def clean_json(value: Any) -> Any:
    """A JSON-able value with every string (keys too) cleaned for ``jsonb``."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # jsonb has no NaN or Infinity
    return value


def clean_text_and_sections(text: str | None, sections: list[Any] | None) -> tuple[str | None, list[Any] | None]:
    """Clean extracted text and move its ``[start, end, metadata]`` sections with it."""
    if text is None or "\x00" not in text:
        return clean_text(text), clean_json(sections) if sections is not None else None
    nuls = [i for i, ch in enumerate(text) if ch == "\x00"]

    def moved(offset: int) -> int:
        return offset - bisect.bisect_left(nuls, offset)

    out = None
    if sections is not None:
        out = [[moved(int(start)), moved(int(end)), clean_json(meta)] for start, end, meta in sections]
    return clean_text(text), out


def pad(unit: np.ndarray) -> np.ndarray:
    """A unit float32 vector zero-padded to the column width."""
    if unit.size > VECTOR_COLUMN_DIMS:
        raise InvalidInputError(
            f"vectors of {unit.size} dimensions do not fit kb_chunks.embedding, "
            f"a vector({VECTOR_COLUMN_DIMS}) column; use a model with at most 3072 dimensions in Postgres mode"
        )
    out = np.zeros(VECTOR_COLUMN_DIMS, dtype=np.float32)
    out[: unit.size] = unit
    return out


def as_unit_bytes(value: Any, dims: int) -> bytes:
    """A vector read back (pgvector ``Vector`` or array) as float32 bytes at ``dims``."""
    arr = value.to_numpy() if hasattr(value, "to_numpy") else np.asarray(value)
    return np.ascontiguousarray(arr[:dims], dtype=np.float32).tobytes()


def infer_dimensions(vectors: list[Any]) -> int:
    """The real dimension of zero-padded vectors whose KB does not record it (a seed
    writer's rows): one past the last column that is non-zero in any of them."""
    last = 0
    for value in vectors:
        arr = value.to_numpy() if hasattr(value, "to_numpy") else np.asarray(value)
        nonzero = np.flatnonzero(arr)
        if nonzero.size:
            last = max(last, int(nonzero[-1]) + 1)
    return last or VECTOR_COLUMN_DIMS


def iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return str(value)


def parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def as_uuid(value: Any) -> uuid.UUID | None:
    return None if value is None else value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


_UUID_LIST = re.compile(r"[0-9A-Fa-f,-]*")


def uuid_array(ids: list[str]) -> str:
    """Ids as one ``uuid[]`` literal: a thousand document ids are one parameter the server
    parses, not a thousand values the driver quotes one by one (2 ms of a search)."""
    text = ",".join(ids)
    if not _UUID_LIST.fullmatch(text):
        raise ValueError("not a list of uuids")
    return "{" + text + "}"
