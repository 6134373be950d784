"""Making many documents ready in a handful of statements (the store core, both engines).

:meth:`kbdesk.store.core.documents.DocumentsCore.finish_documents` hands a batch here:
the rows are read in one query, each is checked (it still exists, it is still at the
version its runner claimed, it has chunks, its vectors fit the KB), then the older
chunks of all of them go in one statement, the new chunks with their keyword rows and
vectors in one bulk write per KB (the engine's ``chunks.insert_many``), the rows turn
``ready`` in one ``executemany`` and each KB's stats move once. The whole batch runs in
a savepoint: if the database refuses any of it, the savepoint is undone and the batch
is done again one document at a time, so that a document that cannot be stored fails
alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbdesk.errors import InvalidInputError, NotFoundError, SupersededError
from kbdesk.models import ChunkInput, Document
from kbdesk.store.core.parts import StoreParts, VectorChanges
from kbdesk.store.dbapi import Connection
from kbdesk.store.doc_types import DOC_COLUMNS, FACT_SETS, facts_values

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
    store: StoreParts, conn: Connection, items: Sequence[Any], now: Any, changes: VectorChanges, read_back: bool = True
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
                kbs[doc.kb_id] = store._get_kb(conn, doc.kb_id)
                store.chunks.vectors_touch(conn, doc.kb_id, changes)
            blobs = store._vector_blobs(conn, kbs[doc.kb_id], vectors, len(chunks))
            if blobs is not None and kbs[doc.kb_id].dimensions is None:  # learnt now: not asked again
                kbs[doc.kb_id] = store._get_kb(conn, doc.kb_id)
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
            store._bump(conn, kb_id, chunks=sum(len(c) for _, _, c, _ in entries) - sum(gone.values()))
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


def rows_by_id(store: StoreParts, conn: Connection, doc_ids: list[str]) -> dict[str, Document]:
    """The rows among ``doc_ids`` that exist, by id, locked for the transaction's writes."""
    out: dict[str, Document] = {}
    db = store.db
    for start in range(0, len(doc_ids), db.list_chunk):
        where, args = db.in_list("id", doc_ids[start : start + db.list_chunk], ids=True)
        for row in conn.execute(db.sql(f"SELECT {DOC_COLUMNS} FROM kb_documents WHERE {where}{db.for_update}"), args):
            doc = store._doc(row)
            out[doc.id] = doc
    return out
