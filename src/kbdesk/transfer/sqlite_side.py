"""The SQLite end of a transfer: reads by SQL, writes through the store's own methods.

Writing goes through :meth:`SqliteStore.add_document` (so the keyword index, the vector
index and the KB's stats stay in step exactly as for any other document), inside one
``store.write()`` per batch, followed by a few UPDATEs in the same transaction that
put back what ``add_document`` does not take: the chunk ids, the source's text hashes,
the extracted sections, times. Vectors arrive as unit float32 bytes and are stored as
they are, so a round trip keeps them bit for bit.
"""

from __future__ import annotations

import json
from typing import Any

from kbdesk.errors import NotFoundError
from kbdesk.models import ChunkInput, KnowledgeBase
from kbdesk.store.doc_types import storage_key
from kbdesk.transfer.sides import _known_config, read_file, write_file


def _marks(values: list[Any]) -> str:
    return ",".join("?" * len(values))


class SqliteSide:
    kind = "sqlite"

    def __init__(self, desk: Any) -> None:
        self.desk = desk
        self.store = desk.store
        self.label = str(desk.db_path)

    def find_kb(self, ref: str) -> KnowledgeBase:
        return self.store.find_kb(ref)

    def kb_by_id(self, kb_id: str) -> KnowledgeBase | None:
        try:
            return self.store.get_kb(kb_id)
        except NotFoundError:
            return None

    def kb_by_name(self, name: str) -> KnowledgeBase | None:
        try:
            kb = self.store.find_kb(name)
        except NotFoundError:
            return None
        return kb if kb.name.lower() == name.lower() else None

    def create_kb(self, like: KnowledgeBase, scope: str, team_id: str | None) -> KnowledgeBase:
        return self.store.create_kb(like.name, like.description, embedding_config=_known_config(like),
                                    scope=scope, team_id=team_id, discoverable=like.discoverable, kb_id=like.id)

    def set_status(self, kb_id: str, status: str) -> None:
        with self.store.write() as conn:
            conn.execute("UPDATE knowledge_bases SET status = ? WHERE id = ? AND status <> ?", (status, kb_id, status))

    def summaries(self, kb_id: str) -> dict[str, dict[str, Any]]:
        with self.store.read() as conn:
            docs = conn.execute("SELECT id, status, filename, content_hash, size_bytes, created_at FROM kb_documents "
                                "WHERE kb_id = ?", (kb_id,)).fetchall()
            chunks = conn.execute(
                "SELECT document_id, chunk_index, content_hash, CASE WHEN content_hash IS NULL THEN content END, "
                "embedding IS NOT NULL, seq FROM kb_chunks WHERE kb_id = ? ORDER BY document_id, chunk_index",
                (kb_id,)).fetchall()
        out = {d[0]: {"status": d[1], "filename": d[2], "content_hash": d[3], "size_bytes": int(d[4]),
                      "created_at": d[5], "order": None, "chunks": []} for d in docs}
        for doc_id, index, text_hash, content, has_vector, seq in chunks:
            if doc_id in out:
                text_hash = text_hash or ChunkInput(content).content_hash
                out[doc_id]["chunks"].append((int(index), text_hash, bool(has_vector)))
                out[doc_id]["order"] = min(seq, out[doc_id]["order"] or seq)
        return out

    def read(self, kb: KnowledgeBase, doc_ids: list[str]) -> list[dict[str, Any]]:
        with self.store.read() as conn:
            docs = conn.execute(
                "SELECT id, filename, content_type, size_bytes, extracted_text, extracted_sections, status, error, "
                "content_hash, source_path, source_mtime, created_at, updated_at, storage_key FROM kb_documents "
                f"WHERE kb_id = ? AND id IN ({_marks(doc_ids)})", (kb.id, *doc_ids)).fetchall()
            chunks = conn.execute(
                "SELECT document_id, id, chunk_index, content, token_count, metadata, content_hash, embedding "
                f"FROM kb_chunks WHERE document_id IN ({_marks(doc_ids)}) ORDER BY document_id, chunk_index",
                doc_ids).fetchall()
        by_doc: dict[str, list[dict[str, Any]]] = {}
        for doc_id, chunk_id, index, content, tokens, meta, text_hash, vector in chunks:
            by_doc.setdefault(doc_id, []).append({
                "id": chunk_id, "chunk_index": int(index), "content": content, "token_count": int(tokens),
                "metadata": json.loads(meta), "content_hash": text_hash or ChunkInput(content).content_hash,
                "vector": bytes(vector) if vector is not None else None})
        keys = ("id", "filename", "content_type", "size_bytes", "extracted_text", "extracted_sections", "status",
                "error", "content_hash", "source_path", "source_mtime", "created_at", "updated_at", "storage_key")
        out = []
        for row in docs:
            doc = dict(zip(keys, row))
            doc["extracted_sections"] = json.loads(doc["extracted_sections"]) if doc["extracted_sections"] else None
            doc["blob"] = read_file(self.desk.files_dir, doc["storage_key"])
            doc["chunks"] = by_doc.get(doc["id"], [])
            out.append(doc)
        return out

    def write(self, kb: KnowledgeBase, docs: list[dict[str, Any]]) -> None:
        for doc in docs:  # bytes first: a kill before the rows leaves a file a later sweep removes
            if doc.get("blob") is not None:
                write_file(self.desk.files_dir, storage_key(kb.id, doc["id"], doc["filename"]), doc["blob"])
        store = self.store
        with store.write() as conn:
            present = {r[0] for r in conn.execute(f"SELECT id FROM kb_documents WHERE id IN ({_marks(docs)})",
                                                  [d["id"] for d in docs])}
            # one document per source path: a copy coming in replaces another row of its path
            sources = [d["source_path"] for d in docs if d.get("source_path")]
            ids = {d["id"] for d in docs}
            if sources:
                rows = conn.execute(f"SELECT id FROM kb_documents WHERE kb_id = ? AND source_path IN "
                                    f"({','.join('?' * len(sources))})", [kb.id, *sources]).fetchall()
                for (other,) in rows:
                    if other not in ids:
                        store.delete_document(other)
            for doc in docs:
                if doc["id"] in present:
                    store.delete_document(doc["id"])  # joins this transaction
                chunks = doc["chunks"]
                vectors = [c["vector"] for c in chunks] if kb.model_id else None
                store.add_document(kb.id, doc["filename"],
                                   [ChunkInput(c["content"], c["token_count"], c["metadata"]) for c in chunks],
                                   vectors=vectors, content_type=doc["content_type"], size_bytes=doc["size_bytes"],
                                   extracted_text=doc["extracted_text"] or "", content_hash=doc["content_hash"],
                                   source_path=doc["source_path"], doc_id=doc["id"])
                sections = doc.get("extracted_sections")
                conn.execute("UPDATE kb_documents SET extracted_text = ?, extracted_sections = ?, source_mtime = ?, "
                             "created_at = coalesce(?, created_at), updated_at = coalesce(?, updated_at) WHERE id = ?",
                             (doc["extracted_text"], json.dumps(sections) if sections is not None else None,
                              doc["source_mtime"], doc["created_at"], doc["updated_at"], doc["id"]))
                conn.executemany("UPDATE kb_chunks SET id = ?, content_hash = ? WHERE document_id = ? "
                                 "AND chunk_index = ?",
                                 [(c["id"], c["content_hash"], doc["id"], c["chunk_index"]) for c in chunks])

    def delete(self, kb: KnowledgeBase, doc_ids: list[str]) -> int:
        with self.store.write():
            docs = [self.store.delete_document(doc_id) for doc_id in doc_ids]
        for doc in docs:
            try:
                (self.desk.files_dir / doc.storage_key).unlink()
            except OSError:
                pass
        return len(docs)

    def finish(self, kb: KnowledgeBase) -> KnowledgeBase:
        conn = self.store.connection()
        docs, size = conn.execute("SELECT count(*), coalesce(sum(size_bytes), 0) FROM kb_documents WHERE kb_id = ?",
                                  (kb.id,)).fetchone()
        chunks = conn.execute("SELECT count(*) FROM kb_chunks WHERE kb_id = ?", (kb.id,)).fetchone()[0]
        now = self.store.get_kb(kb.id)
        if (now.document_count, now.chunk_count, now.total_bytes) != (docs, chunks, size):
            self.store.recount(kb.id)
        self.set_status(kb.id, "active")
        return self.store.get_kb(kb.id)
