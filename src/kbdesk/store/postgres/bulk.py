"""Whole documents in and out of the Postgres store, for export and import.

:meth:`BulkMixin.import_documents` writes a batch of documents — rows, chunks with
their vectors, original bytes — in ONE transaction, replacing a document already
present under the same id whole, so running the same batch twice leaves the same
rows. Chunks go in by binary COPY: straight into ``kb_chunks`` when none of their ids
exists (the usual case), else into a staging table and from there with ``INSERT …
ON CONFLICT (id) DO UPDATE``. Ids are kept, so a KB moved back and forth keeps its
identity.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from kbdesk.errors import ConflictError, InvalidInputError
from kbdesk.store.doc_types import storage_key
from kbdesk.store.postgres.access import check_manage, is_uuid
from kbdesk.store.postgres.chunks import copy_chunks
from kbdesk.store.postgres.values import as_unit_bytes, clean_json, clean_text, clean_text_and_sections, iso, pad, \
    parse_iso

STAGE = "kbdesk_chunk_stage"


def _jsonb(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return None if value is None else Jsonb(clean_json(value))


class BulkMixin:
    """Needs ``write()``, ``read()``, ``connection()``, ``identity``, ``_get_kb`` and ``_recount``."""

    def document_summaries(self, kb_id: str) -> dict[str, dict[str, Any]]:
        """Every document of a KB with what decides whether two copies are the same:
        status, filename, content hash, size and each chunk's (index, text hash, has vector);
        ``order`` (its first chunk's seq) lets a copy keep the order of the chunks."""
        with self.read() as conn:
            docs = conn.execute("SELECT id, status, filename, content_hash, size_bytes, created_at FROM kb_documents "
                                "WHERE kb_id = %s", (kb_id,)).fetchall()
            chunks = conn.execute(
                "SELECT document_id, chunk_index, coalesce(content_hash, "
                "left(encode(sha256(convert_to(content, 'UTF8')), 'hex'), 32)), embedding IS NOT NULL, seq "
                "FROM kb_chunks WHERE kb_id = %s ORDER BY document_id, chunk_index", (kb_id,)).fetchall()
        out = {d[0]: {"status": d[1], "filename": d[2], "content_hash": d[3], "size_bytes": int(d[4]),
                      "created_at": iso(d[5]), "order": None, "chunks": []} for d in docs}
        for doc_id, index, text_hash, has_vector, seq in chunks:
            if doc_id in out:
                out[doc_id]["chunks"].append((int(index), text_hash, bool(has_vector)))
                out[doc_id]["order"] = min(seq, out[doc_id]["order"] or seq)
        return out

    def export_documents(self, kb_id: str, doc_ids: Sequence[str], dims: int | None) -> list[dict[str, Any]]:
        """Documents with their text, sections, chunks, vectors (unit float32 bytes at
        ``dims``) and original bytes when the server holds them."""
        ids = list(doc_ids)
        with self.read() as conn:
            docs = conn.execute(
                "SELECT d.id, d.filename, d.content_type, d.size_bytes, d.extracted_text, d.extracted_sections, "
                "d.status, d.error, d.content_hash, d.source_path, d.source_mtime, d.created_at, d.updated_at, "
                "d.storage_key, b.data FROM kb_documents d LEFT JOIN kbdesk_document_blobs b ON b.document_id = d.id "
                "WHERE d.kb_id = %s AND d.id = ANY(%s::uuid[])", (kb_id, ids)).fetchall()
            vector = f"subvector(embedding, 1, {int(dims)})" if dims else "NULL::vector"
            chunks = conn.execute(
                f"SELECT document_id, id, chunk_index, content, token_count, metadata, content_hash, {vector} "
                "FROM kb_chunks WHERE document_id = ANY(%s::uuid[]) ORDER BY document_id, chunk_index",
                (ids,), binary=True).fetchall()
        by_doc: dict[str, list[dict[str, Any]]] = {}
        for doc_id, chunk_id, index, content, tokens, meta, text_hash, vec in chunks:
            by_doc.setdefault(str(doc_id), []).append({
                "id": str(chunk_id), "chunk_index": int(index), "content": content, "token_count": int(tokens),
                "metadata": dict(meta or {}), "content_hash": text_hash,
                "vector": None if vec is None else as_unit_bytes(vec, int(dims or 0))})
        keys = ("id", "filename", "content_type", "size_bytes", "extracted_text", "extracted_sections", "status",
                "error", "content_hash", "source_path", "source_mtime", "created_at", "updated_at", "storage_key")
        out = []
        for row in docs:
            doc = dict(zip(keys, row[:-1]))
            doc["created_at"], doc["updated_at"] = iso(doc["created_at"]), iso(doc["updated_at"])
            doc["blob"] = bytes(row[-1]) if row[-1] is not None else None
            doc["chunks"] = by_doc.get(doc["id"], [])
            out.append(doc)
        return out

    def import_documents(self, kb_id: str, docs: Sequence[dict[str, Any]]) -> None:
        """Write documents as :meth:`export_documents` shapes them, in one transaction."""
        if not docs:
            return
        ids = [d["id"] for d in docs]
        bad = next((i for i in ids + [c["id"] for d in docs for c in d["chunks"]] if not is_uuid(i)), None)
        if bad is not None:
            raise InvalidInputError(f"Postgres keeps the seed's UUID ids; '{bad}' is not one")
        with self.write() as conn:
            kb = self._get_kb(conn, kb_id)
            check_manage(self.identity, kb)
            elsewhere = conn.execute("SELECT id FROM kb_documents WHERE id = ANY(%s::uuid[]) AND kb_id <> %s LIMIT 1",
                                     (ids, kb_id)).fetchone()
            if elsewhere:
                raise ConflictError(f"document {elsewhere[0]} already belongs to another knowledge base")
            conn.execute("DELETE FROM kb_documents WHERE id = ANY(%s::uuid[])", (ids,))
            # one document per source path: a copy coming in replaces another row of its path
            sources = [clean_text(d["source_path"]) for d in docs if d.get("source_path")]
            if sources:
                conn.execute("DELETE FROM kb_documents WHERE kb_id = %s AND source_path = ANY(%s)", (kb_id, sources))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO kb_documents(id, kb_id, filename, content_type, size_bytes, storage_key, "
                    "extracted_text, extracted_sections, chunk_count, status, error, uploaded_by, content_hash, "
                    "source_path, source_mtime, created_at, updated_at, version, indexed_at, indexed_hash) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, coalesce(%s, now()), "
                    "coalesce(%s, now()), 1, CASE WHEN %s THEN coalesce(%s, now()) END, %s)",
                    [self._doc_row(kb_id, d) for d in docs])
                blobs = [(d["id"], d["blob"]) for d in docs if d.get("blob") is not None]
                if blobs:
                    cur.executemany("INSERT INTO kbdesk_document_blobs(document_id, data) VALUES (%s, %s) "
                                    "ON CONFLICT (document_id) DO UPDATE SET data = excluded.data", blobs)
            self._stage_chunks(conn, kb_id, kb.dimensions, docs)
            self._recount(conn, kb_id)

    def _doc_row(self, kb_id: str, d: dict[str, Any]) -> tuple[Any, ...]:
        filename = clean_text(d["filename"])
        text, sections = clean_text_and_sections(d.get("extracted_text"), d.get("extracted_sections"))
        return (d["id"], kb_id, filename, clean_text(d.get("content_type") or "application/octet-stream"),
                int(d.get("size_bytes") or 0), storage_key(kb_id, d["id"], filename), text, _jsonb(sections),
                len(d["chunks"]), d.get("status") or "ready", clean_text(d.get("error")), self.local_user_id,
                d.get("content_hash"), clean_text(d.get("source_path")), d.get("source_mtime"),
                parse_iso(d.get("created_at")), parse_iso(d.get("updated_at")), bool(d["chunks"]),
                parse_iso(d.get("updated_at")), d.get("content_hash") if d["chunks"] else None)

    def _stage_chunks(self, conn: Any, kb_id: str, dims: int | None, docs: Sequence[dict[str, Any]]) -> None:
        """Chunks in by binary COPY: straight into ``kb_chunks`` when none of their ids
        exists (the usual case: the batch's documents were just removed), otherwise
        through a staging table and ``INSERT … ON CONFLICT (id) DO UPDATE``."""
        rows = list(self._chunk_rows(kb_id, dims, docs))
        ids = [r[0] for r in rows]
        if not conn.execute("SELECT 1 FROM kb_chunks WHERE id = ANY(%s) LIMIT 1", (ids,)).fetchone():
            copy_chunks(conn, rows)
            return
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {STAGE} (id uuid, kb_id uuid, document_id uuid, "
                     "chunk_index int, content text, token_count int, embedding vector, metadata jsonb, "
                     "content_hash text) ON COMMIT DELETE ROWS")
        copy_chunks(conn, rows, table=STAGE)
        conn.execute(f"INSERT INTO kb_chunks (id, kb_id, document_id, chunk_index, content, token_count, embedding, "
                     f"metadata, content_hash) SELECT id, kb_id, document_id, chunk_index, content, token_count, "
                     f"embedding, metadata, content_hash FROM {STAGE} ORDER BY ctid ON CONFLICT (id) DO UPDATE SET "
                     "kb_id = excluded.kb_id, document_id = excluded.document_id, chunk_index = excluded.chunk_index, "
                     "content = excluded.content, token_count = excluded.token_count, embedding = excluded.embedding, "
                     "metadata = excluded.metadata, content_hash = excluded.content_hash")
        conn.execute(f"DELETE FROM {STAGE}")

    @staticmethod
    def _chunk_rows(kb_id: str, dims: int | None, docs: Sequence[dict[str, Any]]) -> Any:
        from psycopg.types.json import Jsonb

        kb_uuid = uuid.UUID(kb_id)
        for d in docs:
            doc_uuid = uuid.UUID(d["id"])
            for c in d["chunks"]:
                vec = c.get("vector")
                if vec is not None:
                    unit = np.frombuffer(vec, dtype=np.float32)
                    if dims and unit.size != dims:
                        raise InvalidInputError(f"a vector of {d['filename']} has {unit.size} dimensions, "
                                                f"the knowledge base {dims}")
                    vec = pad(unit)
                yield (uuid.UUID(c["id"]), kb_uuid, doc_uuid, int(c["chunk_index"]), clean_text(c["content"]),
                       int(c.get("token_count") or 0), vec, Jsonb(clean_json(c.get("metadata") or {})),
                       c.get("content_hash"))

    def delete_documents(self, kb_id: str, doc_ids: Sequence[str]) -> int:
        """Delete documents of a KB (an export with ``prune``), in one transaction."""
        with self.write() as conn:
            check_manage(self.identity, self._get_kb(conn, kb_id))
            gone = conn.execute("DELETE FROM kb_documents WHERE kb_id = %s AND id = ANY(%s::uuid[])",
                                (kb_id, list(doc_ids))).rowcount
            self._recount(conn, kb_id)
            return gone

    def document_blob(self, doc_id: str) -> bytes | None:
        row = self.connection().execute("SELECT data FROM kbdesk_document_blobs WHERE document_id = %s",
                                        (doc_id,)).fetchone()
        return bytes(row[0]) if row else None
