"""``add`` for URLs: fetch the pages (:mod:`.crawl`), then index them as files are indexed.

Each page is a document whose source is its URL (a result cites the URL; the document's
name is the URL too). Fetched bodies are staged in a private temporary folder and handed
to the pipeline (:meth:`kbdesk.ingest.pipeline.Ingestor.add_found`), which stores the
copy, extracts by the type the server named, chunks and embeds — the same limits of
size, time and text as for a file. A page whose bytes did not change is ``unchanged``
(by a ``304`` to a conditional request, or by its hash). With ``sync``, a page that
answers 404 or 410 is removed like a deleted file, and so are the pages indexed before
under the same site prefix that now answer so.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from kbdesk.ingest.batch import sha256
from kbdesk.ingest.events import EventSink, IngestEvent
from kbdesk.ingest.folders import FoundFile
from kbdesk.ingest.names import WEB
from kbdesk.web.crawl import Crawl, Known, Page, WebLimits
from kbdesk.web.fetch import Fetcher
from kbdesk.web.memory import Memory
from kbdesk.web.urls import UrlRefused, check, check_globs, host_of, redact, scope_of


def add_urls(
    ingestor: Any,
    kb_ref: str,
    urls: Sequence[str],
    report: Any,
    *,
    limits: WebLimits | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    sync: bool = False,
    retry_failed: bool = False,
    private_hosts: Sequence[str] | None = None,
) -> None:
    """Fetch ``urls`` (and their links to ``limits.depth``) and index them in the KB of
    ``ingestor`` (a :class:`kbdesk.ingest.pipeline.Ingestor`); what happened goes into
    ``report`` (an :class:`~kbdesk.ingest.pipeline.IngestReport`). ``private_hosts``: the
    hosts on a private network that may be fetched (default: those of ``urls``, named by
    the user; a server passes the ones its admin allowed)."""
    limits = limits or WebLimits()
    kb = ingestor.desk.kb(kb_ref)
    on_event = ingestor.on_event
    given: list[str] = []
    for url in urls:
        try:
            given.append(check(url))
        except UrlRefused as exc:
            report.failed.append((redact(url), str(exc)))
            on_event(IngestEvent("error", redact(url), detail=str(exc)))
    if not given:
        return
    include, exclude = tuple(check_globs(include)), tuple(check_globs(exclude))
    docs = {s: d for s, d in ingestor.store.documents_by_source(kb.id).items() if s.startswith(WEB)}
    memory = Memory(ingestor.files_dir / "web" / f"{kb.id}.json")
    known: dict[str, Known] = {}
    for source, doc in docs.items():
        entry = memory.get(source, doc.content_hash) if doc.status == "ready" and not doc.stale else None
        if entry is not None:
            validators = {k: str(entry[k]) for k in ("etag", "last_modified") if entry.get(k)}
            known[source] = Known(validators, [str(u) for u in entry.get("links") or []])
    stop = threading.Event()
    fetcher = Fetcher(
        {host_of(u) for u in given} if private_hosts is None else set(private_hosts),
        max_bytes=ingestor.max_bytes,
        timeout=limits.timeout,
        max_redirects=limits.max_redirects,
        interval=limits.interval,
        cancelled=stop,
    )
    watcher = threading.Thread(target=_follow_cancel, args=(ingestor, stop), daemon=True)
    watcher.start()
    try:
        crawl = Crawl(
            fetcher, limits, known, include=include, exclude=exclude, on_page=_announce(on_event), cancelled=stop
        )
        pages = crawl.run(given)
        if sync and not stop.is_set():  # pages indexed before under these sites, not reached now
            reached = {p.url for p in pages}
            scopes = tuple(scope_of(u) for u in given)
            again = [s for s in docs if s not in reached and s.startswith(scopes)]
            pages += [p for p in (crawl._visit(s)[0] for s in again) if p.outcome == "gone"]
    finally:
        stop.set()
        fetcher.close()
    with tempfile.TemporaryDirectory(prefix="kbdesk-web-") as staging:
        files = []
        for number, page in enumerate(pages):
            if page.outcome == "fetched":
                path = Path(staging) / f"{number}"
                path.write_bytes(page.body)
                files.append(
                    FoundFile(
                        path,
                        page.url,
                        len(page.body),
                        _mtime(page.validators.get("last_modified")),
                        source=page.url,
                        content_type=page.content_type,
                    )
                )
                memory.put(page.url, sha256(page.body), page.validators, page.links)
            elif page.outcome == "unchanged":
                report.unchanged.append(page.url)
                on_event(IngestEvent("unchanged", page.url, docs[page.url].id if page.url in docs else None, "ready"))
            elif page.outcome == "gone" and sync and page.url in docs:
                ingestor.desk.delete_document(docs[page.url].id)
                memory.forget(page.url)
                report.removed.append(page.url)
                on_event(IngestEvent("removed", page.url, docs[page.url].id))
            elif page.outcome in ("gone", "failed"):
                report.failed.append((page.url, page.reason))
            elif page.outcome == "skipped":
                report.skipped.append((page.url, page.reason))
        if files:
            ingestor.add_found(kb, files, report, retry_failed=retry_failed, checksum=True)
    memory.save()


def _follow_cancel(ingestor: Any, stop: threading.Event) -> None:
    """Stop the crawl soon after the ingestor is cancelled (Ctrl-C)."""
    while not stop.wait(0.2):
        if ingestor.cancelled:
            stop.set()


def _announce(on_event: EventSink) -> Callable[[Page], None]:
    def announce(page: Page) -> None:
        if page.outcome == "fetching":  # the progress line says which page is being fetched
            on_event(IngestEvent("status", page.url, status="fetching"))
        elif page.outcome == "skipped":
            on_event(IngestEvent("skipped", page.url, detail=page.reason))
        elif page.outcome in ("gone", "failed"):
            on_event(IngestEvent("error", page.url, detail=page.reason))

    return announce


def _mtime(last_modified: str | None) -> float:
    """The page's modification time: its Last-Modified, else now."""
    if last_modified:
        try:
            return parsedate_to_datetime(last_modified).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            pass
    return time.time()
