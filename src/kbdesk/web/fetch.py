"""Fetching one URL politely and within limits (httpx).

* a clear ``User-Agent`` (:data:`USER_AGENT`), so a site's owner knows what called;
* redirects followed by hand, each hop checked like the URL given
  (:func:`kbdesk.web.urls.check`, the address rule), at most ``max_redirects``;
* a whole-request deadline (httpx's timeout is per read: a server trickling a byte at
  a time would never time out) and a byte limit, read as a stream;
* conditional requests: ``If-None-Match`` / ``If-Modified-Since`` from the validators
  of the version indexed; a ``304`` is "unchanged";
* per host, one request at a time and at least ``interval`` seconds (or the site's
  robots.txt ``Crawl-delay``, up to :data:`MAX_DELAY`) between two.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

import httpx

from kbdesk.web.urls import UrlRefused, check, check_address, host_of, normalise


def _version() -> str:
    try:
        return version("kbdesk")
    except PackageNotFoundError:  # run from a source tree
        return "dev"


USER_AGENT = f"kbdesk/{_version()} (+https://pypi.org/project/kbdesk/)"
MAX_DELAY = 10.0  # seconds: the longest Crawl-delay honoured


@dataclass
class Response:
    url: str  # after redirects
    status: int
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class FetchFailed(Exception):
    """The page could not be fetched; the message is one line for a person."""


class Fetcher:
    def __init__(
        self,
        named_hosts: Iterable[str],
        *,
        max_bytes: int,
        timeout: float = 30.0,
        max_redirects: int = 5,
        interval: float = 0.25,
        cancelled: threading.Event | None = None,
    ) -> None:
        self.named_hosts = set(named_hosts)
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.max_redirects = max_redirects
        self.interval = interval
        self.cancelled = cancelled or threading.Event()
        self.bytes_read = 0
        self.delays: dict[str, float] = {}  # host → Crawl-delay
        self._hosts: dict[str, threading.Lock] = {}
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self.client = httpx.Client(
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"},
            follow_redirects=False,
            timeout=httpx.Timeout(min(timeout, 30.0)),
            trust_env=False,  # no proxy or .netrc credentials from the environment
        )

    def close(self) -> None:
        self.client.close()

    def get(self, url: str, validators: dict[str, str] | None = None) -> Response:
        """GET ``url``, following redirects by hand; raises :class:`UrlRefused` or
        :class:`FetchFailed`."""
        for _hop in range(self.max_redirects + 1):
            url = check(url)
            check_address(url, self.named_hosts)
            response = self._one(url, validators)
            if response.status in (301, 302, 303, 307, 308) and "location" in response.headers:
                url = normalise(response.headers["location"], url)
                validators = None
                continue
            return response
        raise FetchFailed(f"more than {self.max_redirects} redirects")

    def _wait_turn(self, host: str) -> threading.Lock:
        with self._lock:
            lock = self._hosts.setdefault(host, threading.Lock())
        lock.acquire()
        delay = max(self.interval, self.delays.get(host, 0.0))
        wait = self._last.get(host, 0.0) + delay - time.monotonic()
        if wait > 0:
            self.cancelled.wait(wait)
        return lock

    def _one(self, url: str, validators: dict[str, str] | None) -> Response:
        headers = {}
        if validators:
            if validators.get("etag"):
                headers["If-None-Match"] = validators["etag"]
            if validators.get("last_modified"):
                headers["If-Modified-Since"] = validators["last_modified"]
        host = host_of(url)
        lock = self._wait_turn(host)
        deadline = time.monotonic() + self.timeout
        try:
            with self.client.stream("GET", url, headers=headers) as r:
                body = bytearray()
                if r.status_code == 200:
                    for piece in r.iter_bytes():
                        body += piece
                        if len(body) > self.max_bytes:
                            raise FetchFailed(f"page is over the {self.max_bytes / 1048576:g} MB limit")
                        if time.monotonic() > deadline or self.cancelled.is_set():
                            raise FetchFailed(f"page took longer than {self.timeout:g} s")
                self.bytes_read += len(body)
                return Response(url, r.status_code, {k.lower(): v for k, v in r.headers.items()}, bytes(body))
        except httpx.TimeoutException:
            raise FetchFailed(f"no answer within {min(self.timeout, 30.0):g} s") from None
        except httpx.HTTPError as exc:
            raise FetchFailed(f"cannot fetch ({type(exc).__name__}: {exc})") from None
        except UrlRefused:
            raise
        finally:
            self._last[host] = time.monotonic()
            lock.release()
