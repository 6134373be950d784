"""What the chat screen shows, as plain data: answers built from turn events or from saved
messages, and the relay that carries a turn's events from its worker thread to the UI.

No Textual here. :class:`TurnRelay` is fed by ``ChatService.ask(on_event=...)`` in a
thread and drained on the UI thread; it merges text deltas so a fast model does not
post one message per token. :class:`AnswerState` is what one answer looks like so far,
the same whether it is streaming now or was loaded from the conversation.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kbdesk.chat.events import (
    ChatEvent,
    Notice,
    Retrieval,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Waiting,
)
from kbdesk.chat.safety import clean, one_line
from kbdesk.chat.service import ChatService, TurnContext


# ── the relay ──────────────────────────────────────────────────────────────────
class TurnRelay:
    """Events of one turn, from the worker thread to the UI thread, coalesced.

    ``on_event`` (worker thread) queues an event, merging a text delta into the one
    before it, and calls ``wake`` — at most once until the UI drains, and for text at
    most once every ``interval`` seconds. The UI calls :meth:`drain` on each wake-up and
    on a timer of its own, which picks up text that arrived inside an interval.
    """

    def __init__(
        self, wake: Callable[[], None], *, interval: float = 0.05, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._wake = wake
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._events: list[ChatEvent] = []
        self._woken = False
        self._last = float("-inf")

    def on_event(self, event: ChatEvent) -> None:
        with self._lock:
            last = self._events[-1] if self._events else None
            if isinstance(event, TextDelta) and isinstance(last, TextDelta) and last.round == event.round:
                self._events[-1] = TextDelta(last.text + event.text, event.round)
            else:
                self._events.append(event)
            if self._woken:
                return  # the wake-up on its way drains this too
            now = self._clock()
            if isinstance(event, TextDelta) and now - self._last < self._interval:
                return  # the UI's timer picks it up
            self._woken, self._last = True, now
        self._wake()

    def pending(self) -> bool:
        with self._lock:
            return bool(self._events)

    def drain(self) -> list[ChatEvent]:
        with self._lock:
            events, self._events = self._events, []
            self._woken = False
        return events


# ── one answer ─────────────────────────────────────────────────────────────────
@dataclass
class TextPart:
    round: int
    text: str


@dataclass
class CallLine:
    call_id: str
    name: str
    arguments: str
    state: str = "running"
    """running, ok, error or stopped (a saved call that never finished)."""
    summary: str = ""
    error: str | None = None

    @property
    def label(self) -> str:
        """``kb_search “backups”``: the tool and what it was asked, on one line."""
        name = one_line(self.name, 40)
        try:
            args = json.loads(self.arguments or "{}")
        except ValueError:
            return f"{name} {one_line(self.arguments, 60)}".strip()
        query = args.get("query") if isinstance(args, dict) else None
        return f"{name} “{one_line(query, 60)}”" if query else name


@dataclass
class NoticePart:
    text: str
    level: str = "info"


Part = TextPart | CallLine | NoticePart


@dataclass
class AnswerState:
    """One assistant answer: its text by round, tool calls and notices in order, sources,
    and how the turn went (waiting, stopped, KBs searched or not, cut, history trimmed)."""

    status: str = "streaming"
    """streaming, complete, error or cancelled."""
    model: str | None = None
    parts: list[Part] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    knowledge_bases: tuple[str, ...] = ()
    waiting: float | None = None
    """Seconds the model has been silent, while it is (a :class:`Waiting` event)."""
    stopping: bool = False
    """The user stopped the answer; the turn has not ended yet."""
    retrieval: str = ""
    """Whether the KBs were searched this turn, as the user reads it."""
    finish_reason: str | None = None
    trimmed: int = 0
    """Earlier questions left out of the prompt to fit the model's context."""

    @property
    def streaming(self) -> bool:
        return self.status == "streaming"

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.parts if isinstance(p, TextPart) and p.text.strip())

    def apply(self, event: ChatEvent) -> None:
        if isinstance(event, Waiting):
            self.waiting = event.seconds
            return
        if not isinstance(event, Retrieval):
            self.waiting = None  # the model said something (or the turn moved on)
        if isinstance(event, TextDelta):
            self.add_text(event.text, event.round)
        elif isinstance(event, ToolCallStarted):
            call = event.call
            self.parts.append(CallLine(call.call_id, call.name, call.arguments))
        elif isinstance(event, ToolCallFinished):
            self._finish_call(event)
        elif isinstance(event, Notice):
            self.parts.append(NoticePart(clean(event.text), event.level))
        elif isinstance(event, Retrieval):
            self.retrieval = one_line(event.text, 300)
        elif isinstance(event, TurnStarted):
            self.model = event.model
            self.knowledge_bases = tuple(event.knowledge_bases)
        elif isinstance(event, TurnFinished):
            answer = event.answer
            self.status = answer.status
            self.model = answer.model or self.model
            self.sources = [s.to_dict() for s in answer.sources]
            self.finish_reason = answer.finish_reason
            self.trimmed = answer.trimmed

    @property
    def live(self) -> str:
        """What the turn is doing, while nothing else shows it: "" once text flows."""
        if not self.streaming:
            return ""
        if self.stopping:
            return "stopped"
        if self.waiting is not None:
            return f"waiting for the model ({self.waiting:.0f} s)…"
        return "" if self.parts else "thinking…"

    @property
    def notes(self) -> list[str]:
        """The lines under the answer: KBs searched or not, cut at the limit, history trimmed."""
        lines = [self.retrieval] if self.retrieval else []
        if self.finish_reason == "length":
            lines.append("cut at the length limit")
        if self.trimmed > 0:
            n = self.trimmed
            lines.append(f"{n} earlier question{'' if n == 1 else 's'} left out to fit the model's context")
        return lines

    def add_text(self, text: str, round: int) -> None:
        last = self.parts[-1] if self.parts else None
        if isinstance(last, TextPart) and last.round == round:
            last.text += clean(text)
        else:
            self.parts.append(TextPart(round, clean(text)))

    def _finish_call(self, event: ToolCallFinished) -> None:
        call = event.call
        line = next((p for p in self.parts if isinstance(p, CallLine) and p.call_id == call.call_id), None)
        if line is None:
            line = CallLine(call.call_id, call.name, call.arguments)
            self.parts.append(line)
        line.state = "ok" if call.ok else "error"
        line.summary, line.error = clean(call.summary), clean(call.error) if call.error else None
        known = {s.get("n") for s in self.sources}
        self.sources.extend(s.to_dict() for s in event.sources if s.n not in known)


