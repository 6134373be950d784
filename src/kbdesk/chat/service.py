"""The chat core for both faces: conversations, KB toggles, personas, projects, turns.

Built on a desk (``desk.chat()`` or ``ChatService(desk)``); holds no state of its own,
so one service may be shared, and config changes (``desk.reload_config``) apply to
the next turn. Every call blocks: a UI runs :meth:`ChatService.ask` in a thread
worker and forwards the events with ``call_from_thread`` / ``post_message``::

    token = CancelToken()                      # token.cancel() from the UI stops the turn
    answer = chat.ask(conv.id, "How do backups work?", on_event=forward, cancel=token)

or iterates :meth:`ChatService.stream` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.chat.engine import MAX_ROUNDS, TurnOptions, run_turn
from kbdesk.chat.events import Answer, ChatEvent, Source, TurnFinished
from kbdesk.chat.notes import NoteService, require_chat
from kbdesk.chat.resolve import ActiveKB, KbToggle, check_switchable, kb_hint, kb_toggles, resolve_kbs
from kbdesk.chat.safety import clean
from kbdesk.desk_api import DeskApi
from kbdesk.errors import InvalidInputError, KbdeskError
from kbdesk.filters import Filters
from kbdesk.filters_text import as_filters
from kbdesk.providers.chat import CancelToken
from kbdesk.remote.bindings import bind as bind_remote
from kbdesk.remote.bindings import remote_toggles
from kbdesk.remote.bindings import toggle as toggle_remote
from kbdesk.remote.names import split_ref, split_refs
from kbdesk.store.api import ChatStore
from kbdesk.store.chat import UNSET, ChatMessage, Conversation, Persona, Project

MAX_QUESTION_CHARS = 32_000


@dataclass(frozen=True)
class TurnContext:
    """The model, the active KBs and the retrieval policy a turn of a conversation (or
    of a new one) would use: what a face shows before anything is asked."""

    model: str | None
    problem: str | None
    """Why no model would answer (nothing configured...), else None."""
    knowledge_bases: tuple[str, ...] = ()
    retrieval: str = "auto"
    """The policy a turn would use: auto, tool, always or off."""
    filters: Filters = field(default_factory=Filters)
    """The default filters its searches keep to (the conversation's, else its persona's)."""


class ChatService:
    def __init__(self, desk: DeskApi) -> None:
        self.desk = desk
        self.store: ChatStore = require_chat(desk.store)
        self.notes = NoteService(desk)

    # ── conversations ──────────────────────────────────────────────────────────
    def new_conversation(
        self, title: str = "", *, persona: str | None = None, project: str | None = None
    ) -> Conversation:
        return self.store.create_conversation(
            title, persona_id=self._persona_id(persona), project_id=self._project_id(project)
        )

    def conversation(self, ref: str) -> Conversation:
        return self.store.find_conversation(ref)

    def conversations(self, project: str | None = None) -> list[Conversation]:
        return self.store.list_conversations(self._project_id(project))

    def rename(self, ref: str, title: str) -> Conversation:
        return self.store.update_conversation(self.conversation(ref).id, title=title)

    def delete(self, ref: str) -> Conversation:
        return self.store.delete_conversation(self.conversation(ref).id)

    def set_persona(self, ref: str, persona: str | None) -> Conversation:
        return self.store.update_conversation(self.conversation(ref).id, persona_id=self._persona_id(persona))

    def set_project(self, ref: str, project: str | None) -> Conversation:
        return self.store.update_conversation(self.conversation(ref).id, project_id=self._project_id(project))

    def set_retrieval(self, ref: str, policy: str | None) -> Conversation:
        """The conversation's retrieval policy (auto, tool, always, off), or None to
        follow its persona's or ``[chat] retrieval``."""
        return self.store.update_conversation(self.conversation(ref).id, retrieval=policy)

    def set_filters(self, ref: str, filters: Filters | dict[str, Any] | str | None) -> Conversation:
        """The conversation's default filters (a Filters, its JSON form or a filter line;
        None or empty: none, its persona's apply)."""
        return self.store.update_conversation(self.conversation(ref).id, filters=as_filters(filters))

    def filters(self, ref: str) -> Filters:
        """The default filters a turn of this conversation searches with now."""
        from kbdesk.chat.retrieval import filters_for

        conv = self.conversation(ref)
        return filters_for(conv, self.store.find_persona(conv.persona_id) if conv.persona_id else None)

    def context(
        self, conversation: str | None = None, *, persona: str | None = None, project: str | None = None
    ) -> TurnContext:
        """What a turn would use now (see :class:`TurnContext`); without a conversation,
        for a new one with ``persona`` and ``project``."""
        from kbdesk.chat.engine import chat_target
        from kbdesk.chat.retrieval import filters_for, policy_for
        from kbdesk.chat.safety import one_line

        conv = self.conversation(conversation) if conversation is not None else None
        persona_id = conv.persona_id if conv else self._persona_id(persona)
        project_id = conv.project_id if conv else self._project_id(project)
        active = resolve_kbs(
            self.store, conversation_id=conv.id if conv else None, persona_id=persona_id, project_id=project_id
        )
        persona_row = self.store.find_persona(persona_id) if persona_id else None
        policy = policy_for(None, conv, persona_row, self.desk.config.chat.retrieval)
        try:
            model, problem = chat_target(self.desk.config, persona_row).model, None
        except KbdeskError as exc:
            model, problem = None, one_line(exc, 200)
        return TurnContext(model, problem, tuple(a.kb.name for a in active), policy, filters_for(conv, persona_row))

    def retrieval_policy(self, ref: str) -> str:
        """The policy a turn of this conversation uses now."""
        from kbdesk.chat.retrieval import policy_for

        conv = self.conversation(ref)
        persona = self.store.find_persona(conv.persona_id) if conv.persona_id else None
        return policy_for(None, conv, persona, self.desk.config.chat.retrieval)

    def messages(self, ref: str) -> list[ChatMessage]:
        return self.store.messages(self.conversation(ref).id)

    # ── KBs of a conversation (seed 000 §8, seed 002) ──────────────────────────
    def active_kbs(self, ref: str) -> list[ActiveKB]:
        conv = self.conversation(ref)
        return resolve_kbs(self.store, conversation_id=conv.id, persona_id=conv.persona_id, project_id=conv.project_id)

    def hint(self, ref: str) -> str:
        return kb_hint(self.active_kbs(ref))

    def kb_toggles(self, ref: str) -> list[KbToggle]:
        """The KB popup: every pickable KB with its document count and whether it is on
        (then the remotes' KBs: those bound, and those the remotes offer now)."""
        conv = self.conversation(ref)
        remote = remote_toggles(self.desk, conv.id) if self.desk.config.remotes else []
        return kb_toggles(self.store, conv) + [
            KbToggle(ref, name, documents, on, "conversation" if on else None, False)
            for ref, name, documents, on in remote
        ]

    def set_kb_enabled(self, ref: str, kb_ref: str, enabled: bool) -> list[KbToggle]:
        remote = split_ref(kb_ref, self.desk.config.remotes) if self.desk.config.remotes else None
        if remote is not None:  # a remote KB: bound beside the rows (kbdesk.remote.bindings)
            conv = self.conversation(ref)
            toggle_remote(self.desk, conv.id, remote, enabled)
            return self.kb_toggles(conv.id)
        conv, kb = self.conversation(ref), self.desk.kb(kb_ref)
        check_switchable(kb_toggles(self.store, conv), kb)
        self.store.set_channel_kb(conv.id, kb.id, enabled)
        return self.kb_toggles(conv.id)

    def set_kbs(self, ref: str, kb_refs: Iterable[str]) -> list[KbToggle]:
        """Exactly these KBs on (seed 002 "PUT /channels/:id/knowledge-bases"); every other
        pickable KB off. Persona and project KBs stay as their bindings say."""
        conv = self.conversation(ref)
        kb_refs, remote = split_refs(list(kb_refs), self.desk.config.remotes)
        bind_remote(self.desk, conv.id, remote)  # remote KBs: read-only, kept beside the rows
        wanted = {self.desk.kb(r).id for r in kb_refs}
        toggles = kb_toggles(self.store, conv)
        for kb_id in wanted:
            check_switchable(toggles, self.store.get_kb(kb_id))
        others = [t.kb_id for t in toggles if not t.locked and t.kb_id not in wanted]
        self.store.set_channel_kbs(conv.id, sorted(wanted), others)
        return self.kb_toggles(conv.id)

    # ── personas and projects ──────────────────────────────────────────────────
    def create_persona(
        self,
        name: str,
        system_prompt: str = "",
        *,
        model: str | None = None,
        provider: str | None = None,
        kbs: Sequence[str] = (),
        auto_search: Sequence[str] = (),
        retrieval: str | None = None,
        max_tokens: int | None = None,
        filters: Filters | dict[str, Any] | str | None = None,
    ) -> Persona:
        persona = self.store.create_persona(
            name,
            system_prompt,
            provider=provider,
            model=model,
            retrieval=retrieval,
            max_tokens=max_tokens,
            filters=as_filters(filters),
        )
        if kbs or auto_search:
            persona = self.store.update_persona(persona.id, kbs=self._bindings(kbs, auto_search))
        return persona

    def persona(self, ref: str) -> Persona:
        return self.store.find_persona(ref)

    def personas(self) -> list[Persona]:
        return self.store.list_personas()

    def edit_persona(
        self,
        ref: str,
        *,
        name: str | None = None,
        system_prompt: str | None = None,
        model: Any = UNSET,
        provider: Any = UNSET,
        kbs: Sequence[str] | None = None,
        auto_search: Sequence[str] = (),
        retrieval: Any = UNSET,
        max_tokens: Any = UNSET,
        filters: Any = UNSET,
    ) -> Persona:
        """Change a persona; ``kbs`` (with ``auto_search`` a subset, or extra) replaces its
        bindings; ``filters`` (a Filters, its JSON form, a filter line; None: none) its
        default filters."""
        persona = self.persona(ref)
        bindings = self._bindings(kbs or (), auto_search) if kbs is not None or auto_search else None
        return self.store.update_persona(
            persona.id,
            name=name,
            system_prompt=system_prompt,
            model=model,
            provider=provider,
            kbs=bindings,
            retrieval=retrieval,
            max_tokens=max_tokens,
            filters=filters if filters is UNSET else as_filters(filters),
        )

    def delete_persona(self, ref: str) -> Persona:
        return self.store.delete_persona(self.persona(ref).id)

    def create_project(self, name: str, description: str = "", *, kbs: Sequence[str] = ()) -> Project:
        project = self.store.create_project(name, description)
        if kbs:
            project = self.store.update_project(project.id, kbs=[self.desk.kb(r).id for r in kbs])
        return project

    def project(self, ref: str) -> Project:
        return self.store.find_project(ref)

    def projects(self) -> list[Project]:
        return self.store.list_projects()

    def edit_project(
        self, ref: str, *, name: str | None = None, description: str | None = None, kbs: Sequence[str] | None = None
    ) -> Project:
        return self.store.update_project(
            self.project(ref).id,
            name=name,
            description=description,
            kbs=None if kbs is None else [self.desk.kb(r).id for r in kbs],
        )

    def delete_project(self, ref: str) -> Project:
        return self.store.delete_project(self.project(ref).id)

    # ── turns ──────────────────────────────────────────────────────────────────
    def stream(
        self,
        conversation: str | None,
        question: str,
        *,
        persona: str | None = None,
        project: str | None = None,
        kbs: Sequence[str] | None = None,
        model: str | None = None,
        provider: str | None = None,
        max_rounds: int = MAX_ROUNDS,
        cancel: CancelToken | None = None,
        retrieval: str | None = None,
        max_tokens: int | None = None,
        filters: Filters | dict[str, Any] | str | None = None,
    ) -> Iterator[ChatEvent]:
        """Ask ``question`` in ``conversation`` (a new one when None) and yield the turn's
        events. ``persona`` / ``project`` set them on the conversation; ``kbs`` sets its
        KB toggles to exactly those KBs first; ``retrieval``, ``max_tokens`` and ``filters``
        (laid over the conversation's default filters) apply to this turn only."""
        from kbdesk.store.personas import check_max_tokens, check_retrieval

        check_retrieval(retrieval)
        check_max_tokens(max_tokens)
        turn_filters = as_filters(filters)
        question = clean(question).strip()
        if not question:
            raise InvalidInputError("the question is empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise InvalidInputError(f"the question is longer than {MAX_QUESTION_CHARS} characters")
        if not 1 <= max_rounds <= 20:
            raise InvalidInputError("max_rounds must be between 1 and 20")
        if conversation is None:
            conv = self.new_conversation(persona=persona, project=project)
        else:
            conv = self.conversation(conversation)
            if persona is not None:
                conv = self.set_persona(conv.id, persona)
            if project is not None:
                conv = self.set_project(conv.id, project)
        if kbs is not None:
            self.set_kbs(conv.id, kbs)
        options = TurnOptions(
            conv.persona_id, conv.project_id, model, provider, max_rounds, retrieval, max_tokens, turn_filters
        )
        yield from run_turn(self.desk, conv, question, options, cancel)

    def ask(
        self,
        conversation: str | None,
        question: str,
        *,
        on_event: Callable[[ChatEvent], None] | None = None,
        **kwargs: Any,
    ) -> Answer:
        """:meth:`stream` run to its end; ``on_event`` sees every event. Returns the answer."""
        answer = None
        for event in self.stream(conversation, question, **kwargs):
            if on_event is not None:
                on_event(event)
            if isinstance(event, TurnFinished):
                answer = event.answer
        assert answer is not None  # run_turn always ends with TurnFinished
        return answer

    def open_source(self, source: Source | dict[str, Any], radius: int = 1) -> list[dict[str, Any]]:
        """The text behind a source: the chunk with ``radius`` neighbours each side (their
        ``current`` flag marks it), or the note. Plain text, cleaned."""
        data = source.to_dict() if isinstance(source, Source) else dict(source)
        if data.get("kind") == "note":
            note = self.store.find_note(data["note_id"])
            return [{"title": clean(note.title), "content": clean(note.content), "current": True}]
        if data.get("document_id") is None or data.get("chunk_index") is None:
            raise InvalidInputError("this source does not point at a chunk")
        rows = self.store.chunk_neighbours(data["document_id"], int(data["chunk_index"]), radius)
        if not rows:
            raise InvalidInputError(
                f"the passage from {data.get('source')} is gone (the document was removed or rebuilt)"
            )
        return [{**r, "content": clean(r["content"])} for r in rows]

    # ── helpers ────────────────────────────────────────────────────────────────
    def _persona_id(self, ref: str | None) -> str | None:
        return self.persona(ref).id if ref else None

    def _project_id(self, ref: str | None) -> str | None:
        return self.project(ref).id if ref else None

    def _bindings(self, kbs: Sequence[str], auto_search: Sequence[str]) -> list[tuple[str, bool]]:
        auto = {self.desk.kb(r).id for r in auto_search}
        ids = [self.desk.kb(r).id for r in kbs] + sorted(auto)
        return [(kb_id, kb_id in auto) for kb_id in dict.fromkeys(ids)]
