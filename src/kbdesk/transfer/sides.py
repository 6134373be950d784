"""Either end of a transfer: a desk's store, whatever its engine, and its files.

A side reads documents as plain dicts (row fields, ``extracted_sections``, ``chunks``
with ``vector`` as unit float32 bytes at the KB's dimension, ``blob`` with the original
bytes when known) and writes a batch of them in one transaction, replacing documents
already present under the same ids — all through the store's bulk methods
(:class:`kbdesk.store.core.bulk.Transfer`). Original bytes live in the desk's files
directory, or in the database on an engine that keeps them there.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdesk.models import KnowledgeBase
from kbdesk.store.api import BLOBS, Store

if TYPE_CHECKING:
    from kbdesk.desk import Desk

log = logging.getLogger("kbdesk.transfer")

KNOWN_CONFIG = ("provider", "model_id", "dimensions", "chunk_size", "chunk_overlap")


class Side:
    def __init__(self, desk: Desk) -> None:
        self.desk = desk
        self.store: Store = desk.store
        self.kind = self.store.kind
        self.label = getattr(self.store, "label", None) or str(desk.db_path)
        self._files_only = BLOBS not in self.store.capabilities

    def find_kb(self, ref: str) -> KnowledgeBase:
        return self.store.find_kb(ref)

    def kb_by_id(self, kb_id: str) -> KnowledgeBase | None:
        return self.store.kb_by_id(kb_id)

    def kb_by_name(self, name: str) -> KnowledgeBase | None:
        return self.store.kb_named(name)

    def create_kb(self, like: KnowledgeBase, scope: str, team_id: str | None) -> KnowledgeBase:
        if scope == "team" and team_id:
            team_id = self.store.resolve_team(team_id)
        return self.store.create_kb(
            like.name,
            like.description,
            embedding_config=_known_config(like),
            scope=scope,
            team_id=team_id,
            discoverable=like.discoverable,
            kb_id=like.id,
        )

    def set_status(self, kb_id: str, status: str) -> None:
        self.store.set_kb_status(kb_id, status)

    def summaries(self, kb_id: str) -> dict[str, dict[str, Any]]:
        return self.store.document_summaries(kb_id)

    def read(self, kb: KnowledgeBase, doc_ids: list[str]) -> list[dict[str, Any]]:
        docs = self.store.export_documents(kb.id, doc_ids, self.store.kb_vector_dimensions(kb.id))
        for doc in docs:
            if doc["blob"] is None:
                doc["blob"] = read_file(self.desk.files_dir, doc["storage_key"])
        return docs

    def write(self, kb: KnowledgeBase, docs: list[dict[str, Any]]) -> None:
        if self._files_only:  # bytes first: a kill before the rows leaves a file a later sweep removes
            from kbdesk.store.doc_types import storage_key

            for doc in docs:
                if doc.get("blob") is not None:
                    write_file(self.desk.files_dir, storage_key(kb.id, doc["id"], doc["filename"]), doc["blob"])
        self.store.import_documents(kb.id, docs)

    def delete(self, kb: KnowledgeBase, doc_ids: list[str]) -> int:
        keys = [d.storage_key for d in self.store.get_documents(doc_ids).values()]
        gone = self.store.delete_documents(kb.id, doc_ids)
        for key in keys:
            with contextlib.suppress(OSError):
                (self.desk.files_dir / key).unlink()
        return gone

    def finish(self, kb: KnowledgeBase) -> KnowledgeBase:
        self.store.recount(kb.id)
        self.store.set_kb_status(kb.id, "active")
        done = self.store.get_kb(kb.id)
        self.store.index_vectors(kb.id)
        return done


def side_for(desk: Desk) -> Side:
    return Side(desk)


def read_file(files_dir: Path, key: str) -> bytes | None:
    try:
        return (files_dir / key).read_bytes()
    except OSError:
        return None


def write_file(files_dir: Path, key: str, data: bytes) -> None:
    path = files_dir / key
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(path)


def _known_config(kb: KnowledgeBase) -> dict[str, Any]:
    """The embedding snapshot keys kbdesk knows (a team server may keep more there)."""
    return {k: kb.embedding_config[k] for k in KNOWN_CONFIG if kb.embedding_config.get(k) is not None}