@dataclass
class UserBlock:
    text: str


Block = UserBlock | AnswerState


def blocks_from_messages(messages: Iterable[Any]) -> list[Block]:
    """A saved conversation as the screen shows it: questions and answers, in order.

    Tool results (``role: "tool"``) are data for the model and are not shown; the calls
    that asked for them are, with whether they worked.
    """
    blocks: list[Block] = []
    current: AnswerState | None = None
    for message in messages:
        if message.role == "user":
            blocks.append(UserBlock(clean(message.content)))
            current = None
            continue
        if message.role not in ("assistant", "notice"):
            continue
        if current is None:
            current = AnswerState(status="complete")
            blocks.append(current)
        if message.role == "notice":
            current.parts.append(
                NoticePart(clean(message.content), "warning" if message.status == "cancelled" else "error")
            )
            if message.status in ("error", "cancelled"):
                current.status = message.status
            continue
        current.model = message.model or current.model
        if message.content:
            current.add_text(message.content, len(current.parts) + 1)
        for call in message.tool_calls:
            state = call.status if call.status in ("ok", "error") else "stopped"
            current.parts.append(
                CallLine(
                    call.call_id, call.name, call.arguments, state, error=clean(call.error) if call.error else None
                )
            )
        if not message.tool_calls:
            current.sources = list(message.sources or [])
            current.status = message.status
    return blocks


def source_groups(blocks: Iterable[Block]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(question, sources) of every answer that has sources, the latest first."""
    groups: list[tuple[str, list[dict[str, Any]]]] = []
    question = ""
    for block in blocks:
        if isinstance(block, UserBlock):
            question = block.text
        elif block.sources:
            groups.append((question, list(block.sources)))
    return groups[::-1]


# ── what a conversation runs with ──────────────────────────────────────────────
ChatContext = TurnContext  # the status line's model, KBs and retrieval policy (kbdesk.chat.service)


def chat_context(
    chat: ChatService,
    *,
    conversation_id: str | None = None,
    persona_id: str | None = None,
    project_id: str | None = None,
) -> ChatContext:
    """Blocking: the model a turn would use, the KBs it would search and how."""
    if conversation_id is not None:
        return chat.context(conversation_id)
    return chat.context(persona=persona_id, project=project_id)
