"""Live progress for ingestion in the terminal (rich), fed by pipeline events.

:class:`IngestProgress` also keeps a ledger of what each document came to, so that a
run cut short by Ctrl-C can still say what finished and what the next run picks up.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kbdesk.ingest.events import IngestEvent
from kbdesk.textsafe import inert_line


@dataclass
class Ledger:
    """What the events of one run said about each document (by id, names kept in order)."""

    names: dict[str, str] = field(default_factory=dict)  # doc id -> filename, every document seen in flight
    finished: dict[str, str] = field(default_factory=dict)  # doc id -> filename, made ready by this run
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # doc id -> (filename, reason)
    unchanged: int = 0

    @property
    def left(self) -> list[str]:
        """Documents this run took up but did not finish: the next run picks them up."""
        return [
            name for doc_id, name in self.names.items() if doc_id not in self.finished and doc_id not in self.failed
        ]


class IngestProgress:
    """Two bars (documents, chunks embedded) and a line per failure, on stderr."""

    def __init__(self, enabled: bool = True) -> None:
        self.console = Console(file=sys.stderr, highlight=False)
        self.enabled = enabled
        self.ledger = Ledger()
        self._lock = threading.Lock()
        self._chunks: dict[str, tuple[int, int]] = {}
        self._stopped = False
        self.progress = Progress(
            TextColumn("{task.description:<16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}", style="dim"),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
            disable=not enabled,
        )
        self.docs = self.progress.add_task("documents", total=0, note="")
        self.embed = self.progress.add_task("chunks embedded", total=0, note="", visible=False)

    def __enter__(self) -> IngestProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """End the live display (idempotent); events are still recorded in the ledger."""
        with self._lock:
            if not self._stopped:
                self._stopped = True
                self.progress.stop()

    def counts(self) -> tuple[int, int]:
        """(documents made ready, documents taken up and not finished) so far."""
        with self._lock:
            return len(self.ledger.finished), len(self.ledger.left)

    def __call__(self, event: IngestEvent) -> None:
        with self._lock:
            self._record(event)
            if not self._stopped:
                self._show(event)
            if event.kind == "waiting" and not self.enabled:  # said even without bars: which run does the work
                print(inert_line(event.detail), file=sys.stderr, flush=True)

    def _record(self, event: IngestEvent) -> None:
        ledger = self.ledger
        if event.kind == "unchanged":
            ledger.unchanged += 1
        if not event.doc_id:
            return
        if event.kind in ("queued", "status") and event.status != "error":
            ledger.names.setdefault(event.doc_id, event.filename)
        elif event.kind == "ready":
            ledger.names.setdefault(event.doc_id, event.filename)
            ledger.finished[event.doc_id] = event.filename
        elif event.kind == "error":
            ledger.names.setdefault(event.doc_id, event.filename)
            ledger.failed[event.doc_id] = (event.filename, event.detail or "failed")

    def _show(self, event: IngestEvent) -> None:
        if event.kind == "queued":
            self.progress.update(self.docs, total=(self.progress.tasks[self.docs].total or 0) + 1)
            if event.status == "error":
                self.progress.advance(self.docs)
        elif event.kind == "status":
            self.progress.update(self.docs, note=f"{event.status} {_safe(event.filename)}")
        elif event.kind == "waiting":
            self.progress.update(self.docs, note=_safe(event.detail))
            if self.enabled:
                self.progress.console.print(_safe(event.detail))
        elif event.kind == "embedded" and event.doc_id:
            self._chunks[event.doc_id] = (event.done, event.total)
            done = sum(d for d, _ in self._chunks.values())
            total = sum(t for _, t in self._chunks.values())
            self.progress.update(self.embed, completed=done, total=total, visible=True)
        elif event.kind in ("ready", "error") and event.doc_id:
            if event.kind == "error" and self.enabled:
                self.progress.console.print(f"[red]failed[/] {_safe(event.filename)}: {_safe(event.detail)}")
            self.progress.advance(self.docs)
            self.progress.update(self.docs, note="")


def _safe(text: Any) -> str:
    """Document-derived text for rich markup: control characters escaped, no markup."""
    return escape(inert_line(text))
