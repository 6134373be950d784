"""One chat turn: the question, the tool loop, the streamed answer, all saved as it goes.

:func:`run_turn` is a generator of :mod:`~kbdesk.chat.events`; it never raises for
anything that can go wrong with the model, the server or a tool — each failure ends
the turn with a :class:`Notice`, a ``notice`` row in the conversation and a
:class:`TurnFinished` whose answer has ``status="error"`` (or ``"cancelled"``).

The loop: send the conversation with the tools; stream the text; when the model asks
for tools, save its request, run each tool, save and send each result as a
``role: "tool"`` message with the call's ``tool_call_id``, and ask again — at most
``max_rounds`` times. A model that rejects tools gets the question again without them,
with the top passages of the active KBs retrieved by kbdesk itself (``auto_search``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kbdesk.chat.events import (
    Answer, ChatEvent, Notice, Source, TextDelta, ToolCallFinished, ToolCallInfo, ToolCallStarted, TurnFinished,
    TurnStarted,
)
from kbdesk.chat.notes import NoteService
from kbdesk.chat.prompt import history, system_prompt
from kbdesk.chat.resolve import ActiveKB, kb_hint, resolve_kbs
from kbdesk.chat.safety import clean, one_line
from kbdesk.chat.tools import Outcome, Toolbox
from kbdesk.config import Config
from kbdesk.errors import KbdeskError
from kbdesk.providers.chat import CancelToken, ChatCancelled, ChatClient, ToolsRejectedError
from kbdesk.providers.errors import ProviderConfigError
from kbdesk.providers.settings import ProviderSettings

log = logging.getLogger("kbdesk.chat")

MAX_ROUNDS = 5
HISTORY_MESSAGES = 200


@dataclass(frozen=True)
class ChatTarget:
    provider: str
    settings: ProviderSettings
    model: str


def chat_target(config: Config, persona: Any = None, *, model: str | None = None,
                provider: str | None = None) -> ChatTarget:
    """The provider and model of a turn: explicit > persona > ``roles.chat`` in config.toml."""
    role = config.roles.chat
    model = model or (persona.model if persona else None) or role.model
    name = provider or (persona.provider if persona else None) or role.provider
    if not model:
        raise ProviderConfigError("no chat model is set: set roles.chat.model in config.toml, give the persona "
                                  "a model, or pass --model")
    if not name:
        if len(config.providers) != 1:
            raise ProviderConfigError("no chat provider is set: set roles.chat.provider in config.toml "
                                      f"(providers: {', '.join(sorted(config.providers)) or 'none yet'})")
        name = next(iter(config.providers))
    settings = config.providers.get(name)
    if settings is None:
        raise ProviderConfigError(f"no provider named '{name}' in config.toml; add it with "
                                  f"'kbdesk provider add {name} --kind …'", provider=name)
    return ChatTarget(name, settings, model)


@dataclass
class TurnOptions:
    persona_id: str | None = None
    project_id: str | None = None
    model: str | None = None
    provider: str | None = None
    max_rounds: int = MAX_ROUNDS


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

    def add_sources(self, found: list[dict[str, Any]]) -> tuple[Source, ...]:
        out = []
        for item in found:
            key = (item.get("note_id"),) if item.get("kind") == "note" else \
                (item.get("document_id"), item.get("chunk_index"), item.get("source"), item.get("kb"))
            if key not in self.sources:
                self.sources[key] = Source(n=len(self.sources) + 1, **item)
            out.append(self.sources[key])
        return tuple(out)

    def answer(self, message_id: str | None, status: str, error: str | None = None) -> Answer:
        return Answer(self.conversation_id, message_id, "\n\n".join(t for t in self.shown if t.strip()), status,
                      self.model, tuple(self.sources.values()), tuple(self.calls), tuple(self.notices), error,
                      self.rounds)


def run_turn(desk: Any, conversation: Any, text: str, options: TurnOptions | None = None,
             cancel: CancelToken | None = None) -> Iterator[ChatEvent]:
    """Ask ``text`` in ``conversation`` (already saved); yields events, ends with TurnFinished."""
    options = options or TurnOptions()
    cancel = cancel or CancelToken()
    store = desk.store
    state = _State(conversation.id)
    previous = store.messages(conversation.id, limit=HISTORY_MESSAGES)
    user = store.add_message(conversation.id, "user", text)
    if not conversation.title:
        store.update_conversation(conversation.id, title=one_line(text, 60))
    round_text: list[str] = []
    try:
        persona = store.find_persona(options.persona_id) if options.persona_id else None
        target = chat_target(desk.config, persona, model=options.model, provider=options.provider)
        state.model = target.model
        active = resolve_kbs(store, conversation_id=conversation.id, persona_id=options.persona_id,
                             project_id=options.project_id)
        notes = NoteService(desk) if store.note_count() else None
        toolbox = Toolbox(desk, [a.kb for a in active], notes=notes)
        yield TurnStarted(conversation.id, user.id, target.model, target.provider,
                          tuple(a.kb.name for a in active))
        reference = ""
        auto = [a for a in active if a.auto_search]
        if auto:
            reference = yield from _auto_search(desk, auto, text, state)
        tools_ok = True
        with ChatClient(target.provider, target.settings) as client:
            while True:
                state.rounds += 1
                cancel.check()
                system = system_prompt(persona.system_prompt if persona else "", kb_hint(active, tools=tools_ok),
                                       notes=notes is not None and tools_ok, reference=reference)
                wire = ([{"role": "system", "content": system}] if system else []) + \
                    history(previous, tools=tools_ok) + [{"role": "user", "content": text}] + state.exchange
                tools = toolbox.definitions() if tools_ok else None
                round_text = []
                completion = None
                try:
                    for item in client.stream(wire, target.model, tools=tools, cancel=cancel):
                        if isinstance(item, str):
                            piece = clean(item)
                            round_text.append(piece)
                            yield TextDelta(piece, state.rounds)
                        else:
                            completion = item
                            if completion.content and not round_text:  # a server that did not stream
                                round_text.append(clean(completion.content))
                                yield TextDelta(round_text[0], state.rounds)
                except ToolsRejectedError as exc:
                    if state.exchange or not tools:
                        raise
                    tools_ok, state.rounds = False, state.rounds - 1
                    searched = {a.kb.id for a in auto}
                    rest = [a for a in active if a.kb.id not in searched]
                    what = "kbdesk searched the knowledge bases itself" if rest else "answering without tools"
                    yield _notice(state, f"{target.model} does not accept tools ({one_line(exc, 200)}); {what}",
                                  "warning")
                    if rest:
                        found = yield from _auto_search(desk, rest, text, state)
                        reference = "\n\n".join(r for r in (reference, found) if r)
                    continue
                _log_usage(store, target, completion)
                final = "".join(round_text)
                state.shown.append(final)
                round_text = []  # saved below or with the tool calls, not again by _finish
                if completion is not None and completion.tool_calls and tools:
                    if state.rounds >= options.max_rounds:
                        yield _notice(state, f"the model still asked for tools after {options.max_rounds} rounds; "
                                      "stopped here", "warning")
                        if not "".join(state.shown).strip():
                            raise _Stop(f"no answer after {options.max_rounds} rounds of tool calls")
                        break
                    yield from _run_tools(store, toolbox, completion, final, state, cancel)
                    continue
                break
        if not "".join(state.shown).strip():
            yield _notice(state, "the model returned an empty answer", "warning")
        message = store.add_message(conversation.id, "assistant", final, model=target.model,
                                    sources=[s.to_dict() for s in state.sources.values()])
        yield TurnFinished(state.answer(message.id, "complete"))
    except ChatCancelled:
        yield from _finish(store, state, round_text, "cancelled", "stopped by the user")
    except (KbdeskError, _Stop) as exc:
        yield from _finish(store, state, round_text, "error", one_line(exc, 600))
    except Exception as exc:  # a bug: still a message, never a traceback in the conversation
        log.debug("chat turn failed", exc_info=True)
        yield from _finish(store, state, round_text, "error", f"internal error: {type(exc).__name__}: "
                                                               f"{one_line(exc, 300)}")


class _Stop(Exception):
    pass


def _notice(state: _State, text: str, level: str = "info") -> Notice:
    state.notices.append(text)
    return Notice(text, level)  # type: ignore[arg-type]


def _auto_search(desk: Any, active: list[ActiveKB], text: str, state: _State) -> Iterator[ChatEvent]:
    """Search ``active`` for the question; yields the events, returns the reference block."""
    names = [a.kb.name for a in active]
    info = ToolCallInfo(f"auto-{len(state.calls) + 1}", "auto_search",
                        json.dumps({"query": one_line(text, 1000), "kbs": names}, ensure_ascii=False),
                        round=state.rounds)
    yield ToolCallStarted(info)
    outcome: Outcome = Toolbox(desk, [a.kb for a in active]).run_auto(one_line(text, 1000))
    done = ToolCallInfo(info.call_id, info.name, info.arguments, outcome.ok, outcome.summary, outcome.error,
                        info.round)
    state.calls.append(done)
    yield ToolCallFinished(done, state.add_sources(outcome.sources))
    return outcome.content if outcome.ok else ""


def _run_tools(store: Any, toolbox: Toolbox, completion: Any, text: str, state: _State,
               cancel: CancelToken) -> Iterator[ChatEvent]:
    calls = completion.tool_calls
    asked = store.add_message(state.conversation_id, "assistant", text, model=state.model,
                              tool_calls=[(c.id, c.name, c.arguments) for c in calls])
    state.exchange.append({"role": "assistant", "content": text or None, "tool_calls": [c.to_wire() for c in calls]})
    for call in calls:
        cancel.check()
        info = ToolCallInfo(call.id, one_line(call.name, 80), call.arguments, round=state.rounds)
        yield ToolCallStarted(info)
        outcome = toolbox.run(call.name, call.arguments)
        store.add_message(state.conversation_id, "tool", outcome.content, tool_call_id=call.id)
        store.set_tool_call_status(asked.id, call.id, "ok" if outcome.ok else "error", outcome.error)
        state.exchange.append({"role": "tool", "tool_call_id": call.id, "content": outcome.content})
        done = ToolCallInfo(info.call_id, info.name, info.arguments, outcome.ok, outcome.summary, outcome.error,
                            info.round)
        state.calls.append(done)
        yield ToolCallFinished(done, state.add_sources(outcome.sources))


def _finish(store: Any, state: _State, round_text: list[str], status: str, error: str) -> Iterator[ChatEvent]:
    partial = "".join(round_text)
    message_id = None
    if partial.strip():
        state.shown.append(partial)
        message_id = store.add_message(state.conversation_id, "assistant", partial, status=status,
                                       model=state.model,
                                       sources=[s.to_dict() for s in state.sources.values()]).id
    store.add_message(state.conversation_id, "notice", error, status=status)
    yield _notice(state, error, "warning" if status == "cancelled" else "error")
    yield TurnFinished(state.answer(message_id, status, error))


def _log_usage(store: Any, target: ChatTarget, completion: Any) -> None:
    usage = completion.usage if completion is not None else {}
    try:
        store.log_usage("chat", provider=target.provider, model=target.model,
                        prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                        total_tokens=usage.get("total_tokens"))
    except KbdeskError as exc:  # the answer matters more than its bookkeeping
        log.warning("chat usage not logged: %s", exc)
