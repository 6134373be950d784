"""Copy one knowledge base from one store to another: in batches, idempotently.

1. The KB is found on the source; on the target it is matched by id (then by name).
   A target KB with another embedding model (or dimension) is refused — vectors of two
   models are never mixed — and so is a different KB of the same name.
2. Each side summarises its documents (status, name, bytes hash, each chunk's text
   hash and whether it has a vector). Ready source documents whose summary differs
   from the target's are copied; the others are counted unchanged. Running the same
   transfer again therefore copies nothing and changes nothing.
3. Documents go in batches (bounded by documents, chunks and bytes), each batch read in
   one snapshot and written in one transaction, so an interrupted run (dropped
   connection, killed process) leaves whole batches behind and the next run finishes
   it. The target KB says ``processing`` until a run completes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kbdesk.errors import ConflictError, InvalidInputError, StoreError
from kbdesk.models import KnowledgeBase
from kbdesk.transfer.report import TransferEvent, TransferReport, TransferSink, fingerprint, ignore
from kbdesk.transfer.sides import Side, side_for

if TYPE_CHECKING:
    from kbdesk.desk import Desk

BATCH_DOCS = 200
BATCH_CHUNKS = 5000
BATCH_BYTES = 64 * 1024 * 1024


class ModelMismatchError(ConflictError):
    """The target's KB embeds with another model or dimension: refused, never mixed."""


def _model(kb: KnowledgeBase) -> str:
    if not kb.model_id:
        return "no embedding model (keyword search only)"
    return kb.model_id + (f" ({kb.dimensions} dimensions)" if kb.dimensions else "")


def check_same_model(src: KnowledgeBase, dst: KnowledgeBase, target: str) -> None:
    same = (src.model_id or None) == (dst.model_id or None) and not (
        src.dimensions and dst.dimensions and src.dimensions != dst.dimensions
    )
    if not same:
        raise ModelMismatchError(
            f"'{dst.name}' on {target} embeds with {_model(dst)}, but '{src.name}' embeds with {_model(src)}: "
            "refusing to mix vectors of two models; re-embed one of them first (kbdesk kb set-model)"
        )


def transfer(
    source: Any,
    target: Any,
    kb_ref: str,
    *,
    scope: str | None = None,
    team_id: str | None = None,
    prune: bool = False,
    batch_docs: int = BATCH_DOCS,
    batch_chunks: int = BATCH_CHUNKS,
    on_event: TransferSink | None = None,
    audit: str | None = None,
) -> TransferReport:
    """Copy KB ``kb_ref`` from desk ``source`` to desk ``target``; see the module doc.

    ``scope``/``team_id`` apply when the target KB is created (default: personal).
    ``prune`` removes target documents the source does not have. ``audit`` ("source"
    or "target") names the desk whose audit log records the run when it changed
    anything.
    """
    on_event = on_event or ignore
    if batch_docs < 1 or batch_chunks < 1:
        raise InvalidInputError("batch sizes must be at least 1")
    src, dst = side_for(source), side_for(target)
    started = time.monotonic()
    kb = src.find_kb(kb_ref)
    report = TransferReport(kb.name, kb.id, src.label, dst.label)
    target_kb = _target_kb(src, dst, kb, scope, team_id, report)

    theirs = src.summaries(kb.id)
    ours = dst.summaries(target_kb.id)
    todo, chunks_total = [], 0
    # in the source's chunk order, so the copy's ties (keyword ranks, equal scores) break alike
    for doc_id, summary in sorted(
        theirs.items(),
        key=lambda item: (item[1]["order"] is None, item[1]["order"] or 0, str(item[1]["created_at"]), item[0]),
    ):
        reason = _skip_reason(kb, summary)
        if reason:
            report.skipped.append({"document": summary["filename"], "reason": reason})
        elif doc_id in ours and fingerprint(ours[doc_id]) == fingerprint(summary):
            report.unchanged_documents += 1
        else:
            todo.append((doc_id, summary))
            chunks_total += len(summary["chunks"])
    extra = [doc_id for doc_id in ours if doc_id not in theirs]
    report.extra_on_target = len(extra)
    on_event(TransferEvent("plan", kb.name, 0, len(todo), 0, chunks_total))

    if todo or (prune and extra):
        dst.set_status(target_kb.id, "processing")
    for batch in _batches(todo, batch_docs, batch_chunks):
        docs = src.read(kb, [doc_id for doc_id, _ in batch])
        dst.write(target_kb, docs)
        report.batches += 1
        report.copied_documents += len(docs)
        report.copied_chunks += sum(len(d["chunks"]) for d in docs)
        report.copied_files += sum(1 for d in docs if d.get("blob") is not None)
        on_event(
            TransferEvent("batch", kb.name, report.copied_documents, len(todo), report.copied_chunks, chunks_total)
        )
    if prune and extra:
        report.pruned_documents = dst.delete(target_kb, extra)
    dst.finish(target_kb)
    report.seconds = round(time.monotonic() - started, 3)
    if audit and report.changed:
        _audit(source if audit == "source" else target, kb, report, audit)
    on_event(
        TransferEvent(
            "done", kb.name, report.copied_documents, len(todo), report.copied_chunks, chunks_total, report.summary()
        )
    )
    return report


