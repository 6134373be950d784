"""The app's ingestion runs: one per KB at a time, each in a child process or a thread.

A mixin of :class:`kbdesk.tui.app.KbdeskApp` (the app holds the runs, not a screen, so
indexing goes on while the user moves between screens). A run's events feed its
:class:`~kbdesk.tui.progress.IngestTracker`, which posts the app a coalesced tick.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbdesk.desk import Desk
from kbdesk.errors import KbdeskError
from kbdesk.ingest.child import ChildRun, IngestJob, desk_spec
from kbdesk.models import KnowledgeBase
from kbdesk.textsafe import inert_line
from kbdesk.tui.messages import IngestProgress
from kbdesk.tui.progress import IngestTracker
from kbdesk.tui.workers import tracked

if TYPE_CHECKING:
    from textual.app import App
    from textual.worker import Worker

    _App = App[None]
else:  # a mixin: at run time the app it is mixed into
    _App = object

INGEST_GROUP = "ingest"


class IngestRuns(_App):
    """Start, watch and stop the app's ingestion runs."""

    desk: Desk
    trackers: dict[str, IngestTracker]
    ingest_in_child: bool
    _ingest_workers: dict[str, Worker[Any]]
    _ingestors: dict[str, Any]  # what cancels each run: its ChildRun or its Ingestor
    _dispatch_progress: Callable[[str], None]  # the app's: hands a tracker's changes to the screens

    def cancel_ingest(self, kb_id: str) -> None:
        """Stop the KB's run between batches; what it had not finished is left for a resume."""
        run = self._ingestors.get(kb_id)
        if run is not None and self.ingesting(kb_id):
            run.cancel()

    def ingesting(self, kb_id: str | None = None) -> bool:
        if kb_id is None:
            return any(not w.is_finished for w in self._ingest_workers.values())
        worker = self._ingest_workers.get(kb_id)
        return worker is not None and not worker.is_finished

    def start_ingest(
        self, kb: KnowledgeBase, what: str, job: Callable[[Any], Any], *, expected: int = 0
    ) -> IngestTracker | None:
        """Run ``job(ingestor)`` for ``kb``: an :class:`IngestJob` in a child process (in this one
        when none can start), any other callable in a thread; progress reaches screens as ticks.
        Quitting cancels the run: what it had not finished is left for a resume."""
        if self.ingesting(kb.id):
            self.notify(
                f"'{inert_line(kb.name)}' is already being indexed; wait for it to finish",
                severity="warning",
                markup=False,
            )
            return None
        kb_id = kb.id
        tracker = IngestTracker(
            kb.id, kb.name, what, lambda: self.post_message(IngestProgress(kb_id)), expected=expected
        )
        self.trackers[kb.id] = tracker

        spec = desk_spec(self.desk) if self.ingest_in_child and isinstance(job, IngestJob) else None
        child = ChildRun(spec, job) if spec is not None and isinstance(job, IngestJob) else None
        self._ingestors[kb.id] = child or self.desk.ingestor(on_event=tracker.on_event)

        @tracked
        def run() -> Any:
            try:
                if child is not None and child.start():
                    result = child.run(tracker.on_event)
                    cancelled = child.cancelled
                else:
                    if child is not None:  # no process could start: the run is done here
                        self._ingestors[kb_id] = self.desk.ingestor(on_event=tracker.on_event)
                        if child.cancelled:
                            self._ingestors[kb_id].cancel()
                    ingestor = self._ingestors[kb_id]
                    result = job(ingestor)
                    cancelled = ingestor.cancelled
            finally:
                tracker.finish()
            if not cancelled:
                with contextlib.suppress(KbdeskError):  # the KB went meanwhile: nothing to get ready
                    self.desk.warm_search(kb_id)  # the next search finds its vectors' file written
            return result

        self._ingest_workers[kb.id] = self.run_worker(
            run, name=f"{what} '{kb.name}'", group=INGEST_GROUP, thread=True, exit_on_error=False
        )
        self._dispatch_progress(kb.id)
        return tracker

    def stop_ingest_runs(self, timeout: float) -> None:
        """Cancel every run; wait up to ``timeout`` seconds for each child process, then end it."""
        runs = list(self._ingestors.values())
        for run in runs:
            run.cancel()
        for run in runs:
            if isinstance(run, ChildRun):
                run.stop(timeout)
