"""One streamed HTTP exchange that never holds the caller on the network.

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

import logging
import queue
import socket
import threading
from typing import Any

import httpx

log = logging.getLogger("kbdesk.providers")

Event = tuple[str, Any]


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
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                _shutdown(sock)

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
        except BaseException as exc:  # handed to the caller, who decides what it means
            if not self._aborted:
                self._finish(("error", exc))
        finally:
            if response is not None:
                try:
                    response.close()
                except Exception:  # already broken: nothing more to release
                    pass

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


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # not connected (any more), or already closed
        pass


__all__ = ["Event", "Exchange", "is_event_stream"]
