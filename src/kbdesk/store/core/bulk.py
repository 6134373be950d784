"""Whole documents in and out of a store, for export and import (``kbdesk export``).

:meth:`Transfer.import_documents` writes a batch of documents — rows, chunks with their
vectors, original bytes where the engine keeps them — in ONE transaction, replacing a
document already present under the same id (or the same source path) whole, so running
the same batch twice leaves the same rows. Ids are kept, so a KB moved back and forth
keeps its identity. Documents travel as plain dicts: row fields, ``extracted_sections``,
``chunks`` with ``vector`` as unit float32 bytes at the KB's dimension, ``blob`` with the
original bytes when the engine holds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from kbdesk.errors import ConflictError, InvalidInputError
from kbdesk.filters import file_type_of
from kbdesk.ingest.names import UPLOAD, file_of
from kbdesk.models import ChunkInput
from kbdesk.store.core.compose import Base
from kbdesk.store.core.documents import Documents
from kbdesk.store.core.parts import BulkStorage, ChunkStorage, KbRecords, VectorChanges
from kbdesk.store.doc_types import FACT_COLUMNS, facts_values, storage_key
from kbdesk.store.engine import Engine

EXPORT_COLUMNS = (
    "id",
    "filename",
    "content_type",
    "size_bytes",
    "extracted_text",
    "extracted_sections",
    "status",
    "error",
    "content_hash",
    "source_path",
    "source_mtime",
    "created_at",
    "updated_at",
    "storage_key",
    "folder",
    "title",
    "tags",
    "properties",
)


class Transfer:
    """Whole documents in and out over the store's ``base``, its KB records (``kbs``), its
    documents (their chunks go with them), the engine's ``chunks`` (the vector index kept
    along) and its :class:`~kbdesk.store.core.parts.BulkStorage` (``storage``:
    vectors out, chunks in, original bytes, sources)."""

    def __init__(
        self, base: Base, kbs: KbRecords, documents: Documents, chunks: ChunkStorage, storage: BulkStorage
    ) -> None:
        self.base = base
        self.kbs = kbs
        self.documents = documents
        self.chunks = chunks
        self.storage = storage

    @property
    def db(self) -> Engine:
        return self.base.db

    def document_summaries(self, kb_id: str) -> dict[str, dict[str, Any]]:
        """Every document of a KB with what decides whether two copies are the same:
        status, filename, content hash, size and each chunk's (index, text hash, has vector);
        ``order`` (its first chunk's seq) lets a copy keep the order of the chunks."""
        sql = self.db.sql
        with self.base.read() as conn:
            docs = conn.execute(
                sql(
                    "SELECT id, status, filename, content_hash, size_bytes, created_at FROM kb_documents "
                    "WHERE kb_id = ?"
                ),
                (kb_id,),
            ).fetchall()
            chunks = conn.execute(
                sql(
                    "SELECT document_id, chunk_index, content_hash, CASE WHEN content_hash IS NULL THEN content END, "
                    "embedding IS NOT NULL, seq FROM kb_chunks WHERE kb_id = ? ORDER BY document_id, chunk_index"
                ),
                (kb_id,),
            ).fetchall()
        out = {
            d[0]: {
                "status": d[1],
                "filename": d[2],
                "content_hash": d[3],
                "size_bytes": int(d[4]),
                "created_at": self.db.time_out(d[5]),
                "order": None,
                "chunks": [],
            }
            for d in docs
        }
        for doc_id, index, text_hash, content, has_vector, seq in chunks:
            if doc_id in out:
                out[doc_id]["chunks"].append(
                    (int(index), text_hash or ChunkInput(content).content_hash, bool(has_vector))
                )
                out[doc_id]["order"] = min(seq, out[doc_id]["order"] or seq)
        return out

    def export_documents(self, kb_id: str, doc_ids: Sequence[str], dims: int | None) -> list[dict[str, Any]]:
        """Documents with their text, sections, chunks, vectors (unit float32 bytes at
        ``dims``) and original bytes where the engine holds them."""
        where, args = self.db.in_list("id", list(doc_ids), ids=True)
        chunk_where, chunk_args = self.db.in_list("document_id", list(doc_ids), ids=True)
        with self.base.read() as conn:
            docs = conn.execute(
                self.db.sql(f"SELECT {', '.join(EXPORT_COLUMNS)} FROM kb_documents WHERE kb_id = ? AND {where}"),
                (kb_id, *args),
            ).fetchall()
            chunks = self.storage.export_vectors(
                conn,
                f"SELECT document_id, id, chunk_index, content, token_count, metadata, "
                f"content_hash, {{vector}} FROM kb_chunks WHERE {chunk_where} "
                "ORDER BY document_id, chunk_index",
                chunk_args,
                dims,
            )
            blobs = self.storage.document_blobs(conn, [d[0] for d in docs])
        by_doc: dict[str, list[dict[str, Any]]] = {}
        for doc_id, chunk_id, index, content, tokens, meta, text_hash, vector in chunks:
            by_doc.setdefault(str(doc_id), []).append(
                {
                    "id": str(chunk_id),
                    "chunk_index": int(index),
                    "content": content,
                    "token_count": int(tokens),
                    "metadata": dict(self.db.json_out(meta) or {}),
                    "content_hash": text_hash or ChunkInput(content).content_hash,
                    "vector": vector,
                }
            )
        out = []
        for row in docs:
            doc = dict(zip(EXPORT_COLUMNS, row, strict=True))
            for key in ("created_at", "updated_at"):
                doc[key] = self.db.time_out(doc[key])
            sections = self.db.json_out(doc["extracted_sections"])
            doc["extracted_sections"] = sections if sections else None
            doc["tags"] = list(self.db.json_out(doc["tags"]) or [])
            doc["properties"] = dict(self.db.json_out(doc["properties"]) or {})
            doc["blob"] = blobs.get(doc["id"])
            doc["chunks"] = by_doc.get(doc["id"], [])
            out.append(doc)
        return out

    def import_documents(self, kb_id: str, docs: Sequence[dict[str, Any]]) -> None:
        """Write documents as :meth:`export_documents` shapes them, in one transaction."""
        if not docs:
            return
        ids = [d["id"] for d in docs]
        bad = next((i for i in ids + [c["id"] for d in docs for c in d["chunks"]] if not self.db.valid_id(i)), None)
        if bad is not None:
            raise InvalidInputError(f"ids here are UUIDs; '{bad}' is not one")
        sql = self.db.sql
        changes = VectorChanges()
        with self.base.write() as conn:
            kb = self.kbs.kb_row(conn, kb_id)
            self.base.policy.check_manage(kb)
            # one import into a KB at a time: a second export of the same KB waits for this
            # batch, then finds its documents here (and replaces them) instead of colliding
            conn.execute(sql(f"SELECT 1 FROM knowledge_bases WHERE id = ?{self.db.for_update}"), (kb_id,))
            where, args = self.db.in_list("id", ids, ids=True)
            elsewhere = conn.execute(
                sql(f"SELECT id FROM kb_documents WHERE {where} AND kb_id <> ? LIMIT 1"), (*args, kb_id)
            ).fetchone()
            if elsewhere:
                raise ConflictError(f"document {elsewhere[0]} already belongs to another knowledge base")
            # each source as this store keeps it (a team server keeps no one's local path); a
            # row coming back keeps the source it had here when the other side's means nothing here
            kept = dict(
                conn.execute(
                    sql(f"SELECT id, source_path FROM kb_documents WHERE kb_id = ? AND {where}"), (kb_id, *args)
                ).fetchall()
            )
            docs = [
                dict(d, source_path=self.storage.incoming_source(d.get("source_path")) or kept.get(d["id"]))
                for d in docs
            ]
            # one document per source path: a copy coming in replaces another row of its path
            sources = [self.db.text(d["source_path"]) for d in docs if d.get("source_path")]
            source_where, source_args = self.db.in_list("source_path", sources)
            replaced = conn.execute(
                sql(f"SELECT id FROM kb_documents WHERE {where} OR (kb_id = ? AND {source_where})"),
                (*args, kb_id, *source_args),
            ).fetchall()
            self.chunks.vectors_touch(conn, kb_id, changes)
            for (doc_id,) in replaced:
                self.documents._delete_chunks(conn, kb_id, str(doc_id), changes)
                self.db.delete(conn, "kb_documents", "id = ?", (doc_id,))
            self.db.executemany(conn, self._IMPORT_SQL, [self._import_row(kb_id, d) for d in docs])
            self.storage.store_blobs(conn, [(d["id"], d["blob"]) for d in docs if d.get("blob") is not None])
            self.storage.import_chunks(conn, kb, docs, changes)
            self.chunks.vectors_written(conn, changes)
            self.kbs.recount_stats(conn, kb_id)

    def index_vectors(self, kb_id: str) -> None:
        """Bring the KB's vector index up to date after an import (a server-side index is
        built once, at the end, rather than after every batch)."""
        changes = VectorChanges()
        changes.kbs.add(kb_id)
        self.chunks.vectors_committed(changes)

    _IMPORT_SQL = (
        "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
        "extracted_text, extracted_sections, chunk_count, status, error, uploaded_by, content_hash, source_path, "
        f"source_mtime, created_at, updated_at, version, indexed_at, indexed_hash, file_type, {FACT_COLUMNS}, "
        "folder) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)"
    )

    def _import_row(self, kb_id: str, d: dict[str, Any]) -> tuple[Any, ...]:
        db = self.db
        filename = db.text(d["filename"])
        text, sections = db.text_and_sections(d.get("extracted_text"), d.get("extracted_sections"))
        created, updated = _moment(d.get("created_at"), db), _moment(d.get("updated_at"), db)
        return (
            d["id"],
            kb_id,
            filename,
            db.text(d.get("content_type") or "application/octet-stream"),
            int(d.get("size_bytes") or 0),
            storage_key(kb_id, d["id"], filename),
            text,
            sections,
            len(d["chunks"]),
            d.get("status") or "ready",
            db.text(d.get("error")),
            self.base.local_user_id,
            d.get("content_hash"),
            db.text(d.get("source_path")),
            d.get("source_mtime"),
            created,
            updated,
            updated if d["chunks"] else None,
            d.get("content_hash") if d["chunks"] else None,
            file_type_of(filename),
            *self._incoming_facts(d),
            # where it was added from: a path on the exporting machine; a team server keeps none
            db.text(d.get("folder")) if self.db.name == "sqlite" else None,
        )

    def _incoming_facts(self, d: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
        """A copied document's title, tags, properties and own date: as exported, or (from
        an exporter that had none) from its sections."""
        if "tags" not in d:
            return facts_values(self.db, d.get("extracted_sections"))
        props = {"title": d.get("title"), "tags": d.get("tags") or [], **dict(d.get("properties") or {})}
        return facts_values(self.db, [(0, 0, props)])

    def delete_documents(self, kb_id: str, doc_ids: Sequence[str]) -> int:
        """Delete documents of a KB (an export with ``prune``), in one transaction."""
        changes = VectorChanges()
        with self.base.write() as conn:
            self.base.policy.check_manage(self.kbs.kb_row(conn, kb_id))
            where, args = self.db.in_list("id", list(doc_ids), ids=True)
            gone = conn.execute(
                self.db.sql(f"SELECT id FROM kb_documents WHERE kb_id = ? AND {where}"), (kb_id, *args)
            ).fetchall()
            self.chunks.vectors_touch(conn, kb_id, changes)
            for (doc_id,) in gone:
                self.documents._delete_chunks(conn, kb_id, str(doc_id), changes)
                self.db.delete(conn, "kb_documents", "id = ?", (doc_id,))
            self.chunks.vectors_written(conn, changes)
            self.kbs.recount_stats(conn, kb_id)
        self.chunks.vectors_committed(changes)
        return len(gone)


def _moment(value: Any, db: Any) -> Any:
    """An ISO timestamp from an export as this engine's timestamp parameter (now when absent)."""
    if not value:
        return db.now()
    try:
        return db.at(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        return db.now()


def local_incoming_source(source: str | None) -> str | None:
    """A copied document's source as a local file keeps it: a path (or an upload's name)
    as it is; another server's hidden path means nothing here (None)."""
    if source and (file_of(source) is not None or source.startswith(UPLOAD)):
        return source
    return None
