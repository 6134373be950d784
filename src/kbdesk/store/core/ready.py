"""Making many documents ready in a handful of statements (the store core, both engines).

:meth:`kbdesk.store.core.documents.Documents.finish_documents` hands a batch here:
the rows are read in one query, each is checked (it still exists, it is still at the
version its runner claimed, it has chunks, its vectors fit the KB), then the older
chunks of all of them go in one statement, the new chunks with their keyword rows and
vectors in one bulk write per KB (the engine's ``chunks.insert_many``), the rows turn
``ready`` in one ``executemany`` and each KB's stats move once. The whole batch runs in
a savepoint: if the database refuses any of it, the savepoint is undone and the batch
is done again one document at a time, so that a document that cannot be stored fails
alone. :func:`vector_blobs` checks the vectors a document brings (here, for one added
whole, and for an import).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from kbdesk.errors import InvalidInputError, NotFoundError, SupersededError
from kbdesk.models import ChunkInput, Document, KnowledgeBase
from kbdesk.store.core.parts import ChunkStorage, KbRecords, VectorChanges
from kbdesk.store.dbapi import Connection
from kbdesk.store.doc_types import DOC_COLUMNS, FACT_SETS, facts_values
from kbdesk.store.engine import Engine
from kbdesk.store.unit_vectors import normalise_rows


class DocumentRowReader(Protocol):
    """What reading rows back needs of the documents: the engine object and a row's Document."""

    @property
    def db(self) -> Engine: ...
    def _doc(self, row: Sequence[Any]) -> Document: ...


class ReadyWriter(DocumentRowReader, Protocol):
    """What making a batch ready needs of :class:`kbdesk.store.core.documents.Documents`."""

    @property
    def kbs(self) -> KbRecords: ...
    @property
    def chunks(self) -> ChunkStorage: ...
    def _vector_blobs(self, conn: Connection, kb: KnowledgeBase, vectors: Any, count: int) -> list[bytes] | None: ...


_UNFINISHED: Any = object()
READY_SQL = (
    "UPDATE kb_documents SET status = 'ready', error = NULL, error_kind = NULL, chunk_count = ?, "
    "claimed_by = NULL, indexed_at = ?, indexed_hash = content_hash, updated_at = ? WHERE id = ?"
)
READY_TEXT_SQL = (
    "UPDATE kb_documents SET status = 'ready', error = NULL, error_kind = NULL, chunk_count = ?, "
    "claimed_by = NULL, indexed_at = ?, indexed_hash = content_hash, updated_at = ?, "
    f"extracted_text = ?, extracted_sections = ?, {FACT_SETS} WHERE id = ?"
)


