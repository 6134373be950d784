"""What a chat turn tells its face (chat screen, ``kbdesk ask``, a library user) as it runs.

A turn is a sequence of events ending in exactly one :class:`TurnFinished`::

    TurnStarted → (TextDelta | ToolCallStarted | ToolCallFinished | Notice | Waiting | Retrieval)*
                → TurnFinished

Exactly one :class:`Retrieval` comes before :class:`TurnFinished` when KBs were active:
it says whether they were searched this turn (the user always sees it).

Every string in an event is already safe to show: control characters and terminal
escapes are stripped (it is still plain text, never markup). Events are plain frozen
data, so a thread worker can hand them to a UI thread as they are.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

AnswerStatus = Literal["complete", "error", "cancelled"]
# how the active KBs were consulted in a turn: "tool" (the model called kb_search),
# "auto" (kbdesk searched them itself: the model did not, or policy "always"),
# "skipped" (policy "tool" and the model did not search), "off" (policy off),
# "none" (no KB was active); a turn that ended before any search: "unreachable" (the
# model's server could not be reached), "stopped" (the user stopped it), "failed" (it
# failed otherwise)
RetrievalHow = Literal["tool", "auto", "skipped", "off", "none", "unreachable", "stopped", "failed"]


@dataclass(frozen=True)
class Source:
    """One passage an answer drew on: a KB chunk (``kind="chunk"``) or a note."""

    n: int
    """Its number in the answer's source list, from 1."""
    kind: Literal["chunk", "note"]
    source: str
    """The document's filename, or the note's title."""
    kb: str | None = None
    kb_id: str | None = None
    document_id: str | None = None
    chunk_index: int | None = None
    note_id: str | None = None
    page: int | None = None
    heading: str | None = None
    similarity: float | None = None
    via: str = "kb_search"
    """kb_search, auto_search or note_search."""

    @property
    def label(self) -> str:
        """``guide.md, p. 3 — Docs`` / ``guide.md § Setup › Backups — Docs`` / ``note: title``."""
        if self.kind == "note":
            return f"note: {self.source}"
        where = f", p. {self.page}" if self.page else (f" § {self.heading}" if self.heading else "")
        return f"{self.source}{where} — {self.kb}"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["label"] = self.label
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class ToolCallInfo:
    call_id: str
    name: str
    arguments: str
    ok: bool = True
    summary: str = ""
    """One line for the user: "3 results from Docs, Wiki" or what went wrong."""
    error: str | None = None
    round: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Answer:
    """The outcome of one turn, as saved in the conversation."""

    conversation_id: str
    message_id: str | None
    """The saved assistant message (None when the turn failed before any answer)."""
    text: str
    status: AnswerStatus
    model: str | None = None
    sources: tuple[Source, ...] = ()
    tool_calls: tuple[ToolCallInfo, ...] = ()
    notices: tuple[str, ...] = ()
    error: str | None = None
    rounds: int = 0
    finish_reason: str | None = None
    """The server's finish_reason of the last round: "stop", "length" (cut at the
    length limit: see :attr:`cut`), "tool_calls", or None when it did not say."""
    retrieval: RetrievalHow = "none"
    trimmed: int = 0
    """Earlier questions left out of the prompt to fit the model's context window."""

    @property
    def cut(self) -> bool:
        """The answer was cut at the length limit (max_tokens)."""
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "message_id": self.message_id,
            "answer": self.text,
            "status": self.status,
            "model": self.model,
            "error": self.error,
            "finish_reason": self.finish_reason,
            "cut": self.cut,
            "retrieval": self.retrieval,
            "trimmed": self.trimmed,
            "rounds": self.rounds,
            "notices": list(self.notices),
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "sources": [s.to_dict() for s in self.sources],
        }


@dataclass(frozen=True)
class TurnStarted:
    conversation_id: str
    user_message_id: str
    model: str
    provider: str
    knowledge_bases: tuple[str, ...] = ()
    """Names of the KBs active for the turn (resolution chain)."""


@dataclass(frozen=True)
class TextDelta:
    text: str
    round: int = 1


@dataclass(frozen=True)
class ToolCallStarted:
    call: ToolCallInfo


@dataclass(frozen=True)
class ToolCallFinished:
    call: ToolCallInfo
    sources: tuple[Source, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Notice:
    """Something the user should know: a fallback taken, a limit hit, a failure."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True)
class Waiting:
    """The model has not said anything for ``seconds`` (reading a long prompt, loading):
    the turn is still alive and can be stopped. Sent about once a second while waiting."""

    seconds: float
    round: int = 1


@dataclass(frozen=True)
class Retrieval:
    """Whether the active KBs were searched this turn, and how (see :data:`RetrievalHow`)."""

    how: RetrievalHow
    knowledge_bases: tuple[str, ...] = ()
    text: str = ""
    """One line for the user: "searched Docs (kb_search)", "the model did not search Docs"."""
    keyword_only: tuple[str, ...] = ()
    """KBs searched by keyword alone: the question could not be embedded for them."""


@dataclass(frozen=True)
class TurnFinished:
    answer: Answer


ChatEvent = TurnStarted | TextDelta | ToolCallStarted | ToolCallFinished | Notice | Waiting | Retrieval | TurnFinished
