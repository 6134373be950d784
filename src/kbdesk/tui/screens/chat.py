"""Chat with the knowledge bases: conversations, a streamed answer with its sources,
persona and project, the conversation's KBs (ctrl+o) and stopping an answer (Esc).

A turn runs ``ChatService.ask`` in a thread worker. Its events go through a
:class:`~kbdesk.tui.chat_state.TurnRelay`, which merges text deltas; the worker only
posts a :class:`ChatScreen.Tick` (never touches a widget), and the screen drains the
relay on each tick and on a short timer. Keys keep working meanwhile: typing the next
question, scrolling, opening sources, the KB popup, help.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Footer, Header, Input, OptionList, Static

from kbdesk.chat.events import TurnStarted
from kbdesk.chat.safety import one_line
from kbdesk.providers.chat import CancelToken
from kbdesk.store.chat import Conversation, Persona, Project
from kbdesk.tui.chat_state import (
    AnswerState, ChatContext, TurnRelay, UserBlock, blocks_from_messages, chat_context, source_groups,
)
from kbdesk.tui.screens.base import DeskScreen
from kbdesk.tui.widgets.choice_bar import ChoiceBar
from kbdesk.tui.widgets.conversation_list import ConversationList, conversation_title
from kbdesk.tui.widgets.transcript import AnswerView, Transcript

BUSY = "An answer is still coming: wait for it, or press Esc to stop it"
STOP_WAIT = 3.0
"""Seconds a closing chat screen waits for a stopped answer to be saved."""


@dataclass
class _Turn:
    conversation_id: str
    state: AnswerState
    view: AnswerView
    relay: TurnRelay
    token: CancelToken
    timer: Timer | None = None
    ended: threading.Event = field(default_factory=threading.Event)
    """Set by the worker thread when ``ask`` has returned (or raised)."""


class ChatScreen(DeskScreen):
    CSS_PATH = "chat.tcss"
    BINDINGS = [
        Binding("escape", "stop", "Stop", id="chat.stop"),
        Binding("escape", "back", "Back", id="chat.back"),
        Binding("ctrl+n", "new_conversation", "New", id="chat.new"),
        Binding("ctrl+r,f2", "rename", "Rename", id="chat.rename"),
        Binding("ctrl+o", "kbs", "KBs", id="chat.kbs"),
        Binding("ctrl+s", "sources", "Sources", id="chat.sources"),
        Binding("ctrl+l", "focus_question", "Question", id="chat.question", show=False),
    ]

    class Tick(Message, bubble=False):
        """The turn's relay has events (posted from the worker thread)."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ChatScreen.Tick)

    def __init__(self, chat: Any, conversation: str | None = None) -> None:
        super().__init__()
        self.chat = chat
        self.conv: Conversation | None = None
        self.turn: _Turn | None = None
        self.personas: list[Persona] = []
        self.projects: list[Project] = []
        self._wanted = conversation
        self._chat_context: ChatContext | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="chat-body"):
            with Vertical(id="sidebar"):
                yield Static(Text("Conversations"), classes="panel-title")
                yield ConversationList(id="conversations")
            with Vertical(id="chat-main"):
                yield ChoiceBar(id="context-bar")
                yield Transcript(id="transcript")
                yield Static("", id="chat-status")
                yield Input(placeholder="Ask the knowledge bases… (Enter)", id="question", max_length=32_000)
        yield Footer()

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def conversations(self) -> ConversationList:
        return self.query_one(ConversationList)

    @property
    def choices(self) -> ChoiceBar:
        return self.query_one(ChoiceBar)

    def on_mount(self) -> None:
        self.sub_title = "chat"
        self.query_one("#question", Input).focus()
        self.in_thread(lambda: (self.chat.conversations(), self.chat.personas(), self.chat.projects()),
                       doing="loading conversations", done=self._loaded)

    def on_screen_resume(self) -> None:
        if self._chat_context is not None:  # back from notes or a dialog: KBs may have changed
            self._load_context()

    def on_unmount(self) -> None:
        if self.turn is not None:  # leaving (or quitting) stops the answer; what came is saved
            self.turn.token.cancel()
            self.turn.ended.wait(STOP_WAIT)  # before the app closes the desk under it

    def _loaded(self, result: tuple[list[Conversation], list[Persona], list[Project]]) -> None:
        conversations, self.personas, self.projects = result
        self.choices.fill(self.personas, self.projects)
        wanted = next((c for c in conversations if c.id == self._wanted), None)
        first = wanted or (conversations[0] if conversations else None)
        self.conversations.load(conversations, first.id if first else None)
        if first is not None:
            self.open_conversation(first.id)
        else:
            self._show_draft()

    # ── conversations ──────────────────────────────────────────────────────────
    def refresh_list(self) -> None:
        self.in_thread(self.chat.conversations, doing="loading conversations", group="list", exclusive=True,
                       done=self._listed)

    def _listed(self, conversations: list[Conversation]) -> None:
        if self.conv is not None:  # its title and message count as saved
            self.conv = next((c for c in conversations if c.id == self.conv.id), self.conv)
        self.conversations.load(conversations, self.conv.id if self.conv else None)

    def open_conversation(self, conv_id: str) -> None:
        def read() -> tuple[Conversation, list[Any], ChatContext]:
            return (self.chat.conversation(conv_id), self.chat.messages(conv_id),
                    chat_context(self.chat, conversation_id=conv_id))

        self.in_thread(read, doing="opening the conversation", group="open", exclusive=True, done=self._opened,
                       failed=lambda _: self.refresh_list())

    def _opened(self, result: tuple[Conversation, list[Any], ChatContext]) -> None:
        conv, messages, context = result
        self.conv = conv
        self.conversations.mark(conv.id)
        self.transcript.show(blocks_from_messages(messages))
        self._show_choices()
        self._show_context(context)

    def _show_draft(self) -> None:
        self.conv = None
        self.conversations.mark(None)
        self.transcript.show([])
        self._show_choices()
        self._load_context()

    def _show_choices(self) -> None:
        conv = self.conv
        self.choices.show(conv.persona_id if conv else None, conv.project_id if conv else None)

    def _with_conversation(self, then: Callable[[Conversation], None]) -> None:
        """Run ``then`` with the conversation on screen, saving a new one first."""
        if self.conv is not None:
            then(self.conv)
            return

        def created(conv: Conversation) -> None:
            self.conv = conv
            self.refresh_list()
            then(conv)

        self.in_thread(self.chat.new_conversation, "", persona=self.choices.value("persona"),
                       project=self.choices.value("project"), doing="starting a conversation", done=created)

    @on(OptionList.OptionSelected, "#conversations")
    def _switch(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.conv is not None and event.option_id == self.conv.id:
            self.query_one("#question", Input).focus()
            return
        if self.turn is not None:
            self.notify(BUSY, severity="warning")
            self.conversations.mark(self.conv.id if self.conv else None)
            return
        if event.option_id:
            self.open_conversation(event.option_id)
            self.query_one("#question", Input).focus()

    def _target(self) -> Conversation | None:
        """The conversation an action is about: the highlighted one while the list has focus."""
        if self.conversations.has_focus and self.conversations.selected is not None:
            return self.conversations.selected
        return self.conv

    def action_new_conversation(self) -> None:
        if self.turn is not None:
            self.notify(BUSY, severity="warning")
            return
        self._show_draft()
        self.query_one("#question", Input).focus()

    def action_rename(self) -> None:
        from kbdesk.tui.screens.prompt import PromptScreen

        conv = self._target()
        if conv is None:
            self.notify("Nothing to rename yet: ask a question first", severity="warning")
            return
        self.app.push_screen(PromptScreen("Rename conversation", conv.title, placeholder="a title"),
                             lambda title: self._rename(conv, title))

    def _rename(self, conv: Conversation, title: str | None) -> None:
        if not title:
            return

        def renamed(new: Conversation) -> None:
            if self.conv is not None and self.conv.id == new.id:
                self.conv = new
            self.refresh_list()

        self.in_thread(self.chat.rename, conv.id, title, doing="renaming the conversation", done=renamed)

    def action_delete_conversation(self) -> None:
        from kbdesk.tui.screens.confirm import ConfirmScreen

        conv = self._target()
        if conv is None:
            return
        if self.turn is not None and self.turn.conversation_id == conv.id:
            self.notify(BUSY, severity="warning")
            return
        count = conv.message_count
        detail = (f"Its {count} message{'' if count == 1 else 's'} and KB choices are removed. Knowledge bases "
                  "and notes are not touched.")
        self.app.push_screen(ConfirmScreen(f"Delete conversation '{conversation_title(conv)}'?", detail),
                             lambda yes: self._delete(conv, yes))

    def _delete(self, conv: Conversation, yes: bool | None) -> None:
        if not yes:
            return

        def deleted(_: Any) -> None:
            self.notify(f"Deleted '{conversation_title(conv)}'", markup=False)
            if self.conv is not None and self.conv.id == conv.id:
                self._show_draft()
            self.refresh_list()

        self.in_thread(self.chat.delete, conv.id, doing="deleting the conversation", done=deleted)

    # ── persona, project, KBs ──────────────────────────────────────────────────
    @on(ChoiceBar.Chosen)
    def _choice_changed(self, event: ChoiceBar.Chosen) -> None:
        which, value = event.which, event.value
        if self.conv is None:
            self._load_context()
            return
        if value == getattr(self.conv, f"{which}_id"):
            return  # already so
        setter = self.chat.set_persona if which == "persona" else self.chat.set_project

        def changed(conv: Conversation) -> None:
            self.conv = conv
            self._load_context()

        self.in_thread(setter, self.conv.id, value, doing=f"setting the {which}", done=changed,
                       failed=lambda _: self._show_choices())

    def _load_context(self) -> None:
        conv = self.conv
        if conv is not None:
            work = lambda: chat_context(self.chat, conversation_id=conv.id)  # noqa: E731
        else:
            persona, project = self.choices.value("persona"), self.choices.value("project")
            work = lambda: chat_context(self.chat, persona_id=persona, project_id=project)  # noqa: E731
        self.in_thread(work, doing="reading the conversation's knowledge bases", group="context", exclusive=True,
                       done=self._show_context)

    def _show_context(self, context: ChatContext) -> None:
        self._chat_context = context
        self._status()

    def _status(self) -> None:
        context = self._chat_context
        text = Text()
        if self.turn is not None:
            text.append("answering… (Esc stops)  ", style="bold")
        if context is not None:
            if context.model:
                text.append(one_line(context.model, 40))
            else:
                text.append(context.problem or "no chat model", style="bold")
            kbs = ", ".join(context.knowledge_bases)
            text.append(" · " + (f"KBs: {kbs}" if kbs else "no knowledge base (ctrl+o)"), style="dim")
        self.query_one("#chat-status", Static).update(text)

    def action_kbs(self) -> None:
        self._with_conversation(self._open_kbs)

    def _open_kbs(self, conv: Conversation) -> None:
        from kbdesk.tui.screens.kb_popup import KbPopupScreen

        self.app.push_screen(KbPopupScreen(self.chat, conv.id), self._kbs_closed)

    def _kbs_closed(self, result: str | None) -> None:
        if result == "manage":
            self._manage_kbs()
        else:
            self._load_context()

    def _manage_kbs(self) -> None:
        from kbdesk.tui.screens.kb_list import KbListScreen

        app = self.app
        if any(isinstance(s, KbListScreen) for s in app.screen_stack):
            while not isinstance(app.screen, KbListScreen):
                app.pop_screen()
        else:
            app.push_screen(KbListScreen())

    # ── sources ────────────────────────────────────────────────────────────────
    def action_sources(self) -> None:
        from kbdesk.tui.screens.sources import SourcesScreen

        groups = source_groups(self.transcript.blocks)
        if not groups:
            self.notify("No sources yet: answers that used the knowledge bases list theirs here",
                        severity="warning")
            return
        self.app.push_screen(SourcesScreen(self.chat, groups))

    # ── asking ─────────────────────────────────────────────────────────────────
    def action_focus_question(self) -> None:
        self.query_one("#question", Input).focus()

    @on(Input.Submitted, "#question")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        if self.turn is not None:
            self.notify(BUSY, severity="warning")
            return
        event.input.value = ""
        self._with_conversation(lambda conv: self._ask(conv, text))

    def _ask(self, conv: Conversation, text: str) -> None:
        if self.turn is not None:  # a second question while the conversation was being saved
            self.notify(BUSY, severity="warning")
            return
        self.transcript.add(UserBlock(text))
        state = AnswerState()
        view = self.transcript.add(state)
        assert isinstance(view, AnswerView)
        relay = TurnRelay(lambda: self.post_message(self.Tick()))
        turn = _Turn(conv.id, state, view, relay, CancelToken())
        self.turn = turn
        turn.timer = self.set_interval(0.1, self._drain)

        def run() -> Any:
            try:
                return self.chat.ask(conv.id, text, on_event=relay.on_event, cancel=turn.token)
            finally:
                turn.ended.set()

        self.in_thread(run, doing="answering", group="turn", done=lambda _: self._drain(),
                       failed=lambda _: self._turn_failed(turn))
        self._status()
        self.refresh_bindings()

    @on(Tick)
    def _drain(self) -> None:
        turn = self.turn
        if turn is None:
            return
        events = turn.relay.drain()
        if not events:
            return
        for event in events:
            turn.state.apply(event)
            if isinstance(event, TurnStarted):
                self._chat_context = ChatContext(event.model, None, tuple(event.knowledge_bases))
        turn.view.show_state()
        if not turn.state.streaming:
            self._turn_over(turn)

    def _turn_over(self, turn: _Turn) -> None:
        if turn.timer is not None:
            turn.timer.stop()
        if self.turn is turn:
            self.turn = None
        self.refresh_list()  # the first question titles the conversation; the order changes
        self._status()
        self.refresh_bindings()

    def _turn_failed(self, turn: _Turn) -> None:
        """The turn raised before it could finish (reported already): show what was saved."""
        self._turn_over(turn)
        self.open_conversation(turn.conversation_id)

    def action_stop(self) -> None:
        if self.turn is not None:
            self.turn.token.cancel()
            self.query_one("#chat-status", Static).update(Text("stopping…", style="bold"))

    def action_back(self) -> None:
        self.app.pop_screen()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop":
            return self.turn is not None
        if action == "back":
            return self.turn is None
        return True

    # ── the command palette ────────────────────────────────────────────────────
    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("New conversation", "Start a new conversation", self.action_new_conversation)
        if self.conv is not None:
            yield SystemCommand("Rename conversation", "Give this conversation a title", self.action_rename)
            yield SystemCommand("Delete conversation", "Delete this conversation and its messages",
                                self.action_delete_conversation)
        yield SystemCommand("Knowledge bases of this conversation", "Switch KBs on or off (ctrl+o)",
                            self.action_kbs)
        yield SystemCommand("Sources", "Open a passage an answer used (ctrl+s)", self.action_sources)
        if self.turn is not None:
            yield SystemCommand("Stop the answer", "Stop the answer that is coming (Esc)", self.action_stop)
        for persona in self.personas:  # names are data: escaped, the palette reads markup
            yield SystemCommand(f"Persona: {escape(one_line(persona.name, 40))}",
                                "Use this persona in the conversation",
                                lambda p=persona.id: self.choices.choose("persona", p))
        for project in self.projects:
            yield SystemCommand(f"Project: {escape(one_line(project.name, 40))}",
                                "Put the conversation in this project",
                                lambda p=project.id: self.choices.choose("project", p))