def finish_batch(
    store: ReadyWriter, conn: Connection, items: Sequence[Any], now: Any, changes: VectorChanges, read_back: bool = True
) -> list[Document | Exception | None]:
    """``items``: (doc_id, chunks, vectors, version, text) — text is ``(text, sections)``
    to store with the row, or None to keep what it holds. One result per item: the row
    made ready (None without ``read_back``), or the item's error."""
    results: list[Document | Exception | None] = [_UNFINISHED] * len(items)
    rows = rows_by_id(store, conn, [item[0] for item in items])
    kbs: dict[str, Any] = {}
    good: list[tuple[int, Document, list[ChunkInput], list[bytes] | None]] = []
    for n, (doc_id, chunks, vectors, version, _text) in enumerate(items):
        try:
            doc = rows.get(doc_id)
            if doc is None:
                raise NotFoundError(f"no document with id '{doc_id}'")
            if version is not None and doc.version != version:
                raise SupersededError(f"{doc.filename} was claimed for a newer version meanwhile")
            if not chunks:
                raise InvalidInputError("a ready document needs at least one chunk")
            if doc.kb_id not in kbs:
                kbs[doc.kb_id] = store.kbs.kb_row(conn, doc.kb_id)
                store.chunks.vectors_touch(conn, doc.kb_id, changes)
            blobs = store._vector_blobs(conn, kbs[doc.kb_id], vectors, len(chunks))
            if blobs is not None and kbs[doc.kb_id].dimensions is None:  # learnt now: not asked again
                kbs[doc.kb_id] = store.kbs.kb_row(conn, doc.kb_id)
            good.append((n, doc, list(chunks), blobs))
        except Exception as exc:  # noqa: BLE001 - this document alone fails
            results[n] = exc
    if good:
        by_kb: dict[str, list[tuple[int, Document, list[ChunkInput], list[bytes] | None]]] = {}
        for entry in good:
            by_kb.setdefault(entry[1].kb_id, []).append(entry)
        for kb_id, entries in by_kb.items():
            held = [doc.id for _, doc, _, _ in entries if doc.chunk_count or doc.indexed_hash is not None]
            gone = store.chunks.delete_many(conn, kb_id, held, changes) if held else {}
            store.chunks.insert_many(
                conn, kb_id, [(doc.id, chunks, blobs) for _, doc, chunks, blobs in entries], now, changes
            )
            store.kbs.bump_stats(conn, kb_id, chunks=sum(len(c) for _, _, c, _ in entries) - sum(gone.values()))
        plain = [(len(chunks), now, now, doc.id) for n, doc, chunks, _ in good if items[n][4] is None]
        with_text = [
            (
                len(chunks),
                now,
                now,
                *store.db.text_and_sections(*items[n][4]),
                *facts_values(store.db, items[n][4][1]),
                doc.id,
            )
            for n, doc, chunks, _ in good
            if items[n][4] is not None
        ]
        store.db.executemany(conn, READY_SQL, plain)
        store.db.executemany(conn, READY_TEXT_SQL, with_text)
        done = rows_by_id(store, conn, [doc.id for _, doc, _, _ in good]) if read_back else {}
        for n, doc, _, _ in good:
            results[n] = done.get(doc.id)
    return [r if r is not _UNFINISHED else RuntimeError("not finished") for r in results]


def rows_by_id(store: DocumentRowReader, conn: Connection, doc_ids: list[str]) -> dict[str, Document]:
    """The rows among ``doc_ids`` that exist, by id, locked for the transaction's writes."""
    out: dict[str, Document] = {}
    db = store.db
    for start in range(0, len(doc_ids), db.list_chunk):
        where, args = db.in_list("id", doc_ids[start : start + db.list_chunk], ids=True)
        for row in conn.execute(db.sql(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE {where}{db.for_update}"), args):
            doc = store._doc(row)
            out[doc.id] = doc
    return out


def vector_blobs(
    chunks: ChunkStorage, conn: Connection, kb: KnowledgeBase, vectors: Any, count: int
) -> list[bytes] | None:
    """Validated unit float32 vectors (bytes at the KB's dimension), or None; a KB that
    has stored no vectors yet learns its dimension (the engine's ``learn_dimensions``)."""
    if vectors is None:
        if kb.model_id:
            raise InvalidInputError(
                f"knowledge base '{kb.name}' embeds with {kb.model_id}: its documents need one vector per chunk"
            )
        return None
    if not kb.model_id:
        raise InvalidInputError(f"knowledge base '{kb.name}' has no embedding model; it cannot store vectors")
    if len(vectors) != count:
        raise InvalidInputError(f"got {len(vectors)} vectors for {count} chunks")
    dims = kb.dimensions
    blobs: list[bytes | None] = [None] * count
    todo: list[int] = []
    for i, vector in enumerate(vectors):
        if isinstance(vector, bytes):  # already unit float32 (from the cache)
            if dims is not None and len(vector) != dims * 4:
                raise InvalidInputError(f"vector {i} has {len(vector) // 4} dimensions, expected {dims}")
            dims = dims or len(vector) // 4
            blobs[i] = vector
        else:
            todo.append(i)
    if todo:
        for i, unit in zip(todo, normalise_rows([vectors[i] for i in todo], dims, first=todo[0]), strict=True):
            blobs[i] = unit.tobytes()
    out = [b for b in blobs if b is not None]
    chunks.learn_dimensions(conn, kb, len(out[0]) // 4)
    return out
