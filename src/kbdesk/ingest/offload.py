"""What the helper process (:mod:`kbdesk.ingest.helper`) does for a batch of files: each
file's stored copy, its extraction and its chunks, in the helper's own interpreter.

Extraction and chunking are Python work, which threads of one process do one at a time;
the helper does them on another core while the run's writer stores earlier batches. What
comes back is plain data (the same the run would have made), one entry per file:

* ``("ok", text, spans, chunks)`` — ``chunks`` as ``(content, token_count, metadata,
  content_hash, metadata_json)``;
* ``("copy", errno, message)`` — the stored copy could not be written;
* ``("file", message)`` — the file cannot be indexed (the reason a user reads), among
  them a file whose reading needs more memory than one file may have (:func:`memory_cap`);
* ``("resource", message)`` — extraction ran out of time (tried again by the next add);
* ``("internal", message)`` — an unforeseen failure, this file alone.

PDFs are not sent here: they have their own extraction process, with its limits.
:func:`chunks_of` turns an ``"ok"`` result back into chunks in the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kbdesk.errors import KbdeskError
from kbdesk.ingest import chunker
from kbdesk.ingest.copies import write_copy
from kbdesk.ingest.extract import extract_bytes
from kbdesk.ingest.sections import ResourceLimit
from kbdesk.models import ChunkInput


def prepare_each(
    items: list[tuple[str, bytes, bool, str]],
    chunk_size: int,
    overlap: int,
    max_bytes: int,
    memory_mb: int | None = None,
) -> list[tuple[Any, ...]]:
    """``items``: (stored copy's path, the file's bytes, a new document?, file name).
    ``memory_mb``: what one file's extraction may add to this process's memory (the
    helper process only: see :func:`memory_cap`)."""
    out: list[tuple[Any, ...]] = []
    for path, data, fresh, filename in items:
        try:
            write_copy(path, data, fresh=fresh)
        except OSError as exc:
            out.append(("copy", exc.errno or -1, exc.strerror or str(exc)))
            continue
        with memory_cap(memory_mb):
            out.append(_prepare_one(data, filename, chunk_size, overlap, max_bytes, memory_mb))
    return out


@contextmanager
def memory_cap(memory_mb: int | None) -> Iterator[None]:
    """While one file is read: this process may grow by at most ``memory_mb`` (its
    address space, ``RLIMIT_AS``, as the PDF reader's process); past it an allocation
    raises MemoryError. For the helper process alone — one thread, one file at a time; a
    no-op where the system has no such limit or says nothing of the process's size."""
    size = _address_space()
    if memory_mb is None or size is None:
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = size + memory_mb * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _address_space() -> int | None:
    """This process's address space in bytes now (Linux), or None."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _prepare_one(
    data: bytes, filename: str, chunk_size: int, overlap: int, max_bytes: int, memory_mb: int | None = None
) -> tuple[Any, ...]:
    """One file's result, computed from that file alone (nothing of it outlives the call)."""
    try:
        extracted = extract_bytes(data, filename, max_bytes=max_bytes)
        pieces = [
            ChunkInput(c.content, c.token_count, c.metadata)
            for c in chunker.chunk_sections(extracted.sections, chunk_size, overlap)
        ]
        chunks = [(c.content, c.token_count, c.metadata, c.content_hash, c.metadata_json) for c in pieces]
    except MemoryError:  # the cap of memory_cap(): the file needs more than one file may have
        return ("file", f"reading the document needs more than {memory_mb or '?'} MB of memory")
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
