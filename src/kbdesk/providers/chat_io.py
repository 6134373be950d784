"""Waiting on a chat server without ever being stuck on the network.

:class:`CancelToken` stops a turn from another thread; :class:`Exchange` runs one
streamed HTTP request in a worker thread; :class:`Waiter` takes its events off for the
caller, calling ``on_wait`` while nothing arrives and giving up after a limit.

A blocking read cannot be interrupted by closing its socket from another thread (on
Linux a ``recv`` waiting on a closed descriptor keeps waiting), and httpx cannot resume
reading headers after a short read timeout. So the request runs in a worker thread that
hands what arrives to the caller through a queue: the caller waits on the queue in short
steps, so it can say "still waiting" once a second, give up after a limit, and return at
once when the user stops. Stopping also shuts the socket down (which does wake a blocked
``recv``), so the server sees the client leave and the worker ends.

Events, in order: ``("head", response)`` once the status and headers are in (with the
whole body already read unless it is an event stream), then ``("line", text)`` for each
line of an event stream, then ``("end", None)``; or ``("error", exception)`` at any point.
"""

from __future__ import annotations

import contextlib
import logging
import math
import queue
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from kbdesk.errors import KbdeskError

log = logging.getLogger("kbdesk.providers")

Event = tuple[str, Any]


class ChatCancelled(KbdeskError):
    """The user stopped the answer."""


class CancelToken:
    """Stops a chat turn from another thread: ``cancel()`` sets the flag and closes
    whatever connection the turn is waiting on."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._closers: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()
        with self._lock:
            closers, self._closers = self._closers, []
        for close in closers:
            with contextlib.suppress(Exception):  # closing a response that already ended
                close()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, waking at once on cancel; True when cancelled."""
        return self._event.wait(seconds)

    def check(self) -> None:
        if self._event.is_set():
            raise ChatCancelled("stopped")

    def on_cancel(self, close: Callable[[], None]) -> Callable[[], None]:
        """Run ``close`` on cancel (at once if already cancelled); returns an unregister function."""
        with self._lock:
            if not self._event.is_set():
                self._closers.append(close)
                return lambda: self._forget(close)
        close()
        return lambda: None

    def _forget(self, close: Callable[[], None]) -> None:
        with self._lock:
            if close in self._closers:
                self._closers.remove(close)


def is_event_stream(response: httpx.Response) -> bool:
    """Whether to read ``response`` line by line (anything but an error, JSON or HTML)."""
    kind = response.headers.get("content-type", "").lower()
    if response.status_code >= 300 or "html" in kind:
        return False
    return "event-stream" in kind or "json" not in kind


class Exchange:
    """``client.send(request, stream=True)`` in a daemon thread; see the module docstring."""

    def __init__(self, client: httpx.Client, request: httpx.Request) -> None:
        self._client = client
        self._request = request
        self._events: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._response: httpx.Response | None = None
        self._aborted = False
        self._done = False
        request.extensions = {**request.extensions, "trace": self._trace}
        self._thread = threading.Thread(target=self._run, name="kbdesk-chat-http", daemon=True)

    def start(self) -> Exchange:
        self._thread.start()
        return self

    def get(self, timeout: float) -> Event | None:
        """The next event, or None when nothing came within ``timeout`` seconds (or the
        exchange was aborted: the caller checks why)."""
        try:
            return self._events.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def abort(self) -> None:
        """Stop from any thread: wake the caller, shut the connection down, end the worker."""
        with self._lock:
            self._aborted = True
            sockets, response = list(self._sockets), self._response
            done = self._done
        self._events.put(None)
        if done:  # the worker finished: its connection may already serve another request
            return
        for sock in sockets:
            _shutdown(sock)
        if response is not None:
            stream = response.extensions.get("network_stream")
            raw = stream.get_extra_info("socket") if stream is not None else None
            if raw is not None:
                _shutdown(raw)

    # ── the worker ─────────────────────────────────────────────────────────────
    def _run(self) -> None:
        response = None
        try:
            response = self._client.send(self._request, stream=True)
            with self._lock:
                self._response = response
                aborted = self._aborted
            if aborted:
                return
            streamed = is_event_stream(response)
            if not streamed:
                response.read()
            self._events.put(("head", response))
            if streamed:
                for line in response.iter_lines():
                    if self._aborted:
                        return
                    self._events.put(("line", line))
            self._finish(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who decides what it means
            if not self._aborted:
                self._finish(("error", exc))
        finally:
            if response is not None:
                with contextlib.suppress(Exception):  # already broken: nothing more to release
                    response.close()

    def _finish(self, event: Event) -> None:
        with self._lock:
            self._done = True
        self._events.put(event)

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: remember the sockets this request connects, so that
        :meth:`abort` can shut them down while the worker waits for headers."""
        if event not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            aborted = self._aborted
        if aborted:
            _shutdown(sock)


class Silence(Exception):
    """Nothing arrived for ``wait_limit`` seconds."""

    def __init__(self, waited: float) -> None:
        super().__init__(waited)
        self.waited = waited


class Waiter:
    """Takes events off an exchange without ever blocking on the network: wakes at once
    on cancel, calls ``on_wait`` about once a second of silence, gives up after ``limit``."""

    def __init__(self, cancel: CancelToken, on_wait: Callable[[float], None] | None, limit: float) -> None:
        self.cancel, self.on_wait, self.limit = cancel, on_wait, limit
        self.since, self.tick = time.monotonic(), 1.0

    def next(self, exchange: Exchange) -> Event:
        while True:
            waited = time.monotonic() - self.since
            item = exchange.get(min(self.tick, self.limit) - waited)
            self.cancel.check()
            now = time.monotonic()
            if item is not None:
                self.since, self.tick = now, 1.0
                return item
            waited = now - self.since
            if waited >= self.limit:
                raise Silence(waited)
            if waited >= self.tick:
                self.tick = math.floor(waited) + 1.0
                if self.on_wait is not None:
                    self.on_wait(waited)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # not connected (any more), or already closed
        sock.shutdown(socket.SHUT_RDWR)


__all__ = ["CancelToken", "ChatCancelled", "Event", "Exchange", "Silence", "Waiter", "is_event_stream"]
