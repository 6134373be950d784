"""One chat turn: the question, the tool loop, the streamed answer, all saved as it goes.

:func:`run_turn` is a generator of :mod:`~kbdesk.chat.events`; it never raises for
anything that can go wrong with the model, the server or a tool — each failure ends
the turn with a :class:`Notice`, a ``notice`` row in the conversation and a
:class:`TurnFinished` whose answer has ``status="error"`` (or ``"cancelled"``).

A turn, step by step (:class:`_Turn`): save the question and find who answers and which
KBs it has (:meth:`~_Turn.start`); plan how it consults them (retrieval policy,
:mod:`.retrieval`; the model's context window and answer length, :mod:`.budget`) and,
where the plan says so, search them with the question first (:meth:`~_Turn.search_first`);
then rounds (:meth:`~_Turn.round`): fit the conversation into the window, send it with
the tools, stream the text (:mod:`.rounds`: "waiting for the model" while it is silent,
stopped at once on cancel). A round that fails is recovered where it can be
(:meth:`~_Turn.recover`): a forced tool choice the server cannot take is asked again
without forcing, with the passages kbdesk found; a conversation too long for the window
again without its earlier questions; a model that rejects tools again without them. A
round that asks for tools gets them run, each result saved and sent back as a ``role:
"tool"`` message with the call's ``tool_call_id`` (:meth:`~_Turn.answered`), at most
``max_rounds`` times — or, for a server whose chat template does not render the tool
role (probed once per provider and model, :mod:`.tool_results`), in a user message
holding the results as data. A round whose stream ends without ``finish_reason`` was
interrupted: the turn ends there, its partial answer kept and marked. Tools are offered
with ``tool_choice: "auto"`` said; a model that then answers nothing is asked again with
``"none"`` (:meth:`~_Turn.auto_failed`). Under the ``auto`` policy round 1 tells the
model to call ``kb_search``, and kbdesk's own passages for the question go with the model's search
(:mod:`.grounding`); a model that answers instead gets the KBs searched by kbdesk and
is asked again. At the end (:meth:`~_Turn.conclude`), one :class:`Retrieval` says
whether the KBs were searched.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator
from typing import Any

from kbdesk.chat.budget import Fitted, fit
from kbdesk.chat.events import ChatEvent, TextDelta, TurnFinished, TurnStarted, Waiting
from kbdesk.chat.grounding import grounding_queries
from kbdesk.chat.notes import NoteService, require_chat
from kbdesk.chat.prompt import system_prompt
from kbdesk.chat.resolve import ActiveKB, kb_hint, resolve_kbs
from kbdesk.chat.retrieval import (
    auto_fails,
    describe,
    filters_for,
    remember_auto_fails,
    remember_ignores_forcing,
)
from kbdesk.chat.rounds import stream_round
from kbdesk.chat.safety import clean, one_line
from kbdesk.chat.tool_results import as_data, has_tool_results, verdict
from kbdesk.chat.tools import Toolbox
from kbdesk.chat.turn_parts import (
    MAX_ROUNDS,
    ChatTarget,
    TurnOptions,
    TurnPlan,
    TurnState,
    auto_search,
    chat_target,
    finish_failed,
    forcing_failed,
    how_retrieved,
    log_usage,
    notice,
    overflow_error,
    plan_turn,
    run_tools,
)
from kbdesk.desk_api import DeskApi
from kbdesk.errors import KbdeskError
from kbdesk.filters_text import overlay
from kbdesk.providers.chat import CancelToken, ChatCancelled, ChatClient, ToolsRejectedError
from kbdesk.providers.errors import (
    ContextOverflowError,
    InterruptedAnswerError,
    ProviderError,
    SilentEndError,
)
from kbdesk.store.chat import Conversation

__all__ = ["MAX_ROUNDS", "ChatTarget", "TurnOptions", "chat_target", "forcing_failed", "run_turn"]

log = logging.getLogger("kbdesk.chat")

HISTORY_MESSAGES = 200


def run_turn(
    desk: DeskApi,
    conversation: Conversation,
    text: str,
    options: TurnOptions | None = None,
    cancel: CancelToken | None = None,
) -> Iterator[ChatEvent]:
    """Ask ``text`` in ``conversation`` (already saved); yields events, ends with TurnFinished."""
    return _Turn(desk, conversation, text, options or TurnOptions(), cancel or CancelToken()).events()


class _Stop(Exception):
    """The turn ends here with an error that is nobody's exception (too many rounds)."""


