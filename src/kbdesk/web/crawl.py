"""Walking a site: the URLs given, the links of their pages to ``depth``, a sitemap's pages.

Breadth first, each URL once. A link is followed when it is on the same site as the URL
it came from (:func:`kbdesk.web.urls.scope_of`), passes the globs, and the site's
robots.txt lets kbdesk fetch it (read once per site with :mod:`urllib.robotparser`; a
missing robots.txt allows everything, a 401/403 allows nothing). The run stops taking
pages at ``max_pages``, ``max_total_bytes`` or ``max_seconds``; what it did not reach is
reported as skipped with the limit named.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib import robotparser

from kbdesk.ingest.sections import ExtractionError
from kbdesk.ingest.text_decode import decode_markup
from kbdesk.web.fetch import MAX_DELAY, Fetcher, FetchFailed, Response
from kbdesk.web.pages import is_sitemap, kind_of, links_of, sitemap_urls
from kbdesk.web.urls import UrlRefused, origin, scope_of, wanted

ROBOTS_AGENT = "kbdesk"


@dataclass
class WebLimits:
    depth: int = 0  # links followed from the URLs given: 0 none, 1 their links, …
    max_pages: int = 500
    max_total_bytes: int = 1 << 30
    max_seconds: float = 3600.0
    timeout: float = 30.0  # one page, whole request
    max_redirects: int = 5
    interval: float = 0.25  # seconds between two requests to one host (or its Crawl-delay)


@dataclass
class Known:
    """What the last run kept of a page indexed as it is now."""

    validators: dict[str, str]
    links: list[str]


@dataclass
class Page:
    url: str
    outcome: str  # "fetched", "unchanged", "gone", "failed", "skipped" ("fetching": about to be asked for)
    body: bytes = b""
    content_type: str = ""  # what kbdesk reads it as
    validators: dict[str, str] = field(default_factory=dict)
    links: list[str] = field(default_factory=list)
    reason: str = ""


class Crawl:
    def __init__(
        self,
        fetcher: Fetcher,
        limits: WebLimits,
        known: dict[str, Known],
        *,
        include: tuple[str, ...] = (),
        exclude: tuple[str, ...] = (),
        on_page: Callable[[Page], None] = lambda _p: None,
        cancelled: threading.Event | None = None,
    ) -> None:
        self.fetcher = fetcher
        self.limits = limits
        self.known = known
        self.include, self.exclude = include, exclude
        self.on_page = on_page
        self.cancelled = cancelled or threading.Event()
        self.robots: dict[str, robotparser.RobotFileParser] = {}
        self.pages: list[Page] = []

    # ── robots.txt ────────────────────────────────────────────────────────────
    def allowed(self, url: str) -> bool:
        site = origin(url)
        rules = self.robots.get(site)
        if rules is None:
            rules = self.robots[site] = robotparser.RobotFileParser(site + "/robots.txt")
            try:
                answer = self.fetcher.get(site + "/robots.txt")
            except (UrlRefused, FetchFailed):
                answer = Response(site, 404)
            if answer.status in (401, 403):
                rules.parse(["User-agent: *", "Disallow: /"])
            elif answer.status == 200:
                rules.parse(decode_markup(answer.body).splitlines())
                delay = rules.crawl_delay(ROBOTS_AGENT)
                if delay:
                    self.fetcher.delays[site.split("://", 1)[1].split(":")[0]] = min(float(delay), MAX_DELAY)
            else:
                rules.parse([])
        return rules.can_fetch(ROBOTS_AGENT, url)

    # ── the walk ──────────────────────────────────────────────────────────────
    def run(self, urls: list[str]) -> list[Page]:
        started = time.monotonic()
        queue: deque[tuple[str, int, str]] = deque((u, 0, scope_of(u)) for u in urls)
        seen = set(urls)
        taken = 0
        while queue and not self.cancelled.is_set():
            url, depth, scope = queue.popleft()
            limit = self._limit(taken, started)
            if limit:
                self._add(Page(url, "skipped", reason=limit))
                for rest, _, _ in queue:
                    self._add(Page(rest, "skipped", reason=limit))
                break
            if not self.allowed(url):
                self._add(Page(url, "skipped", reason="robots.txt does not allow it"))
                continue
            taken += 1
            self.on_page(Page(url, "fetching"))  # progress only: not a page of the result
            page, sitemap = self._visit(url)
            if sitemap is not None:  # its pages, as if given; nested sitemaps too
                nested, listed = sitemap
                for found in listed + nested:
                    if (
                        found not in seen
                        and found.startswith(origin(url) + "/")
                        and wanted(found, self.include, self.exclude)
                    ):
                        seen.add(found)
                        queue.append((found, depth if found in nested else self.limits.depth, scope_of(found)))
                continue
            self._add(page)
            if depth < self.limits.depth:
                for link in page.links:
                    if link not in seen and link.startswith(scope) and wanted(link, self.include, self.exclude):
                        seen.add(link)
                        queue.append((link, depth + 1, scope))
        return self.pages

    def _limit(self, taken: int, started: float) -> str:
        if taken >= self.limits.max_pages:
            return f"the run's limit of {self.limits.max_pages} pages was reached"
        if self.fetcher.bytes_read >= self.limits.max_total_bytes:
            return f"the run's limit of {self.limits.max_total_bytes / 1048576:g} MB was reached"
        if time.monotonic() - started >= self.limits.max_seconds:
            return f"the run's limit of {self.limits.max_seconds:g} s was reached"
        return ""

    def _add(self, page: Page) -> None:
        self.pages.append(page)
        self.on_page(page)

    def _visit(self, url: str) -> tuple[Page, tuple[list[str], list[str]] | None]:
        """The page at ``url``, or the URLs of the sitemap it is."""
        known = self.known.get(url)
        try:
            answer = self.fetcher.get(url, known.validators if known else None)
        except (UrlRefused, FetchFailed) as exc:
            return Page(url, "failed", reason=str(exc)), None
        if answer.status == 304 and known is not None:
            return Page(url, "unchanged", validators=known.validators, links=known.links), None
        if answer.status in (404, 410):
            return Page(url, "gone", reason=f"the page is gone (HTTP {answer.status})"), None
        if answer.status != 200:
            return Page(url, "failed", reason=f"HTTP {answer.status}"), None
        if is_sitemap(answer.media_type, answer.body, url):
            try:
                listed, nested = sitemap_urls(answer.body, answer.url)
            except ExtractionError as exc:
                return Page(url, "failed", reason=str(exc)), None
            return Page(url, "sitemap"), (nested, listed)
        kind = kind_of(answer.media_type, answer.body, answer.url)
        if kind is None:
            return Page(url, "skipped", reason=f"not a format kbdesk reads ({answer.media_type or 'no type'})"), None
        validators = {
            key: answer.headers[header][:512]
            for key, header in (("etag", "etag"), ("last_modified", "last-modified"))
            if answer.headers.get(header)
        }
        links = links_of(decode_markup(answer.body), answer.url) if kind == "text/html" else []
        return Page(url, "fetched", answer.body, kind, validators, links), None
