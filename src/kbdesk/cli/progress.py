"""Live progress for ingestion in the terminal (rich), fed by pipeline events."""

from __future__ import annotations

import sys
import threading
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kbdesk.ingest.events import IngestEvent


class IngestProgress:
    """Two bars (documents, chunks embedded) and a line per failure, on stderr."""

    def __init__(self, enabled: bool = True) -> None:
        self.console = Console(file=sys.stderr, highlight=False)
        self.enabled = enabled
        self._lock = threading.Lock()
        self._chunks: dict[str, tuple[int, int]] = {}
        self.progress = Progress(TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[note]}", style="dim"), TimeElapsedColumn(),
                                 console=self.console, transient=False, disable=not enabled)
        self.docs = self.progress.add_task("documents", total=0, note="")
        self.embed = self.progress.add_task("chunks embedded", total=0, note="", visible=False)

    def __enter__(self) -> IngestProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def __call__(self, event: IngestEvent) -> None:
        with self._lock:
            if event.kind == "queued":
                self.progress.update(self.docs, total=(self.progress.tasks[self.docs].total or 0) + 1)
                if event.status == "error":
                    self.progress.advance(self.docs)
            elif event.kind == "status":
                self.progress.update(self.docs, note=f"{event.status} {event.filename}")
            elif event.kind == "embedded" and event.doc_id:
                self._chunks[event.doc_id] = (event.done, event.total)
                done = sum(d for d, _ in self._chunks.values())
                total = sum(t for _, t in self._chunks.values())
                self.progress.update(self.embed, completed=done, total=total, visible=True)
            elif event.kind in ("ready", "error") and event.doc_id:
                if event.kind == "error" and self.enabled:
                    self.progress.console.print(f"[red]failed[/] {_escape(event.filename)}: {_escape(event.detail)}")
                self.progress.advance(self.docs)
                self.progress.update(self.docs, note="")


def _escape(text: Any) -> str:
    from rich.markup import escape

    return escape("" if text is None else str(text))
