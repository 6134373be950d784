"""Documents of a knowledge base: upload (202, then poll the status), list, delete."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Depends, File, Request, UploadFile

from kbdesk.errors import NotFoundError
from kbdesk.ingest.formats import suffix_list
from kbdesk.models import Document
from kbdesk.serve.auth import WRITES, Caller, caller, is_uuid
from kbdesk.serve.errors import ApiError
from kbdesk.serve.responses import Deleted, Documents, DocumentStatus, Upload, errors
from kbdesk.serve.uploads import check_upload_name

router = APIRouter(tags=["documents"])

STATUS_FIELDS = ("id", "status", "chunk_count", "error", "filename")


def document_object(doc: Document) -> dict[str, Any]:
    """The document object: its record fields, and which version the chunks come from.
    Where the file came from (a path on the server) is not shown."""
    full = doc.to_dict()
    shown = {
        k: full[k]
        for k in (
            "id",
            "kb_id",
            "filename",
            "content_type",
            "size_bytes",
            "chunk_count",
            "status",
            "error",
            "uploaded_by",
            "created_at",
            "updated_at",
        )
    }
    shown.update(indexed_at=full["indexed_at"], stale=full["stale"])
    return shown


def _document(who: Caller, kb_id: str, doc_id: str) -> Document:
    """The document of that exact id in that KB (404 for any other)."""
    kb = who.kb(kb_id)
    missing = ApiError(404, f"no document {doc_id!r} in this knowledge base")
    if not is_uuid(doc_id):
        raise missing
    try:
        doc = who.desk.document(kb.id, doc_id)
    except NotFoundError:
        raise missing from None
    if doc.id.lower() != doc_id.lower() or doc.kb_id != kb.id:
        raise missing
    return doc


_FILE = f"The document, in a format kbdesk reads: {suffix_list()}"  # the suffixes of the table of formats


@router.post(
    "/knowledge-bases/{kb_id}/documents",
    status_code=202,
    summary="Upload a document (multipart field 'file'; needs kb.write)",
    response_model=Upload,
    responses=errors(403, 404, 412, 413, 415),
)
async def upload(
    kb_id: str,
    request: Request,
    file: UploadFile = File(description=_FILE),
    who: Caller = WRITES,
) -> dict[str, Any]:
    """A file is known by its name within the knowledge base: uploading a name again (or
    one ``kbdesk add`` added) makes a new version of that document; the same bytes
    change nothing. The answer is the document as it was accepted (``result`` says what
    happened); poll its status while it is indexed."""
    parts = (await request.form()).getlist("file")  # (parsed already, for ``file``)
    if len(parts) > 1:
        raise ApiError(400, f"send one file per upload: the multipart field 'file' came {len(parts)} times")
    name = check_upload_name(file.filename)
    return await anyio.to_thread.run_sync(_accept, who, kb_id, name, file, request.app.state.kbdesk)


def _accept(who: Caller, kb_id: str, name: str, file: UploadFile, state: Any) -> dict[str, Any]:
    """Check, stage to disk and hand over an upload (blocking: the database, the disk)."""
    kb = who.kb(kb_id)
    who.check_can_change(kb)
    if kb.model_id:
        who.desk.embedders.for_kb(kb)  # no provider for the KB's model: 412, before anything is stored
    staged = state.uploads.stage(kb, name, file.file, state.max_upload_bytes)
    doc, result = state.uploads.submit(who.lease.share(), kb, name, staged)
    shown = document_object(doc)
    if result == "queued":
        shown["status"] = "pending"  # as it was accepted (polling shows where it is now)
    return {**shown, "result": result}


@router.get(
    "/knowledge-bases/{kb_id}/documents",
    summary="The documents of a knowledge base",
    response_model=Documents,
    responses=errors(404),
)
def list_documents(kb_id: str, who: Caller = Depends(caller)) -> dict[str, Any]:
    docs = who.desk.documents(who.kb(kb_id).id)
    return {"data": [document_object(d) for d in docs], "total": len(docs)}


@router.get(
    "/knowledge-bases/{kb_id}/documents/{doc_id}/status",
    summary="Where a document's indexing is",
    response_model=DocumentStatus,
    responses=errors(404),
)
def document_status(kb_id: str, doc_id: str, who: Caller = Depends(caller)) -> dict[str, Any]:
    doc = document_object(_document(who, kb_id, doc_id))
    return {k: doc[k] for k in STATUS_FIELDS}


@router.delete(
    "/knowledge-bases/{kb_id}/documents/{doc_id}",
    summary="Delete a document, its chunks and its stored file (needs kb.write)",
    response_model=Deleted,
    responses=errors(403, 404),
)
def delete_document(kb_id: str, doc_id: str, who: Caller = WRITES) -> dict[str, Any]:
    doc = _document(who, kb_id, doc_id)
    who.check_can_change(who.kb(kb_id))
    who.desk.delete_document(doc.id)
    return {"deleted": True}