class _Turn:
    """One turn's steps and what they share."""

    def __init__(
        self, desk: DeskApi, conversation: Conversation, text: str, options: TurnOptions, cancel: CancelToken
    ) -> None:
        self.desk, self.store = desk, require_chat(desk.store)
        self.conversation, self.text, self.options, self.cancel = conversation, text, options, cancel
        self.state = TurnState(conversation.id)
        self.plan: TurnPlan | None = None
        self.previous: list[Any] = []
        self.round_text: list[str] = []  # what the round in progress has said so far
        self.final = ""  # the text of the last round that ended
        self.reference = ""  # passages kbdesk found itself, for the system prompt
        self.first: list[ActiveKB] = []  # the KBs searched before round 1
        self.tools_ok = True  # False once the model rejected tools
        self.retried_overflow = False
        self.verdict: str | None = None  # whether the server renders tool messages, once asked
        self.no_auto = False  # rounds offering tools send tool_choice "none" (the model fails on "auto")

    # ── the outline ────────────────────────────────────────────────────────────
    def events(self) -> Iterator[ChatEvent]:
        store, state = self.store, self.state
        self.previous = store.messages(self.conversation.id, limit=HISTORY_MESSAGES)
        state.ground = grounding_queries(self.text, self.previous)
        user = store.add_message(self.conversation.id, "user", self.text)
        if not self.conversation.title:
            store.update_conversation(self.conversation.id, title=one_line(self.text, 60))
        try:
            yield from self.start(user.id)
            with ChatClient(self.target.provider, self.target.settings) as client:
                yield from self.search_first()
                while (yield from self.round(client)):
                    pass
            yield from self.conclude()
        except ChatCancelled as exc:
            yield from finish_failed(store, state, self.round_text, "cancelled", "stopped by the user", self.plan, exc)
        except InterruptedAnswerError as exc:
            said = f"{one_line(exc, 500)}; the part that came is kept, marked as interrupted: ask again for it whole"
            yield from finish_failed(store, state, self.round_text, "error", said, self.plan, exc)
        except (KbdeskError, _Stop) as exc:
            yield from finish_failed(store, state, self.round_text, "error", one_line(exc, 600), self.plan, exc)
        except Exception as exc:  # a bug: still a message, never a traceback in the conversation
            log.debug("chat turn failed", exc_info=True)
            error = f"internal error: {type(exc).__name__}: {one_line(exc, 300)}"
            yield from finish_failed(store, state, self.round_text, "error", error, self.plan, exc)

    # ── the steps ──────────────────────────────────────────────────────────────
    def start(self, user_id: str) -> Iterator[ChatEvent]:
        """Who answers, with which KBs and notes, and how the turn consults them."""
        store, options = self.store, self.options
        self.persona = store.find_persona(options.persona_id) if options.persona_id else None
        self.target = chat_target(self.desk.config, self.persona, model=options.model, provider=options.provider)
        self.state.model = self.target.model
        active = resolve_kbs(
            store, conversation_id=self.conversation.id, persona_id=options.persona_id, project_id=options.project_id
        )
        self.notes = NoteService(self.desk) if store.note_count() else None
        self.state.attached = tuple(a.kb.name for a in active)
        yield TurnStarted(self.conversation.id, user_id, self.target.model, self.target.provider, self.state.attached)
        self.plan = plan = plan_turn(self.desk, self.target, self.conversation, self.persona, options, active)
        # outside policy "tool" (where the model must be able to choose), a model known to fail
        # on "auto" is sent "none" at once: kbdesk's own search grounds the answer
        self.no_auto = plan.policy != "tool" and auto_fails(store, self.target.provider, self.target.model)
        kbs = [a.kb for a in plan.searchable] if plan.kb_tools else []
        self.state.filters = overlay(filters_for(self.conversation, self.persona), options.filters)
        self.toolbox = Toolbox(
            self.desk, kbs, notes=self.notes, max_chars=plan.result_chars, filters=self.state.filters
        )

    def search_first(self) -> Generator[ChatEvent, None, None]:
        """The KBs the plan searches before the model is asked (auto-search ones; all of
        them under ``always``, or when ``auto`` cannot tell the model to search)."""
        plan = self.plan
        assert plan is not None
        first = [a for a in plan.searchable if a.auto_search] if plan.policy != "off" else []
        if plan.policy == "always" or (plan.policy == "auto" and plan.kb_tools and not plan.force):
            first = plan.searchable
        self.first = first
        if first:
            self.reference = yield from auto_search(self.desk, first, self.state, plan.result_chars)

    def round(self, client: ChatClient) -> Generator[ChatEvent, None, bool]:
        """One request to the model; True when the turn needs another round."""
        plan, state = self.plan, self.state
        assert plan is not None
        state.rounds += 1
        self.cancel.check()
        tools = self.toolbox.definitions() if self.tools_ok else None
        fitted = self.prompt(tools)
        forcing = plan.force and state.rounds == 1 and bool(tools)
        wire: dict[str, Any] = {"max_tokens": fitted.max_tokens, "wait_limit": self.desk.config.chat.timeout}
        if forcing:
            # a named function is the widest way to force a call; llama.cpp's llama-server
            # reads a named choice as "auto", but honours "required" (with only kb_search offered)
            if self.target.settings.kind == "llamacpp":
                wire["tool_choice"] = "required"
                tools = [t for t in tools or [] if t["function"]["name"] == "kb_search"]
            else:
                wire["tool_choice"] = "kb_search"
        elif tools:  # said, never left to the server: llama-cpp-python hides tools without it
            wire["tool_choice"] = "none" if self.no_auto else "auto"
        self.round_text = []
        if has_tool_results(fitted.messages) and self.results_verdict(client) == "dropped":
            fitted.messages = as_data(fitted.messages)  # this server's template drops the tool role
        auto = wire.get("tool_choice") == "auto"
        try:
            completion = yield from self.stream(client, fitted, tools, forcing, wire)
        except SilentEndError as exc:
            if auto:
                return (yield from self.auto_failed(exc))
            return (yield from self.recover(exc, forcing, fitted, tools))
        except ProviderError as exc:
            return (yield from self.recover(exc, forcing, fitted, tools))
        if auto and completion is not None and not completion.tool_calls and not "".join(self.round_text).strip():
            return (yield from self.auto_failed(None))
        return (yield from self.answered(completion, forcing, tools))

    def auto_failed(self, exc: SilentEndError | None) -> Generator[ChatEvent, None, bool]:
        """Tools offered with ``tool_choice: "auto"`` and nothing came back (an empty answer, or
        an empty stream: llama-cpp-python's chatml-function-calling can answer neither a
        message nor a streamed tool call then): asked again with "none", from the passages
        kbdesk finds for the question; remembered for the model (outside policy ``tool``,
        later rounds send "none" at once)."""
        plan, state, target = self.plan, self.state, self.target
        assert plan is not None
        state.rounds -= 1
        self.no_auto = True
        remember_auto_fails(self.store, target.provider, target.model)
        said = "answered with an empty stream" if exc is not None else "returned an empty answer"
        search = plan.policy != "off" and plan.kb_tools and not state.grounded
        yield notice(
            state,
            f'{target.model} {said} while it could choose a tool (tool_choice "auto"); asked again with '
            f'tool_choice "none"{", from the passages kbdesk found for the question" if search else ""}',
            "info",
        )
        if search:
            yield from self.search_instead()
        return True

    def results_verdict(self, client: ChatClient) -> str:
        """Whether this server shows the model a ``tool`` message (:mod:`.tool_results`)."""
        if self.verdict is None:
            target = self.target
            self.verdict = verdict(self.store, client, target.provider, target.model, client.base_url)
        return self.verdict

    def prompt(self, tools: list[dict[str, Any]] | None) -> Fitted:
        """The system prompt and the conversation, fitted into the model's window."""
        plan, state = self.plan, self.state
        assert plan is not None
        hint = kb_hint(plan.searchable if plan.kb_tools else [], tools=self.tools_ok)
        system = system_prompt(
            self.persona.system_prompt if self.persona else "",
            hint,
            notes=self.notes is not None and self.tools_ok,
            reference=self.reference,
        )
        fitted = fit(
            system,
            self.previous,
            self.text,
            state.exchange,
            tools,
            window=plan.window,
            max_tokens=plan.max_tokens,
            use_tools=self.tools_ok,
            history_share=0.0 if self.retried_overflow else 1.0,
        )
        state.trimmed = max(state.trimmed, fitted.trimmed)
        return fitted

    def stream(
        self,
        client: ChatClient,
        fitted: Fitted,
        tools: list[dict[str, Any]] | None,
        forcing: bool,
        wire: dict[str, Any],
    ) -> Generator[ChatEvent, None, Any]:
        """The model's answer as it comes (held back while forcing: what it says beside its
        tool call is shown once the call came); returns the completion."""
        completion = None
        for item in stream_round(
            client,
            fitted.messages,
            self.target.model,
            tools=tools,
            cancel=self.cancel,
            round_no=self.state.rounds,
            **wire,
        ):
            if isinstance(item, Waiting):
                yield item
            elif isinstance(item, str):
                piece = clean(item)
                self.round_text.append(piece)
                if not forcing:
                    yield TextDelta(piece, self.state.rounds)
            else:
                completion = item
                if completion.content and not self.round_text:  # a server that did not stream
                    self.round_text.append(clean(completion.content))
                    if not forcing:
                        yield TextDelta(self.round_text[0], self.state.rounds)
        return completion

    def recover(
        self, exc: ProviderError, forcing: bool, fitted: Fitted, tools: list[dict[str, Any]] | None
    ) -> Generator[ChatEvent, None, bool]:
        """A round that failed: asked again where that can succeed (True), else raised."""
        plan, state, target = self.plan, self.state, self.target
        assert plan is not None
        if forcing and forcing_failed(exc):
            # the server fails on a forced tool choice (llama-cpp-python asserts inside its
            # stream on "required" and answers an empty 200; others a bare 500): asked again
            # once without forcing, with the passages kbdesk found; remembered for this model
            state.rounds -= 1
            log.info("forcing kb_search failed on %s/%s: %s", target.provider, target.model, exc)
            remember_ignores_forcing(self.store, target.provider, target.model)
            plan.force = False
            why = "its server answered with an empty stream" if isinstance(exc, SilentEndError) else exc
            yield notice(
                state,
                f"{target.model} could not be told to search ({one_line(why, 160)}); kbdesk "
                "searched with the question and asked again without forcing (remembered for "
                "this model)",
                "info",
            )
            yield from self.search_instead()
            return True
        if isinstance(exc, ContextOverflowError):
            if self.retried_overflow or (not self.previous and not state.exchange):
                raise overflow_error(exc, fitted.prompt_tokens, plan) from None
            self.retried_overflow, state.rounds = True, state.rounds - 1
            said = (
                "the model's server ended the answer without a word, as it does when a prompt does not fit its context"
                if isinstance(exc, SilentEndError)
                else "the conversation did not fit the model's context"
            )
            yield notice(state, f"{said}: asking again with the earlier questions left out", "warning")
            return True
        if not isinstance(exc, ToolsRejectedError) or state.exchange or not tools:
            raise exc
        state.rounds -= 1
        self.tools_ok = False
        searched = {a.kb.id for a in self.first}
        rest = [a for a in plan.searchable if a.kb.id not in searched] if plan.kb_tools else []
        what = "kbdesk searched the knowledge bases itself" if rest else "answering without tools"
        yield notice(state, f"{target.model} does not accept tools ({one_line(exc, 200)}); {what}", "warning")
        if rest:
            found = yield from auto_search(self.desk, rest, state, plan.result_chars)
            self.reference = "\n\n".join(r for r in (self.reference, found) if r)
        return True

    def answered(
        self, completion: Any, forcing: bool, tools: list[dict[str, Any]] | None
    ) -> Generator[ChatEvent, None, bool]:
        """A round that ended: its tool calls run (True: ask again), or the answer is in."""
        plan, state, target = self.plan, self.state, self.target
        assert plan is not None
        log_usage(self.store, target, completion)
        state.finish = completion.finish if completion is not None else None
        final = "".join(self.round_text)
        calls = completion.tool_calls if completion is not None else []
        if forcing and not calls:
            # told to call kb_search, it answered instead: search for it and ask again
            remember_ignores_forcing(self.store, target.provider, target.model)
            plan.force = False
            state.rounds -= 1
            yield from self.search_instead()
            return True
        if forcing and final:
            yield TextDelta(final, state.rounds)  # what it said beside its tool call
        state.shown.append(final)
        self.final, self.round_text = final, []  # saved below or with the tool calls, not again on failure
        if not (calls and tools):
            return False
        if state.rounds >= self.options.max_rounds:
            yield notice(
                state,
                f"the model still asked for tools after {self.options.max_rounds} rounds; stopped here",
                "warning",
            )
            if not "".join(state.shown).strip():
                raise _Stop(f"no answer after {self.options.max_rounds} rounds of tool calls")
            return False
        ground = state.ground if plan.policy == "auto" and not state.grounded else []
        yield from run_tools(self.store, self.toolbox, completion, final, state, self.cancel, ground)
        return True

    def search_instead(self) -> Generator[ChatEvent, None, None]:
        """The model did not search (or cannot be told to): kbdesk searches with the question."""
        plan = self.plan
        assert plan is not None
        found = yield from auto_search(self.desk, plan.searchable, self.state, plan.result_chars)
        self.reference = "\n\n".join(r for r in (self.reference, found) if r)

    def conclude(self) -> Iterator[ChatEvent]:
        """What the user should know about the answer, the retrieval line, the answer saved."""
        plan, state = self.plan, self.state
        assert plan is not None
        if not "".join(state.shown).strip():
            yield notice(state, "the model returned an empty answer", "warning")
        if state.finish == "length":
            yield notice(
                state,
                f"the answer was cut at the length limit ({plan.max_tokens} tokens; "
                "[chat] max_tokens or the persona's)",
                "warning",
            )
        if state.trimmed:
            yield notice(
                state,
                f"{state.trimmed} earlier question{'' if state.trimmed == 1 else 's'} left out "
                "to fit the model's context",
                "info",
            )
        how = how_retrieved(plan, state)
        if state.attached:
            searched = [a.kb.name for a in plan.searchable] or list(state.attached)
            yield describe(how, searched, state.fallback, state.filters, state.unreached)
        message = self.store.add_message(
            self.conversation.id,
            "assistant",
            self.final,
            model=self.target.model,
            sources=[s.to_dict() for s in state.sources.values()],
        )
        yield TurnFinished(state.answer(message.id, "complete", retrieval=how))
