"""What both store engines agree on about documents: statuses, the rows to write,
the object key of a stored original, and the rules of document identity.

Identity: within a KB a source path has exactly one document row (a partial unique
index on both engines), and a file name that came by upload has exactly one document
(:data:`NAME_RULE`, a trigger on both engines). The row describes the newest version of the file seen
(content hash, size, mtime, status, error); its chunks are the last version that
became ready (``indexed_hash``, ``indexed_at``). A runner works on a row only after
claiming it in the write that bumps its ``version``; every later write of that work
names the version and is dropped when the row has moved on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kbdesk.models import ChunkInput

DOC_COLUMNS = (
    "id, kb_id, filename, content_type, size_bytes, storage_key, chunk_count, status, error, "
    "uploaded_by, content_hash, source_path, created_at, updated_at, source_mtime, version, indexed_at, "
    "indexed_hash, error_kind, claimed_by, folder, file_type, title, tags, properties"
)
"""The columns of a :class:`kbdesk.models.Document`, in its field order (both engines)."""
SOURCE = 11  # the column of source_path in DOC_COLUMNS
TAGS, PROPERTIES = 23, 24  # JSON columns in DOC_COLUMNS

NAME_RULE = "kbdesk_one_document_per_name"
"""The database's refusal (both engines: a trigger on ``kb_documents``) of a row that would
give a KB two documents of one file name where one of them came by upload (source
``upload:NAME``). Files of one name from different folders stay distinct documents."""

IN_FLIGHT = ("pending", "extracting", "chunking", "embedding")
# the longest file-name part of a stored copy's key (bytes), well under NAME_MAX (255)
_KEY_NAME_BYTES = 160
_KEY_UNSAFE = re.compile(r"[\\/\x00-\x1f\x7f-\x9f]")


@dataclass
class NewDocument:
    """A document version to record: a new row for a new path, or the newest version
    of a path that has one (``expected_version`` is then the version read)."""

    kb_id: str
    filename: str
    content_type: str = "text/plain"
    size_bytes: int = 0
    content_hash: str | None = None
    source_path: str | None = None
    source_mtime: float | None = None
    status: str = "pending"
    error: str | None = None
    error_kind: str | None = None
    doc_id: str | None = None
    expected_version: int | None = None  # None: a new row
    folder: str | None = None  # the folder it was added from


@dataclass
class StatusUpdate:
    doc_id: str
    status: str
    error: str | None = None
    extracted_text: str | None = None
    sections: list[tuple[int, int, dict[str, Any]]] | None = None
    version: int | None = None  # only while the row is still at this version
    error_kind: str | None = None


FACT_KEYS = ("author", "created", "date", "encoding")
"""Document properties kept from its sections' metadata besides ``title`` and ``tags``."""


def document_facts(sections: Any) -> tuple[str | None, list[str], dict[str, Any]]:
    """(title, tags, properties) of a document from its sections' metadata — Markdown
    front matter and inline tags, the properties of Office, OpenDocument, EPUB, e-mail
    and notebook files (every section of such a file carries them)."""
    title: str | None = None
    tags: dict[str, None] = {}
    props: dict[str, Any] = {}
    for section in sections or ():
        meta = section[2] if isinstance(section, (list, tuple)) and len(section) > 2 else {}
        if not isinstance(meta, dict):
            continue
        if title is None and isinstance(meta.get("title"), str) and meta["title"].strip():
            title = " ".join(meta["title"].split())[:500]
        found = meta.get("tags")
        if isinstance(found, (list, tuple)):
            tags.update(dict.fromkeys(str(t).lower().lstrip("#") for t in found if str(t).strip()))
        for key in FACT_KEYS:
            value = meta.get(key)
            if key not in props and isinstance(value, (str, int, float)) and str(value).strip():
                props[key] = str(value)[:500]
    return title, list(tags)[:200], props


FACT_COLUMNS = "title, tags, properties, doc_date"
"""The columns :func:`facts_values` fills, in its order."""
FACT_SETS = "title = ?, tags = ?, properties = ?, doc_date = ?"


def facts_values(db: Any, sections: Any) -> tuple[Any, Any, Any, Any]:
    """The ``title``, ``tags``, ``properties`` and ``doc_date`` column values for these
    sections (``doc_date``: the date the document gives itself, seconds since the epoch,
    :func:`kbdesk.filters.document_date`; NULL when it has none that parses)."""
    from kbdesk.filters import document_date

    title, tags, props = document_facts(sections)
    return db.text(title), db.json_in(tags), db.json_in(props), document_date(props)


def storage_key(kb_id: str, doc_id: str, filename: str) -> str:
    """The seed's object key ``kb/{kb_id}/{doc_id}_{filename}``; the name part is made
    safe for any file system (no separators or control characters, at most 160 bytes,
    the extension kept)."""
    safe = _KEY_UNSAFE.sub("_", filename) or "document"
    raw = safe.encode("utf-8", "surrogatepass")
    if len(raw) > _KEY_NAME_BYTES:
        _stem, dot, ext = safe.rpartition(".")
        ext = dot + ext if dot and len(ext.encode("utf-8", "surrogatepass")) <= 16 else ""
        room = _KEY_NAME_BYTES - len(ext.encode("utf-8", "surrogatepass"))
        safe = raw[:room].decode("utf-8", "ignore") + ext
    return f"kb/{kb_id}/{doc_id}_{safe}"


def text_hash(text: str) -> str:
    """The embedding cache's key for a text (the same as ``ChunkInput.content_hash``)."""
    return ChunkInput(text).content_hash


def check_filename(name: str) -> str:
    """A document's file name as stored and shown: one line, no control characters
    (the ingestion escapes them first), at most 1,024 characters."""
    from kbdesk.errors import InvalidInputError
    from kbdesk.textsafe import is_clean_line

    clean = (name or "").strip()
    if not clean:
        raise InvalidInputError("filename must not be empty")
    if len(clean) > 1024:
        raise InvalidInputError("filename is longer than 1,024 characters")
    if not is_clean_line(clean):
        raise InvalidInputError("filename must not contain control characters")
    return clean
