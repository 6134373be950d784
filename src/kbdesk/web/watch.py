"""``kbdesk watch KB URL``: re-check a web source every ``interval`` seconds.

Each pass is an ``add`` of the URL with ``sync`` (:func:`kbdesk.web.source.add_urls`):
conditional requests, so a site that did not change answers ``304`` and costs nothing
else; a changed page is indexed again, a page gone (404, 410) removed. Events are the
folder watch's (:class:`kbdesk.ingest.watch.WatchEvent`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from kbdesk.ingest.pipeline import Ingestor, IngestReport
from kbdesk.ingest.watch import WatchEvent
from kbdesk.web.crawl import WebLimits
from kbdesk.web.source import add_urls


def watch_url(
    ingestor: Ingestor,
    kb: str,
    url: str,
    *,
    stop: threading.Event,
    on_event: Callable[[WatchEvent], None],
    depth: int = 0,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    interval: float = 300.0,
    max_passes: int | None = None,
) -> int:
    """Keep ``kb`` in step with the pages of ``url`` until ``stop`` is set; returns the passes run."""
    on_event(WatchEvent("watching", url, f"re-checked every {interval:g} s"))
    passes = 0
    while not stop.is_set():
        report = IngestReport()
        add_urls(
            ingestor, kb, [url], report, limits=WebLimits(depth=depth), include=include, exclude=exclude, sync=True
        )
        for kind in ("added", "updated", "removed"):
            for name in getattr(report, kind):
                on_event(WatchEvent(kind, name))
        for name, reason in report.failed:
            on_event(WatchEvent("failed", name, reason))
        on_event(
            WatchEvent(
                "pass",
                url,
                f"{len(report.added)} added, {len(report.updated)} updated, {len(report.unchanged)} unchanged, "
                f"{len(report.removed)} removed, {len(report.failed)} failed",
            )
        )
        passes += 1
        if max_passes is not None and passes >= max_passes:
            break
        stop.wait(interval)
    return passes