def _target_kb(
    src: Side, dst: Side, kb: KnowledgeBase, scope: str | None, team_id: str | None, report: TransferReport
) -> KnowledgeBase:
    found = dst.kb_by_id(kb.id)
    if found is None:
        named = dst.kb_by_name(kb.name)
        if named is not None and named.id == kb.id:
            found = named  # another export of this KB made it between the two looks
    if found is None:
        if named is not None:
            check_same_model(kb, named, dst.label)
            raise ConflictError(
                f"{dst.label} already has a different knowledge base named '{kb.name}' "
                f"(id {named.id}); rename one of them first"
            )
        try:
            made = dst.create_kb(kb, scope or "personal", team_id)
        except (ConflictError, StoreError):
            joined = dst.kb_by_id(kb.id)  # another export of this KB made it a moment ago: join it
            if joined is None:
                raise
            check_same_model(kb, joined, dst.label)
            return joined
        report.kb_created = True
        return made
    check_same_model(kb, found, dst.label)
    if scope and scope != found.scope:
        raise ConflictError(
            f"'{found.name}' already exists on {dst.label} with scope {found.scope}; "
            "its scope is not changed by an export"
        )
    changes: dict[str, Any] = {}
    if found.description != kb.description:
        changes["description"] = kb.description
    if (found.chunk_size, found.chunk_overlap) != (kb.chunk_size, kb.chunk_overlap):
        changes.update(chunk_size=kb.chunk_size, chunk_overlap=kb.chunk_overlap)
    if changes:
        dst.desk.store.update_kb(found.id, **changes)
        report.kb_updated = sorted({"chunking" if k.startswith("chunk") else k for k in changes})
    return found


def _skip_reason(kb: KnowledgeBase, summary: dict[str, Any]) -> str | None:
    if summary["status"] != "ready":
        return f"not ready (status {summary['status']})"
    if not summary["chunks"]:
        return "has no chunks"
    if kb.model_id and not all(has for _, _, has in summary["chunks"]):
        return "some chunks have no vector"
    return None


def _batches(todo: list[tuple[str, dict[str, Any]]], max_docs: int, max_chunks: int) -> list[list[Any]]:
    out: list[list[Any]] = []
    current: list[Any] = []
    chunks = size = 0
    for item in todo:
        n, b = len(item[1]["chunks"]), int(item[1].get("size_bytes") or 0)
        if current and (len(current) >= max_docs or chunks + n > max_chunks or size + b > BATCH_BYTES):
            out.append(current)
            current, chunks, size = [], 0, 0
        current.append(item)
        chunks += n
        size += b
    if current:
        out.append(current)
    return out


def _audit(desk: Desk, kb: KnowledgeBase, report: TransferReport, side: str) -> None:
    action = "kb.export" if side == "source" else "kb.import"
    other = report.target if side == "source" else report.source
    details = {
        ("to" if side == "source" else "from"): other,
        "documents": report.copied_documents,
        "chunks": report.copied_chunks,
        "files": report.copied_files,
        "pruned": report.pruned_documents,
        "created": report.kb_created,
    }
    with desk.store.write() as conn:
        desk.store.audit(conn, action, kb.id, kb.name, details)
