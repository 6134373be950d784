"""Running blocking core calls in thread workers, with results and errors routed back.

Every screen or widget that calls the core mixes in :class:`Blocking` and calls
``self.in_thread(fn, *args, doing=..., done=callback)``. The callback runs on the UI
thread with the result. A failure goes to the app's one error reporter (a
notification, never a traceback) and then to the optional ``failed`` callback.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from textual.dom import DOMNode
from textual.worker import Worker, WorkerState

if TYPE_CHECKING:
    from kbdesk.tui.desk_app import DeskApp

    _Node = DOMNode
else:  # a mixin: at run time the screen or widget it is mixed into is the DOM node
    _Node = object

_busy = threading.Condition()
_running = 0  # functions started by tracked() that have not returned yet


def tracked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, counted while it runs in its thread, so the app can wait for it before closing the desk."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        global _running
        with _busy:
            _running += 1
        try:
            return fn(*args, **kwargs)
        finally:
            with _busy:
                _running -= 1
                _busy.notify_all()

    return run


def wait_for_threads(timeout: float) -> bool:
    """Wait until no tracked function runs (True), or ``timeout`` seconds (False)."""
    with _busy:
        return _busy.wait_for(lambda: _running == 0, timeout)


def kbdesk_app(node: DOMNode) -> DeskApp:
    """The running app, as kbdesk's own (screens and widgets only ever run inside it)."""
    return cast("DeskApp", node.app)


@dataclass(frozen=True)
class _Callbacks:
    done: Callable[[Any], object] | None = None
    failed: Callable[[BaseException], object] | None = None
    inline: type[BaseException] | None = None


_NONE = _Callbacks()


class Blocking(_Node):
    """Mixin for a Screen or Widget: ``in_thread`` plus its ``Worker.StateChanged`` handler."""

    _kb_thread_callbacks: dict[Worker[Any], _Callbacks]

    @property
    def kb_app(self) -> DeskApp:
        """The running app, as kbdesk's own."""
        return kbdesk_app(self)

    def in_thread(
        self,
        fn: Callable[..., Any],
        *args: Any,
        doing: str,
        done: Callable[[Any], object] | None = None,
        failed: Callable[[BaseException], object] | None = None,
        inline: type[BaseException] | None = None,
        group: str = "default",
        exclusive: bool = False,
        **kwargs: Any,
    ) -> Worker[Any]:
        """Run ``fn(*args, **kwargs)`` in a thread; ``doing`` names it in error messages.

        A failure is reported by the app (a notification), then handed to ``failed``; one of
        type ``inline`` only goes to ``failed`` (a form shows it beside what was typed).
        """
        if not hasattr(self, "_kb_thread_callbacks"):
            self._kb_thread_callbacks = {}
        worker = self.run_worker(
            tracked(lambda: fn(*args, **kwargs)),
            name=doing,
            description=doing,
            thread=True,
            exit_on_error=False,
            group=group,
            exclusive=exclusive,
        )
        self._kb_thread_callbacks[worker] = _Callbacks(done, failed, inline)
        return worker

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        callbacks = getattr(self, "_kb_thread_callbacks", {})
        worker = event.worker
        if event.state == WorkerState.SUCCESS:
            done = callbacks.pop(worker, _NONE).done
            if done is not None:
                done(worker.result)
        elif event.state == WorkerState.ERROR:
            these = callbacks.pop(worker, _NONE)
            error = worker.error
            if not (these.inline and these.failed and isinstance(error, these.inline)):
                kbdesk_app(self).report_error(error, worker.name)
            if these.failed is not None and error is not None:
                these.failed(error)
        elif event.state == WorkerState.CANCELLED:
            callbacks.pop(worker, None)
