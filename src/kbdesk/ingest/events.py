"""Progress of ingestion, as small events for the CLI's progress bars and the TUI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class IngestEvent:
    """One step of one document.

    kind: ``queued`` (a document will be processed), ``status`` (it moved to
    ``status``), ``embedded`` (``done`` of ``total`` chunks have vectors), ``ready``,
    ``error`` (``detail`` says why), ``unchanged`` (already stored as is), ``skipped``
    (not a document: ``detail`` says why), ``removed`` (its file is gone, --sync),
    ``known-failure`` (it failed before for a reason of its own and has not changed:
    not tried again), ``waiting`` (``total`` documents are being indexed by another
    kbdesk run, named in ``detail``; this run waits for them), ``busy`` (another
    kbdesk run holds this file's document now: ``detail`` says which; no ``doc_id``).
    """

    kind: str
    filename: str
    doc_id: str | None = None
    status: str | None = None
    detail: str | None = None
    done: int = 0
    total: int = 0
    size: int = 0  # bytes of the file (on ``queued``)


EventSink = Callable[[IngestEvent], None]


def ignore(_event: IngestEvent) -> None:
    return None
