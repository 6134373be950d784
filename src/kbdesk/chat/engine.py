"""One chat turn: the question, the tool loop, the streamed answer, all saved as it goes.

:func:`run_turn` is a generator of :mod:`~kbdesk.chat.events`; it never raises for
anything that can go wrong with the model, the server or a tool — each failure ends
the turn with a :class:`Notice`, a ``notice`` row in the conversation and a
:class:`TurnFinished` whose answer has ``status="error"`` (or ``"cancelled"``).

The loop: plan the turn (retrieval policy, :mod:`.retrieval`; the model's context
window and answer length, :mod:`.budget`); fit the conversation into the window; send
it with the tools; stream the text (:mod:`.rounds`: "waiting for the model" while it
is silent, stopped at once on cancel); when the model asks for tools, save its
request, run each tool, save and send each result as a ``role: "tool"`` message with
the call's ``tool_call_id``, and ask again — at most ``max_rounds`` times. Under the
``auto`` policy round 1 tells the model to call ``kb_search``; a model that answers
instead gets the KBs searched by kbdesk and is asked again with the passages. A model
that rejects tools gets the question again without them, with the passages. Before the
end, one :class:`Retrieval` says whether the KBs were searched.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from kbdesk.chat.budget import CHARS_PER_TOKEN, fit, window_for
from kbdesk.chat.events import (
    Answer,
    AnswerStatus,
    ChatEvent,
    Notice,
    RetrievalHow,
    Source,
    TextDelta,
    ToolCallFinished,
    ToolCallInfo,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Waiting,
)
from kbdesk.chat.grounding import grounding_queries
from kbdesk.chat.notes import NoteService
from kbdesk.chat.prompt import system_prompt
from kbdesk.chat.resolve import ActiveKB, kb_hint, resolve_kbs
from kbdesk.chat.retrieval import describe, ignores_forcing, policy_for, remember_ignores_forcing
from kbdesk.chat.rounds import stream_round
from kbdesk.chat.safety import clean, one_line
from kbdesk.chat.tools import Outcome, Toolbox
from kbdesk.config import Config
from kbdesk.errors import KbdeskError
from kbdesk.providers.chat import CancelToken, ChatCancelled, ChatClient, ToolsRejectedError
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

log = logging.getLogger("kbdesk.chat")

MAX_ROUNDS = 5
HISTORY_MESSAGES = 200


@dataclass(frozen=True)
class ChatTarget:
    provider: str
    settings: ProviderSettings
    model: str


def chat_target(
    config: Config, persona: Any = None, *, model: str | None = None, provider: str | None = None
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


@dataclass
class _State:
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

    def note_fallback(self, names: list[str]) -> None:
        self.fallback.extend(n for n in names if n not in self.fallback)

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
class _Plan:
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


def run_turn(
    desk: Any, conversation: Any, text: str, options: TurnOptions | None = None, cancel: CancelToken | None = None
) -> Iterator[ChatEvent]:
    """Ask ``text`` in ``conversation`` (already saved); yields events, ends with TurnFinished."""
    options = options or TurnOptions()
    cancel = cancel or CancelToken()
    store = desk.store
    state = _State(conversation.id)
    previous = store.messages(conversation.id, limit=HISTORY_MESSAGES)
    state.ground = grounding_queries(text, previous)
    user = store.add_message(conversation.id, "user", text)
    if not conversation.title:
        store.update_conversation(conversation.id, title=one_line(text, 60))
    round_text: list[str] = []
    plan: _Plan | None = None
    try:
        persona = store.find_persona(options.persona_id) if options.persona_id else None
        target = chat_target(desk.config, persona, model=options.model, provider=options.provider)
        state.model = target.model
        active = resolve_kbs(
            store, conversation_id=conversation.id, persona_id=options.persona_id, project_id=options.project_id
        )
        notes = NoteService(desk) if store.note_count() else None
        state.attached = tuple(a.kb.name for a in active)
        yield TurnStarted(conversation.id, user.id, target.model, target.provider, state.attached)
        with ChatClient(target.provider, target.settings) as client:
            plan = _plan(desk, target, conversation, persona, options, active)
            toolbox = Toolbox(
                desk, [a.kb for a in plan.searchable] if plan.kb_tools else [], notes=notes, max_chars=plan.result_chars
            )
            reference = ""
            first = [a for a in plan.searchable if a.auto_search] if plan.policy != "off" else []
            if plan.policy == "always" or (plan.policy == "auto" and plan.kb_tools and not plan.force):
                first = plan.searchable
            if first:
                reference = yield from _auto_search(desk, first, state, plan.result_chars)
            tools_ok = True
            retried_overflow = False
            while True:
                state.rounds += 1
                cancel.check()
                hint = kb_hint(plan.searchable if plan.kb_tools else [], tools=tools_ok)
                system = system_prompt(
                    persona.system_prompt if persona else "",
                    hint,
                    notes=notes is not None and tools_ok,
                    reference=reference,
                )
                tools = toolbox.definitions() if tools_ok else None
                fitted = fit(
                    system,
                    previous,
                    text,
                    state.exchange,
                    tools,
                    window=plan.window,
                    max_tokens=plan.max_tokens,
                    use_tools=tools_ok,
                    history_share=0.0 if retried_overflow else 1.0,
                )
                state.trimmed = max(state.trimmed, fitted.trimmed)
                forcing = plan.force and state.rounds == 1 and bool(tools)
                round_text = []
                completion = None
                options_wire: dict[str, Any] = {"max_tokens": fitted.max_tokens, "wait_limit": desk.config.chat.timeout}
                if forcing:
                    # a named function is the widest way to force a call; llama.cpp's llama-server
                    # reads a named choice as "auto", but honours "required" (with only kb_search offered)
                    if target.settings.kind == "llamacpp":
                        options_wire["tool_choice"] = "required"
                        tools = [t for t in tools or [] if t["function"]["name"] == "kb_search"]
                    else:
                        options_wire["tool_choice"] = "kb_search"
                try:
                    for item in stream_round(
                        client,
                        fitted.messages,
                        target.model,
                        tools=tools,
                        cancel=cancel,
                        round_no=state.rounds,
                        **options_wire,
                    ):
                        if isinstance(item, Waiting):
                            yield item
                        elif isinstance(item, str):
                            piece = clean(item)
                            round_text.append(piece)
                            if not forcing:
                                yield TextDelta(piece, state.rounds)
                        else:
                            completion = item
                            if completion.content and not round_text:  # a server that did not stream
                                round_text.append(clean(completion.content))
                                if not forcing:
                                    yield TextDelta(round_text[0], state.rounds)
                except ProviderError as exc:
                    if forcing and forcing_failed(exc):
                        # the server fails on a forced tool choice (llama-cpp-python asserts inside its
                        # stream on "required" and answers an empty 200; others a bare 500): asked again
                        # once without forcing, with the passages kbdesk found; remembered for this model
                        state.rounds -= 1
                        log.info("forcing kb_search failed on %s/%s: %s", target.provider, target.model, exc)
                        remember_ignores_forcing(store, target.provider, target.model)
                        plan.force = False
                        why = "its server answered with an empty stream" if isinstance(exc, SilentEndError) else exc
                        yield _notice(
                            state,
                            f"{target.model} could not be told to search ({one_line(why, 160)}); kbdesk "
                            "searched with the question and asked again without forcing (remembered for "
                            "this model)",
                            "info",
                        )
                        reference = yield from _search_instead(desk, plan, state, reference)
                        continue
                    if isinstance(exc, ContextOverflowError):
                        if retried_overflow or (not previous and not state.exchange):
                            raise _overflow(exc, fitted.prompt_tokens, plan) from None
                        retried_overflow, state.rounds = True, state.rounds - 1
                        said = (
                            "the model's server ended the answer without a word, as it does when a prompt does "
                            "not fit its context"
                            if isinstance(exc, SilentEndError)
                            else "the conversation did not fit the model's context"
                        )
                        yield _notice(state, f"{said}: asking again with the earlier questions left out", "warning")
                        continue
                    if not isinstance(exc, ToolsRejectedError):
                        raise
                    if state.exchange or not tools:
                        raise
                    state.rounds -= 1
                    tools_ok = False
                    searched = {a.kb.id for a in first}
                    rest = [a for a in plan.searchable if a.kb.id not in searched] if plan.kb_tools else []
                    what = "kbdesk searched the knowledge bases itself" if rest else "answering without tools"
                    yield _notice(
                        state, f"{target.model} does not accept tools ({one_line(exc, 200)}); {what}", "warning"
                    )
                    if rest:
                        found = yield from _auto_search(desk, rest, state, plan.result_chars)
                        reference = "\n\n".join(r for r in (reference, found) if r)
                    continue
                _log_usage(store, target, completion)
                state.finish = completion.finish if completion is not None else None
                final = "".join(round_text)
                calls = completion.tool_calls if completion is not None else []
                if forcing and not calls:
                    # told to call kb_search, it answered instead: search for it and ask again
                    remember_ignores_forcing(store, target.provider, target.model)
                    plan.force = False
                    state.rounds -= 1
                    reference = yield from _search_instead(desk, plan, state, reference)
                    continue
                if forcing and final:
                    yield TextDelta(final, state.rounds)  # what it said beside its tool call
                state.shown.append(final)
                round_text = []  # saved below or with the tool calls, not again by _finish
                if calls and tools:
                    if state.rounds >= options.max_rounds:
                        yield _notice(
                            state,
                            f"the model still asked for tools after {options.max_rounds} rounds; stopped here",
                            "warning",
                        )
                        if not "".join(state.shown).strip():
                            raise _Stop(f"no answer after {options.max_rounds} rounds of tool calls")
                        break
                    ground = state.ground if plan.policy == "auto" and not state.grounded else []
                    yield from _run_tools(store, toolbox, completion, final, state, cancel, ground)
                    continue
                break
        if not "".join(state.shown).strip():
            yield _notice(state, "the model returned an empty answer", "warning")
        if state.finish == "length":
            yield _notice(
                state,
                f"the answer was cut at the length limit ({plan.max_tokens} tokens; "
                "[chat] max_tokens or the persona's)",
                "warning",
            )
        if state.trimmed:
            yield _notice(
                state,
                f"{state.trimmed} earlier question{'' if state.trimmed == 1 else 's'} left out "
                "to fit the model's context",
                "info",
            )
        how = _how(plan, state)
        if state.attached:
            yield describe(how, [a.kb.name for a in plan.searchable] or list(state.attached), state.fallback)
        message = store.add_message(
            conversation.id,
            "assistant",
            final,
            model=target.model,
            sources=[s.to_dict() for s in state.sources.values()],
        )
        yield TurnFinished(state.answer(message.id, "complete", retrieval=how))
    except ChatCancelled as exc:
        yield from _finish(store, state, round_text, "cancelled", "stopped by the user", plan, exc)
    except (KbdeskError, _Stop) as exc:
        yield from _finish(store, state, round_text, "error", one_line(exc, 600), plan, exc)
    except Exception as exc:  # a bug: still a message, never a traceback in the conversation
        log.debug("chat turn failed", exc_info=True)
        yield from _finish(
            store, state, round_text, "error", f"internal error: {type(exc).__name__}: {one_line(exc, 300)}", plan, exc
        )


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


def _overflow(exc: ContextOverflowError, prompt_tokens: int, plan: _Plan) -> KbdeskError:
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


def _plan(
    desk: Any, target: ChatTarget, conversation: Any, persona: Any, options: TurnOptions, active: list[ActiveKB]
) -> _Plan:
    chat = desk.config.chat
    policy = policy_for(options.retrieval, conversation, persona, chat.retrieval)
    searchable = [a for a in active if a.searchable > 0]
    kb_tools = policy != "off" and bool(searchable)
    force = policy == "auto" and kb_tools and not ignores_forcing(desk.store, target.provider, target.model)
    max_tokens = options.max_tokens or (persona.max_tokens if persona is not None else None) or chat.max_tokens
    said = context_window(target.provider, target.settings, target.model)
    window = window_for(said, chat.context_window)
    known = bool(said) or bool(chat.context_window)
    return _Plan(policy, searchable, kb_tools, force, window, int(max_tokens), known)


def _how(plan: _Plan | None, state: _State, cause: BaseException | None = None) -> RetrievalHow:
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


def _search_instead(desk: Any, plan: _Plan, state: _State, reference: str) -> Generator[ChatEvent, None, str]:
    """The model did not search (or cannot be told to): kbdesk searches with the question."""
    found = yield from _auto_search(desk, plan.searchable, state, plan.result_chars)
    return "\n\n".join(r for r in (reference, found) if r)


class _Stop(Exception):
    pass


def _notice(state: _State, text: str, level: str = "info") -> Notice:
    state.notices.append(text)
    return Notice(text, level)  # type: ignore[arg-type]


def _auto_search(desk: Any, active: list[ActiveKB], state: _State, max_chars: int) -> Generator[ChatEvent, None, str]:
    """Search ``active`` with the turn's own queries (the question; for a follow-up also
    its standalone form); yields the events, returns the reference block."""
    names = [a.kb.name for a in active]
    queries = [one_line(q, 1000) for q in state.ground] or [""]
    arguments: dict[str, Any] = {"query": queries[-1], "kbs": names}
    if len(queries) > 1:
        arguments["standalone"] = queries[0]
    info = ToolCallInfo(
        f"auto-{len(state.calls) + 1}", "auto_search", json.dumps(arguments, ensure_ascii=False), round=state.rounds
    )
    yield ToolCallStarted(info)
    outcome: Outcome = Toolbox(desk, [a.kb for a in active], max_chars=max_chars).run_auto(queries)
    done = ToolCallInfo(info.call_id, info.name, info.arguments, outcome.ok, outcome.summary, outcome.error, info.round)
    state.calls.append(done)
    if outcome.ok:
        state.grounded = True
        state.note_fallback(outcome.keyword_fallback)
        if not state.searched:
            state.searched = "auto"
    yield ToolCallFinished(done, state.add_sources(outcome.sources))
    return outcome.content if outcome.ok else ""


def _run_tools(
    store: Any,
    toolbox: Toolbox,
    completion: Any,
    text: str,
    state: _State,
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
            state.note_fallback(outcome.keyword_fallback)
        store.add_message(state.conversation_id, "tool", outcome.content, tool_call_id=call.id)
        store.set_tool_call_status(asked.id, call.id, "ok" if outcome.ok else "error", outcome.error)
        state.exchange.append({"role": "tool", "tool_call_id": call.id, "content": outcome.content})
        done = ToolCallInfo(
            info.call_id, info.name, info.arguments, outcome.ok, outcome.summary, outcome.error, info.round
        )
        state.calls.append(done)
        yield ToolCallFinished(done, state.add_sources(outcome.sources))


def _finish(
    store: Any,
    state: _State,
    round_text: list[str],
    status: AnswerStatus,
    error: str,
    plan: _Plan | None,
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
    yield _notice(state, error, "warning" if status == "cancelled" else "error")
    how = _how(plan, state, cause)
    if state.attached:
        names = [a.kb.name for a in plan.searchable] if plan and plan.searchable else list(state.attached)
        yield describe(how, names, state.fallback)
    yield TurnFinished(state.answer(message_id, status, error, retrieval=how))


def _log_usage(store: Any, target: ChatTarget, completion: Any) -> None:
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
