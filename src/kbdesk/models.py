"""Plain data objects shared by the store, the services and both faces.

Field names and meanings follow seed 000 §10; ``to_dict`` gives the JSON shapes of
seed 002 (the KB object, the document object, the search result).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 200

KB_STATUSES = ("active", "processing", "error")
DOC_STATUSES = ("pending", "extracting", "chunking", "embedding", "ready", "error")
SCOPES = ("personal", "team", "global")


@dataclass
class KnowledgeBase:
    id: str
    name: str
    description: str
    scope: str
    owner_id: str | None
    team_id: str | None
    embedding_config: dict[str, Any]
    document_count: int
    chunk_count: int
    total_bytes: int
    status: str
    discoverable: bool
    created_at: str
    updated_at: str
    failed_documents: int = 0
    """Documents whose newest version failed (filled by :meth:`kbdesk.desk.Desk.list_kbs`)."""

    @property
    def health(self) -> str:
        """The status a person should see: ``error`` when every document failed, else the KB's own."""
        if self.document_count and self.failed_documents >= self.document_count:
            return "error"
        return self.status

    @property
    def model_id(self) -> str | None:
        """The embedding model fixed at creation, or None for a keyword-only KB."""
        return self.embedding_config.get("model_id") or None

    @property
    def dimensions(self) -> int | None:
        value = self.embedding_config.get("dimensions")
        return int(value) if value else None

    @property
    def chunk_size(self) -> int:
        return int(self.embedding_config.get("chunk_size", DEFAULT_CHUNK_SIZE))

    @property
    def chunk_overlap(self) -> int:
        return int(self.embedding_config.get("chunk_overlap", DEFAULT_CHUNK_OVERLAP))

    def to_dict(self) -> dict[str, Any]:
        """The seed's KB object (``discoverable`` is kept out, as seed 002 says)."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "scope": self.scope,
            "owner_id": self.owner_id,
            "team_id": self.team_id,
            "embedding_config": dict(self.embedding_config),
            "document_count": self.document_count,
            "chunk_count": self.chunk_count,
            "total_bytes": self.total_bytes,
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass
class Document:
    id: str
    kb_id: str
    filename: str
    content_type: str
    size_bytes: int
    storage_key: str
    chunk_count: int
    status: str
    error: str | None
    uploaded_by: str
    content_hash: str | None
    source_path: str | None
    created_at: str
    updated_at: str
    source_mtime: float | None = None
    # bumped whenever a runner claims the row for new work (see kbdesk.store.claims)
    version: int = 0
    # when the stored chunks were written, and from which version of the file (hash)
    indexed_at: str | None = None
    indexed_hash: str | None = None
    # why the newest version failed: "file" (remembered until the file changes),
    # "provider", "store", "resource" (out of time) or "internal" (retried by the next add)
    error_kind: str | None = None
    claimed_by: str | None = None
    # what a search filter looks at (kbdesk.filters), besides filename (the path relative to
    # the folder it was added from), source_mtime and indexed_at:
    folder: str | None = None
    """The folder the document was added from (None: a single file, an upload, or not known)."""
    file_type: str = ""
    """The file's extension, lower case, without the dot (``md``, ``pdf``)."""
    title: str | None = None
    """From Markdown front matter ``title:``, or the properties of Office, OpenDocument, EPUB
    and e-mail files."""
    tags: list[str] = field(default_factory=list)
    """Front matter ``tags:`` and inline ``#tags``, lower case, without ``#``."""
    properties: dict[str, Any] = field(default_factory=dict)
    """The document's other properties where its format has them: ``author``, ``created``, ``date``."""

    @property
    def path(self) -> str:
        """The path filters match: relative to the folder it was added from, else the file name."""
        return self.filename

    @property
    def stale(self) -> bool:
        """The stored chunks come from an older version of the file than the newest seen."""
        return self.indexed_hash is not None and self.indexed_hash != self.content_hash

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kb_id": self.kb_id,
            "filename": self.filename,
            "content_type": self.content_type,
            "size_bytes": self.size_bytes,
            "chunk_count": self.chunk_count,
            "status": self.status,
            "error": self.error,
            "uploaded_by": self.uploaded_by,
            "content_hash": self.content_hash,
            "source_path": self.source_path,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            # outside the seed's shape: which version the chunks come from
            "indexed_at": self.indexed_at,
            "stale": self.stale,
            "error_kind": self.error_kind,
            "folder": self.folder,
            "file_type": self.file_type,
            "source_mtime": self.source_mtime,
            "title": self.title,
            "tags": list(self.tags),
            "properties": dict(self.properties),
        }


class DocumentBrief(NamedTuple):
    """What a list of a KB's documents shows of each one (:meth:`kbdesk.desk.Desk.document_briefs`):
    a few columns of a :class:`Document`, read without its text or facts, so listing thousands
    of documents stays cheap."""

    id: str
    filename: str
    source_path: str | None
    size_bytes: int
    chunk_count: int
    status: str
    error: str | None


@dataclass
class ChunkInput:
    """One chunk to store: text, its estimated tokens and metadata (page, headings…)."""

    content: str
    token_count: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def content_hash(self) -> str:
        """Hash of the text: the key of the embedding cache."""
        return hashlib.sha256(self.content.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    @cached_property
    def metadata_json(self) -> str:
        """The metadata as stored in SQLite (JSON text)."""
        return json.dumps(self.metadata or {})


@dataclass
class SearchResult:
    """Exactly the seed's result shape (seed 000 §5)."""

    content: str
    source: str
    kb: str
    similarity: float
    metadata: dict[str, Any]
    # where the chunk lives, to open it with its neighbours; not part of the seed's shape
    document_id: str | None = field(default=None, compare=False)
    chunk_index: int | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "source": self.source,
            "kb": self.kb,
            "similarity": self.similarity,
            "metadata": dict(self.metadata),
        }
