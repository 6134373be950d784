"""The parts of a chat turn (:mod:`kbdesk.chat.engine` puts them together): who answers
(:class:`ChatTarget`), how the turn consults its KBs (:class:`TurnPlan`), what it has
gathered so far (:class:`TurnState`), kbdesk's own search with the question, the tool
calls of a round, and how a turn that failed ends."""

from __future__ import annotations

import json
import logging
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.chat.budget import CHARS_PER_TOKEN, window_for
from kbdesk.chat.events import (
    Answer,
    AnswerStatus,
    ChatEvent,
    Notice,
    RetrievalHow,
    Source,
    ToolCallFinished,
    ToolCallInfo,
    ToolCallStarted,
    TurnFinished,
)
from kbdesk.chat.notes import require_chat
from kbdesk.chat.resolve import ActiveKB
from kbdesk.chat.retrieval import describe, ignores_forcing, policy_for
from kbdesk.chat.safety import one_line
from kbdesk.chat.tools import Outcome, Toolbox
from kbdesk.config import Config
from kbdesk.desk_api import DeskApi
from kbdesk.errors import KbdeskError
from kbdesk.filters import Filters
from kbdesk.providers.chat import CancelToken, ChatCancelled, ToolsRejectedError
from kbdesk.providers.context import context_window
from kbdesk.providers.errors import (
    ContextOverflowError,
    ProviderConfigError,
    ProviderError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderUnavailableError,
    SilentEndError,
)
from kbdesk.providers.settings import ProviderSettings
from kbdesk.store.api import ChatStore, Store
from kbdesk.store.chat import Conversation, Persona

log = logging.getLogger("kbdesk.chat")

MAX_ROUNDS = 5
"""Rounds of tool calls a turn allows before it stops asking."""


@dataclass(frozen=True)
class ChatTarget:
    provider: str
    settings: ProviderSettings
    model: str


def chat_target(
    config: Config, persona: Persona | None = None, *, model: str | None = None, provider: str | None = None
) -> ChatTarget:
    """The provider and model of a turn: explicit > persona > ``roles.chat`` in config.toml."""
    role = config.roles.chat
    model = model or (persona.model if persona else None) or role.model
    name = provider or (persona.provider if persona else None) or role.provider
    if not model:
        raise ProviderConfigError(
            "no chat model is set: choose one in Settings → Model roles, with "
            "'kbdesk model set chat PROVIDER MODEL', or give the persona a model"
        )
    if not name:
        if len(config.providers) != 1:
            raise ProviderConfigError(
                "no chat provider is set: set roles.chat.provider in config.toml "
                f"(providers: {', '.join(sorted(config.providers)) or 'none yet'})"
            )
        name = next(iter(config.providers))
    settings = config.providers.get(name)
    if settings is None:
        raise ProviderConfigError(
            f"no provider named '{name}' in config.toml; add it with 'kbdesk provider add {name} --kind …'",
            provider=name,
        )
    return ChatTarget(name, settings, model)


@dataclass
class TurnOptions:
    persona_id: str | None = None
    project_id: str | None = None
    model: str | None = None
    provider: str | None = None
    max_rounds: int = MAX_ROUNDS
    retrieval: str | None = None  # auto, tool, always, off; None: conversation > persona > config
    max_tokens: int | None = None  # None: persona > config
    filters: Filters | None = None  # this turn's own, laid over the conversation's default filters


@dataclass
class TurnState:
    """What the turn has gathered so far."""

    conversation_id: str
    model: str | None = None
    shown: list[str] = field(default_factory=list)  # the text of each round the user saw
    sources: dict[tuple[Any, ...], Source] = field(default_factory=dict)
    calls: list[ToolCallInfo] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    exchange: list[dict[str, Any]] = field(default_factory=list)  # this turn's tool messages, on the wire
    rounds: int = 0
    finish: str | None = None
    searched: str | None = None  # "tool" once kb_search ran, "auto" once kbdesk searched itself
    grounded: bool = False  # kbdesk has searched with the question this turn
    ground: list[str] = field(default_factory=list)  # what it searches with (.grounding)
    trimmed: int = 0
    attached: tuple[str, ...] = ()  # names of the KBs active for the turn
    fallback: list[str] = field(default_factory=list)  # KBs searched by keyword only (no query vector)
    unreached: list[str] = field(default_factory=list)  # remotes a search could not reach, with why
    filters: Filters = field(default_factory=Filters)  # what every search of the turn keeps to

    def note_fallback(self, names: list[str], unreached: Sequence[str] = ()) -> None:
        self.fallback.extend(n for n in names if n not in self.fallback)
        self.unreached.extend(u for u in unreached if u not in self.unreached)

    def add_sources(self, found: list[dict[str, Any]]) -> tuple[Source, ...]:
        out = []
        for item in found:
            key = (
                (item.get("note_id"),)
                if item.get("kind") == "note"
                else (item.get("document_id"), item.get("chunk_index"), item.get("source"), item.get("kb"))
            )
            if key not in self.sources:
                self.sources[key] = Source(n=len(self.sources) + 1, **item)
            out.append(self.sources[key])
        return tuple(out)

    def answer(
        self, message_id: str | None, status: AnswerStatus, error: str | None = None, retrieval: RetrievalHow = "none"
    ) -> Answer:
        return Answer(
            self.conversation_id,
            message_id,
            "\n\n".join(t for t in self.shown if t.strip()),
            status,
            self.model,
            tuple(self.sources.values()),
            tuple(self.calls),
            tuple(self.notices),
            error,
            self.rounds,
            self.finish,
            retrieval,
            self.trimmed,
        )


