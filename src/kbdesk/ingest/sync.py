"""A ``--sync`` run's removals: documents whose file is gone (or now ignored) from a
folder the run scanned; and the file behind a document, as a scan would find it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kbdesk.desk_api import DeskApi
from kbdesk.ingest.events import EventSink, IngestEvent
from kbdesk.ingest.folders import FoundFile
from kbdesk.ingest.names import HIDDEN, file_of, under
from kbdesk.ingest.report import IngestReport
from kbdesk.models import Document, KnowledgeBase
from kbdesk.store.claims import claim_alive
from kbdesk.store.doc_types import IN_FLIGHT


def remove_gone(
    desk: DeskApi,
    kb: KnowledgeBase,
    roots: list[Path],
    present: set[str],
    unfiltered: Callable[[], set[str]],
    report: IngestReport,
    on_event: EventSink,
    ignored_now: Callable[[Path], bool] | None = None,
) -> None:
    """Remove documents whose file under a scanned folder no longer exists, or is now
    named by an ignore file there (``ignored_now``); uploads are under no folder; a
    hidden path is under a folder when the folder's is its prefix."""
    folders = [desk.store.source_key(root) for root in roots]
    everything: set[str] | None = None
    for source, doc in desk.store.documents_by_source(kb.id).items():
        if source in present:
            continue
        path = file_of(source)
        if path is not None:
            if not any(root == path or root in path.parents for root in roots):
                continue
            if path.is_file() and not (ignored_now is not None and ignored_now(path)):
                continue  # still there, merely filtered out by this run's globs
        elif source.startswith(HIDDEN) and any(under(source, folder) for folder in folders):
            everything = unfiltered() if everything is None else everything
            if source in everything:
                continue  # still there, merely filtered out by this run's globs
        else:
            continue
        if doc.status in IN_FLIGHT and claim_alive(doc.claimed_by, doc.updated_at):
            continue  # another run is indexing it right now
        desk.delete_document(doc.id)
        report.removed.append(doc.filename)
        on_event(IngestEvent("removed", doc.filename, doc.id))


def found_file(doc: Document) -> FoundFile | None:
    """The file behind a document, as a scan would find it (None when it is gone, or its
    source names no file here)."""
    path = file_of(doc.source_path)
    if path is None or doc.source_path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return FoundFile(path, doc.filename, st.st_size, st.st_mtime, source=doc.source_path, root=doc.folder)
