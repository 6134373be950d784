"""What the helper process (:mod:`kbdesk.ingest.helper`) does for a batch of files: each
file's stored copy, its extraction and its chunks, in the helper's own interpreter.

Extraction and chunking are Python work, which threads of one process do one at a time;
the helper does them on another core while the run's writer stores earlier batches. What
comes back is plain data (the same the run would have made), one entry per file:

* ``("ok", text, spans, chunks)`` — ``chunks`` as ``(content, token_count, metadata,
  content_hash, metadata_json)``;
* ``("copy", errno, message)`` — the stored copy could not be written;
* ``("file", message)`` — the file cannot be indexed (the reason a user reads);
* ``("resource", message)`` — extraction ran out of time (tried again by the next add);
* ``("internal", message)`` — an unforeseen failure, this file alone.

PDFs are not sent here: they have their own extraction process, with its limits.
:func:`chunks_of` turns an ``"ok"`` result back into chunks in the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbdesk.errors import KbdeskError
from kbdesk.ingest import chunker
from kbdesk.ingest.copies import write_copy
from kbdesk.ingest.extract import extract_bytes
from kbdesk.ingest.sections import ResourceLimit
from kbdesk.models import ChunkInput


def prepare_each(
    items: list[tuple[str, bytes, bool, str]], chunk_size: int, overlap: int, max_bytes: int
) -> list[tuple[Any, ...]]:
    """``items``: (stored copy's path, the file's bytes, a new document?, file name)."""
    out: list[tuple[Any, ...]] = []
    for path, data, fresh, filename in items:
        try:
            write_copy(path, data, fresh=fresh)
        except OSError as exc:
            out.append(("copy", exc.errno or -1, exc.strerror or str(exc)))
            continue
        out.append(_prepare_one(data, filename, chunk_size, overlap, max_bytes))
    return out


def _prepare_one(data: bytes, filename: str, chunk_size: int, overlap: int, max_bytes: int) -> tuple[Any, ...]:
    """One file's result, computed from that file alone (nothing of it outlives the call)."""
    try:
        extracted = extract_bytes(data, filename, max_bytes=max_bytes)
        pieces = [
            ChunkInput(c.content, c.token_count, c.metadata)
            for c in chunker.chunk_sections(extracted.sections, chunk_size, overlap)
        ]
        chunks = [(c.content, c.token_count, c.metadata, c.content_hash, c.metadata_json) for c in pieces]
    except ResourceLimit as exc:
        return ("resource", str(exc))
    except KbdeskError as exc:
        return ("file", str(exc))
    except Exception as exc:  # noqa: BLE001 - an unforeseen input: this file alone
        return ("internal", f"{type(exc).__name__}: {exc}")
    return ("ok", extracted.text, extracted.spans, chunks)


# ── the run's side: what came back ─────────────────────────────────────────────
@dataclass
class Prepared:
    """A document's chunks as the helper process made them."""

    chunks: list[ChunkInput]


def chunks_of(rows: list[tuple[Any, ...]]) -> list[ChunkInput]:
    """The chunks of an ``("ok", …)`` result, their hash and metadata JSON as computed there."""
    out = []
    for content, token_count, metadata, content_hash, metadata_json in rows:
        chunk = ChunkInput(content, token_count, metadata)
        chunk.__dict__.update(content_hash=content_hash, metadata_json=metadata_json)  # cached properties
        out.append(chunk)
    return out