@dataclass
class TurnPlan:
    """How this turn consults its KBs and talks to its model."""

    policy: str
    searchable: list[ActiveKB]
    kb_tools: bool  # kb_search is offered
    force: bool  # round 1 is told to call kb_search
    window: int
    max_tokens: int
    window_known: bool = False  # the server said its window, or [chat] context_window did

    @property
    def result_chars(self) -> int:
        """What one tool result may take: a third of the window (whole results dropped beyond)."""
        return int(self.window * CHARS_PER_TOKEN / 3)


def plan_turn(
    desk: DeskApi,
    target: ChatTarget,
    conversation: Conversation,
    persona: Persona | None,
    options: TurnOptions,
    active: list[ActiveKB],
) -> TurnPlan:
    chat = desk.config.chat
    policy = policy_for(options.retrieval, conversation, persona, chat.retrieval)
    searchable = [a for a in active if a.searchable > 0]
    kb_tools = policy != "off" and bool(searchable)
    force = (
        policy == "auto" and kb_tools and not ignores_forcing(require_chat(desk.store), target.provider, target.model)
    )
    max_tokens = options.max_tokens or (persona.max_tokens if persona is not None else None) or chat.max_tokens
    said = context_window(target.provider, target.settings, target.model)
    window = window_for(said, chat.context_window)
    known = bool(said) or bool(chat.context_window)
    return TurnPlan(policy, searchable, kb_tools, force, window, int(max_tokens), known)


def how_retrieved(plan: TurnPlan | None, state: TurnState, cause: BaseException | None = None) -> RetrievalHow:
    if plan is None or not plan.searchable:
        return "none"
    if state.searched:
        return "tool" if state.searched == "tool" else "auto"
    if plan.policy == "off":
        return "off"
    if isinstance(cause, ChatCancelled):
        return "stopped"
    if isinstance(cause, ProviderUnavailableError) and cause.status is None:
        return "unreachable"  # no connection, or no answer in time
    if cause is not None:
        return "failed"
    return "skipped"


def forcing_failed(exc: ProviderError) -> bool:
    """Whether a failure of a round that forced ``kb_search`` is the forcing's: the server
    answered (an error status, an empty or malformed stream) rather than being unreachable,
    refusing the key, missing the model, or saying the prompt is too long."""
    if isinstance(exc, SilentEndError):
        return True
    if isinstance(exc, ContextOverflowError):
        return False  # the server said so: the length, not the forcing
    if isinstance(exc, ToolsRejectedError):
        return bool(exc.choice)
    if isinstance(exc, ProviderResponseError):
        return True
    if isinstance(exc, (ProviderRequestError, ProviderUnavailableError)):
        return exc.status is not None and exc.status not in (401, 403, 404, 408, 429)
    return False


def overflow_error(exc: ContextOverflowError, prompt_tokens: int, plan: TurnPlan) -> KbdeskError:
    """The error a turn ends with when its prompt alone did not fit: an overflow only when
    the server said so, or when the prompt really is over the window kbdesk knows."""
    if isinstance(exc, SilentEndError) and not (plan.window_known and prompt_tokens > plan.window):
        return ProviderResponseError(
            f"{one_line(exc, 400)}; the question is about {prompt_tokens} tokens, so the request itself "
            "may have failed: the server's log says why",
            provider=exc.provider,
            model=exc.model,
        )
    return ContextOverflowError(
        f"{one_line(exc, 400)} (the question and its passages alone are too long for this model: ask a "
        "shorter question, or raise [chat] context_window if the server allows more)",
        provider=exc.provider,
        model=exc.model,
        status=exc.status,
    )


