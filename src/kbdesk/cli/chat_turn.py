"""One chat turn in the terminal, shared by ``kbdesk ask`` and ``kbdesk chat``.

The turn runs in a worker thread (:func:`run_turn`) and hands its events to the main
thread, which draws them (:class:`TurnView`) and turns Ctrl-C into ``token.cancel()``:
the engine stops, keeps the partial answer and ends the turn as cancelled.

The answer goes to stdout as it streams; everything around it — tool calls, what was
searched, "waiting for the model", notices (the engine's own, such as an answer cut at
the length limit or earlier questions left out to fit the context) — goes to stderr,
so a script reading stdout gets the answer alone. Model and document text is data: it reaches the terminal
through :func:`~kbdesk.cli.output.passage` / :func:`~kbdesk.cli.output.plain`, never
as markup, with every control character escaped.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from rich.text import Text

from kbdesk.chat.events import (
    Answer,
    Notice,
    Retrieval,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    Waiting,
)
from kbdesk.chat.safety import one_line
from kbdesk.cli.output import InertConsole, passage, plain
from kbdesk.config import RetrievalPolicy
from kbdesk.errors import InvalidInputError
from kbdesk.providers.chat import CancelToken
from kbdesk.textsafe import inert_line

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService

RETRIEVAL_POLICIES: tuple[str, ...] = typing.get_args(RetrievalPolicy)
RETRIEVAL_HELP = (
    "How the KBs are consulted: auto (the model may search; if it does not, kbdesk does), "
    "tool (only when the model searches), always (kbdesk searches first) or off."
)
NO_MODEL = (
    "no chat model is set: run 'kbdesk model set chat PROVIDER MODEL' ('kbdesk model list' shows the "
    "models), or choose one in the TUI under Settings → Model roles"
)
SPARSE_WAITING = 10.0
"""Seconds between two "waiting for the model" lines when they cannot be rewritten in place."""

_END = object()
_STYLES = {"error": "red", "warning": "yellow", "info": "dim"}


def run_turn(
    chat: ChatService,
    conversation: str | None,
    question: str,
    on_event: Callable[[Any], None],
    *,
    token: CancelToken | None = None,
    on_interrupt: Callable[[], None] | None = None,
    **kwargs: Any,
) -> Answer:
    """``chat.ask(...)`` in a worker thread; ``on_event`` sees each event in this thread.

    Ctrl-C (KeyboardInterrupt here) cancels the turn and keeps waiting for it to end,
    which the engine does promptly: the answer comes back with status "cancelled".
    """
    token = token or CancelToken()
    events: queue.Queue[Any] = queue.Queue()
    box: dict[str, Any] = {}
    # An Event and a queue, not Thread.join: a join interrupted by Ctrl-C can mark the
    # thread as ended while it still runs (seen on CPython 3.11).
    done = threading.Event()

    def work() -> None:
        try:
            box["answer"] = chat.ask(conversation, question, on_event=events.put, cancel=token, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, raised there
            box["error"] = exc
        finally:
            done.set()
            events.put(_END)

    threading.Thread(target=work, name="kbdesk-chat-turn", daemon=True).start()
    tell = False
    while True:
        try:
            if tell:  # here, not in the except clause: another Ctrl-C there would escape
                tell = False
                on_interrupt()  # type: ignore[misc]
            event = events.get(timeout=0.25)
            if event is _END:
                break
            on_event(event)
        except queue.Empty:
            continue
        except KeyboardInterrupt:
            if not token.cancelled:
                token.cancel()
                tell = on_interrupt is not None
    assert done.is_set()
    if "error" in box:
        raise box["error"]
    return box["answer"]


def require_chat_model(
    chat: ChatService, *, model: str | None, persona: str | None = None, conversation: str | None = None
) -> None:
    """One line on how to set a chat model when none applies to this turn."""
    if model or chat.desk.config.roles.chat.model:
        return
    ref = persona
    if ref is None and conversation is not None:
        ref = chat.conversation(conversation).persona_id
    if ref is None or not chat.persona(ref).model:
        raise InvalidInputError(NO_MODEL)


class TurnView:
    """Draws a turn's events: answer text on ``out`` as it streams, the rest on ``err``.

    ``live``: rewrite the "waiting for the model" line in place (a terminal); otherwise
    it is printed once and then every :data:`SPARSE_WAITING` seconds. In the middle of
    an answer's line it waits :data:`SPARSE_WAITING` seconds before breaking that line.
    """

    def __init__(
        self, *, quiet: bool = False, out: TextIO | None = None, err: TextIO | None = None, live: bool | None = None
    ) -> None:
        self.quiet = quiet
        self.out_file = out or sys.stdout
        self.err_file = err or sys.stderr
        self.out = InertConsole(file=self.out_file, highlight=False, soft_wrap=True)
        self.err = InertConsole(file=self.err_file, highlight=False, soft_wrap=True)
        self.live = _isatty(self.err_file) if live is None else live
        self.mid_line = False  # answer text on screen without its closing newline
        self.waiting_shown = False  # a live waiting line is on screen
        self.waiting_printed: float | None = None  # when the last sparse waiting line was printed

    def __call__(self, event: Any) -> None:
        if self.quiet:
            return
        if isinstance(event, Waiting):
            self._waiting(event.seconds)
            return
        self.clear_waiting()
        self.waiting_printed = None
        if isinstance(event, TextDelta):
            if event.text:
                self.out.print(passage(event.text), end="")
                self.mid_line = not event.text.endswith("\n")
        elif isinstance(event, ToolCallStarted):
            self.side(f"[{event.call.name}] {one_line(_query_of(event.call.arguments), 120)}")
        elif isinstance(event, ToolCallFinished):
            self.side(f"[{event.call.name}] {event.call.summary}")
        elif isinstance(event, Notice):
            self.side(f"{'error' if event.level == 'error' else 'note'}: {event.text}", _STYLES[event.level])
        elif isinstance(event, Retrieval):
            if event.text:
                self.side(event.text)
        elif isinstance(event, TurnFinished):
            self.finish(event.answer)

    # ── pieces ─────────────────────────────────────────────────────────────────
    def side(self, text: str, style: str = "dim") -> None:
        """One line on stderr, after ending a half-written answer line."""
        self.clear_waiting()
        self.end_line()
        self.err.print(plain(text, style=style))

    def end_line(self) -> None:
        if self.mid_line:
            self.out.print()
            self.mid_line = False

    def clear_waiting(self) -> None:
        if self.waiting_shown:
            self.err_file.write("\r\x1b[2K")
            self.err_file.flush()
            self.waiting_shown = False

    def _waiting(self, seconds: float) -> None:
        if self.mid_line and seconds < SPARSE_WAITING:
            return  # a pause in the middle of an answer (a slow model): the text itself shows progress
        text = f"waiting for the model ({seconds:.0f} s)… Ctrl-C stops"
        if self.live:
            self.end_line()
            self.err_file.write("\r\x1b[2K" + inert_line(text))
            self.err_file.flush()
            self.waiting_shown = True
        elif self.waiting_printed is None or seconds - self.waiting_printed >= SPARSE_WAITING:
            self.side(text)
            self.waiting_printed = seconds

    def finish(self, answer: Answer) -> None:
        self.clear_waiting()
        self.end_line()
        self.sources(answer)

    def sources(self, answer: Answer) -> None:
        if not answer.sources:
            return
        self.out.print(Text("\nSources:", style="bold"))
        for source in answer.sources:
            self.out.print(plain(f"  [{source.n}] {source.label}"))

    def stopping(self) -> None:
        """Ctrl-C reached a running turn."""
        self.side("stopping…")


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _query_of(arguments: str) -> str:
    try:
        value = json.loads(arguments)
        return str(value.get("query", arguments)) if isinstance(value, dict) else arguments
    except ValueError:
        return arguments
