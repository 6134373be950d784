"""The rows of the documents table, built off the UI thread: one per document, in a stable order.

No Textual here. :func:`build_rows` turns the documents of a KB (thousands of them) into
:class:`DocRow` objects sorted by folder and name in a worker thread, so the UI thread
only swaps the finished set in. The order never depends on a document's status, so a
row does not move while its document is being indexed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from kbdesk.models import Document, DocumentBrief
from kbdesk.textsafe import inert_line
from kbdesk.tui.progress import DocProgress

IN_FLIGHT = frozenset({"pending", "extracting", "chunking", "embedding"})
FINAL = frozenset({"ready", "error"})

# filter key -> (label, statuses shown; None: every status)
FILTERS: dict[str, tuple[str, frozenset[str] | None]] = {
    "all": ("all documents", None),
    "errors": ("errors only", frozenset({"error"})),
    "active": ("in progress only", IN_FLIGHT),
}
FILTER_ORDER = ("all", "errors", "active")


@dataclass(slots=True)
class DocRow:
    doc_id: str
    filename: str
    """The file's name (its last path part), control characters escaped."""
    size: int | None
    chunks: int | None
    status: str
    error: str | None = None
    done: int = 0
    total: int = 0
    folder: str = ""
    """Where the file is, relative to the folder the KB's files share (tells same names apart)."""

    @property
    def path(self) -> str:
        """Folder and name, as the user knows the file."""
        return f"{self.folder}/{self.filename}" if self.folder else self.filename

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.folder.lower(), self.filename.lower(), self.doc_id)


def split_name(path: str) -> tuple[str, str]:
    """(folder, name) of a relative document name such as ``docs/a/readme.md``."""
    folder, _, name = path.rpartition("/")
    return inert_line(folder), inert_line(name)


def common_root(parents: Iterable[str]) -> str:
    """The deepest folder all of ``parents`` are in ('' when there are none or no common one)."""
    unique = [p for p in set(parents) if p]
    if not unique:
        return ""
    try:
        return os.path.commonpath(unique)
    except ValueError:  # mixed drives or relative and absolute paths
        return ""


@dataclass
class RowSet:
    """Everything the table needs of a KB's documents, computed in a worker."""

    rows: dict[str, DocRow]
    """By document id."""
    keys: list[tuple[str, str, str]]
    """Every row's sort key, in display order (folder, then name)."""
    longest: tuple[int, int, int]
    """Cells of the longest name and folder, and the largest chunk count."""
    counts: dict[str, int]
    """Documents by status."""

    def copy(self) -> RowSet:
        """A copy whose dict and lists can be changed (the rows themselves are replaced, never changed)."""
        return RowSet(dict(self.rows), list(self.keys), self.longest, dict(self.counts))


def build_rows(docs: Sequence[DocumentBrief] | Sequence[Document]) -> RowSet:
    """The rows of ``docs`` in display order, with their widths and counts.

    The folder is where the source file is, relative to the folder all the KB's files
    share (or taken from the document's name when it has no source path). Plain string
    work in one pass, each folder worked out once: this runs over every document of a KB
    (thousands) when its screen loads, in a thread that shares the interpreter with the UI."""
    sep = os.sep
    root = common_root({doc.source_path.rpartition(sep)[0] for doc in docs if doc.source_path})
    cut = len(root) + 1 if root and not root.endswith(sep) else len(root)
    shown: dict[str, tuple[str, str]] = {}  # a parent folder (or a name's folder part) -> (shown, its sort key)
    rows: dict[str, DocRow] = {}
    keys: list[tuple[str, str, str]] = []
    counts: dict[str, int] = {}
    longest_name = longest_folder = most_chunks = 0
    for doc in docs:
        folder, _, name = doc.filename.rpartition("/")
        if doc.source_path and root:
            parent = doc.source_path.rpartition(sep)[0]
            folder = parent[cut:].replace(sep, "/") if parent != root else ""
        known = shown.get(folder)
        if known is None:
            text = inert_line(folder) if folder else ""
            known = shown[folder] = (text, text.lower())
        name = inert_line(name)
        row = DocRow(doc.id, name, doc.size_bytes, doc.chunk_count, doc.status, doc.error, folder=known[0])
        rows[doc.id] = row
        keys.append((known[1], name.lower(), doc.id))
        counts[doc.status] = counts.get(doc.status, 0) + 1
        longest_name = max(longest_name, len(name))
        longest_folder = max(longest_folder, len(known[0]))
        most_chunks = max(most_chunks, doc.chunk_count or 0)
    keys.sort()
    return RowSet(rows, keys, (longest_name, longest_folder, most_chunks), counts)


def merge(row: DocRow, progress: DocProgress) -> DocRow:
    """A row with the live state of its document in an ingestion run."""
    chunks = progress.total if progress.status in ("ready", "embedding") and progress.total else row.chunks
    size = row.size if row.size is not None else (progress.size or None)
    return replace(
        row,
        status=progress.status,
        size=size,
        chunks=chunks,
        error=progress.error if progress.status == "error" else None,
        done=progress.done,
        total=progress.total,
    )


def new_row(progress: DocProgress) -> DocRow:
    """A row for a document the table has not seen yet (it appeared during an ingestion run)."""
    folder, name = split_name(progress.filename)
    return merge(DocRow(progress.doc_id, name, None, None, progress.status, folder=folder), progress)