def notice(state: TurnState, text: str, level: str = "info") -> Notice:
    state.notices.append(text)
    return Notice(text, level)  # type: ignore[arg-type]


def auto_search(
    desk: DeskApi, active: list[ActiveKB], state: TurnState, max_chars: int
) -> Generator[ChatEvent, None, str]:
    """Search ``active`` with the turn's own queries (the question; for a follow-up also
    its standalone form); yields the events, returns the reference block."""
    names = [a.kb.name for a in active]
    queries = [one_line(q, 1000) for q in state.ground] or [""]
    arguments: dict[str, Any] = {"query": queries[-1], "kbs": names}
    if len(queries) > 1:
        arguments["standalone"] = queries[0]
    if state.filters:
        arguments["filters"] = state.filters.to_dict()
    info = ToolCallInfo(
        f"auto-{len(state.calls) + 1}", "auto_search", json.dumps(arguments, ensure_ascii=False), round=state.rounds
    )
    yield ToolCallStarted(info)
    outcome: Outcome = Toolbox(desk, [a.kb for a in active], max_chars=max_chars, filters=state.filters).run_auto(
        queries
    )
    done = ToolCallInfo(info.call_id, info.name, info.arguments, outcome.ok, outcome.summary, outcome.error, info.round)
    state.calls.append(done)
    if outcome.ok:
        state.grounded = True
        state.note_fallback(outcome.keyword_fallback, outcome.unreached)
        if not state.searched:
            state.searched = "auto"
    yield ToolCallFinished(done, state.add_sources(outcome.sources))
    return outcome.content if outcome.ok else ""


def run_tools(
    store: ChatStore,
    toolbox: Toolbox,
    completion: Any,
    text: str,
    state: TurnState,
    cancel: CancelToken,
    ground: list[str],
) -> Iterator[ChatEvent]:
    calls = completion.tool_calls
    asked = store.add_message(
        state.conversation_id,
        "assistant",
        text,
        model=state.model,
        tool_calls=[(c.id, c.name, c.arguments) for c in calls],
    )
    state.exchange.append({"role": "assistant", "content": text or "", "tool_calls": [c.to_wire() for c in calls]})
    for call in calls:
        cancel.check()
        info = ToolCallInfo(call.id, one_line(call.name, 80), call.arguments, round=state.rounds)
        yield ToolCallStarted(info)
        grounding = ground if call.name == "kb_search" and not state.grounded else []
        outcome = toolbox.run(call.name, call.arguments, ground=grounding)
        if call.name == "kb_search" and outcome.ok:
            state.searched = "tool"
            state.grounded = state.grounded or bool(grounding)
            state.note_fallback(outcome.keyword_fallback, outcome.unreached)
        store.add_message(state.conversation_id, "tool", outcome.content, tool_call_id=call.id)
        store.set_tool_call_status(asked.id, call.id, "ok" if outcome.ok else "error", outcome.error)
        state.exchange.append({"role": "tool", "tool_call_id": call.id, "content": outcome.content})
        done = ToolCallInfo(
            info.call_id, info.name, info.arguments, outcome.ok, outcome.summary, outcome.error, info.round
        )
        state.calls.append(done)
        yield ToolCallFinished(done, state.add_sources(outcome.sources))


def finish_failed(
    store: ChatStore,
    state: TurnState,
    round_text: list[str],
    status: AnswerStatus,
    error: str,
    plan: TurnPlan | None,
    cause: BaseException | None = None,
) -> Iterator[ChatEvent]:
    partial = "".join(round_text)
    message_id = None
    if partial.strip():
        state.shown.append(partial)
        message_id = store.add_message(
            state.conversation_id,
            "assistant",
            partial,
            status=status,
            model=state.model,
            sources=[s.to_dict() for s in state.sources.values()],
        ).id
    store.add_message(state.conversation_id, "notice", error, status=status)
    yield notice(state, error, "warning" if status == "cancelled" else "error")
    how = how_retrieved(plan, state, cause)
    if state.attached:
        names = [a.kb.name for a in plan.searchable] if plan and plan.searchable else list(state.attached)
        yield describe(how, names, state.fallback, state.filters, state.unreached)
    yield TurnFinished(state.answer(message_id, status, error, retrieval=how))


def log_usage(store: Store, target: ChatTarget, completion: Any) -> None:
    usage = completion.usage if completion is not None else {}
    try:
        store.log_usage(
            "chat",
            provider=target.provider,
            model=target.model,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            total_tokens=usage.get("total_tokens"),
        )
    except KbdeskError as exc:  # the answer matters more than its bookkeeping
        log.warning("chat usage not logged: %s", exc)
