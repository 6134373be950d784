"""Chat with the knowledge bases: conversations, answers streamed as Markdown with their
sources, persona and project, the conversation's KBs (ctrl+o) and how they are searched
(ctrl+t), stopping an answer (Esc or ctrl+c; quitting stays on ctrl+q), and the way to
Settings when no model is set (ctrl+g).

Asking, stopping and leaving while an answer runs live in :mod:`.chat_turns`. Keys keep
working meanwhile: typing the next question, scrolling, opening sources, the KB popup, help.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.widgets import Header, Input, OptionList, Static

from kbdesk.chat.safety import one_line
from kbdesk.store.chat import Conversation, Persona, Project
from kbdesk.tui.chat_state import ChatContext, blocks_from_messages, chat_context, source_groups
from kbdesk.tui.screens.base import DeskScreen
from kbdesk.tui.screens.chat_conversations import ConversationActions
from kbdesk.tui.screens.chat_turns import ChatTurns, Turn, TurnTick
from kbdesk.tui.widgets.choice_bar import ChoiceBar
from kbdesk.tui.widgets.conversation_list import ConversationList
from kbdesk.tui.widgets.fit_line import HINT, FitLine, Part
from kbdesk.tui.widgets.keys_footer import KeysFooter
from kbdesk.tui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService

POLICIES = {  # how a conversation's KBs are searched (kbdesk.chat.retrieval), in the order ctrl+t steps
    "auto": "the model is asked to search them; kbdesk searches when it does not",
    "always": "kbdesk searches them before every answer",
    "tool": "only when the model calls kb_search (you are told when it did not)",
    "off": "they are not searched",
}


class ChatScreen(ChatTurns, ConversationActions, DeskScreen):
    CSS_PATH = "chat.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop", "Stop", id="chat.stop"),
        # ctrl+c stops an answer as it does in `kbdesk chat` (before the question box copies or
        # the app says how to quit: neither is what someone pressing it mid-answer wants)
        Binding("ctrl+c", "stop", "Stop", id="chat.stop_ctrl_c", show=False, priority=True),
        Binding("escape", "back", "Back", id="chat.back"),
        Binding("ctrl+n", "new_conversation", "New", id="chat.new"),
        Binding("ctrl+r,f2", "rename", "Rename", id="chat.rename"),
        Binding("ctrl+o", "kbs", "KBs", id="chat.kbs"),
        Binding("ctrl+y", "sources", "Sources", id="chat.sources"),  # ctrl+s saves, on every screen
        Binding("ctrl+t", "retrieval", "KB search", id="chat.retrieval", show=False),
        Binding("ctrl+f", "filters", "Filters", id="chat.filters", show=False),
        Binding("ctrl+g", "model_settings", "Model settings", id="chat.model", show=False),
        Binding("ctrl+l", "focus_question", "Question", id="chat.question", show=False),
    ]

    Tick = TurnTick

    def __init__(self, chat: ChatService, conversation: str | None = None) -> None:
        super().__init__()
        self.chat = chat
        self.conv: Conversation | None = None
        self.turn: Turn | None = None
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
                yield Static("", id="no-model")
                yield Transcript(id="transcript")
                yield FitLine(id="chat-status")
                yield Input(placeholder="Ask the knowledge bases… (Enter)", id="question", max_length=32_000)
        yield KeysFooter()

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def choices(self) -> ChoiceBar:
        return self.query_one(ChoiceBar)

    def on_mount(self) -> None:
        self.sub_title = "chat"
        self.query_one("#question", Input).focus()
        self.in_thread(
            lambda: (self.chat.conversations(), self.chat.personas(), self.chat.projects()),
            doing="loading conversations",
            done=self._loaded,
        )

    def on_screen_resume(self) -> None:
        if self._chat_context is not None:  # back from notes or a dialog: KBs may have changed
            self._load_context()

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
        self.in_thread(
            self.chat.conversations, doing="loading conversations", group="list", exclusive=True, done=self._listed
        )

    def _listed(self, conversations: list[Conversation]) -> None:
        if self.conv is not None:  # its title and message count as saved
            self.conv = next((c for c in conversations if c.id == self.conv.id), self.conv)
        self.conversations.load(conversations, self.conv.id if self.conv else None)

    def open_conversation(self, conv_id: str) -> None:
        def read() -> tuple[Conversation, list[Any], ChatContext]:
            return (
                self.chat.conversation(conv_id),
                self.chat.messages(conv_id),
                chat_context(self.chat, conversation_id=conv_id),
            )

        self.in_thread(
            read,
            doing="opening the conversation",
            group="open",
            exclusive=True,
            done=self._opened,
            failed=lambda _: self.refresh_list(),
        )

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

    def _with_conversation(self, then: Callable[[Conversation], object]) -> None:
        """Run ``then`` with the conversation on screen, saving a new one first."""
        if self.conv is not None:
            then(self.conv)
            return

        def created(conv: Conversation) -> None:
            self.conv = conv
            self.refresh_list()
            then(conv)

        self.in_thread(
            self.chat.new_conversation,
            "",
            persona=self.choices.value("persona"),
            project=self.choices.value("project"),
            doing="starting a conversation",
            done=created,
        )

    @on(OptionList.OptionSelected, "#conversations")
    def _switch(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.conv is not None and event.option_id == self.conv.id:
            self.query_one("#question", Input).focus()
            return
        if self.turn is not None:
            self.notify(self.busy_message(), severity="warning")
            self.conversations.mark(self.conv.id if self.conv else None)
            return
        if event.option_id:
            self.open_conversation(event.option_id)
            self.query_one("#question", Input).focus()

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

        self.in_thread(
            setter,
            self.conv.id,
            value,
            doing=f"setting the {which}",
            done=changed,
            failed=lambda _: self._show_choices(),
        )

    def _load_context(self) -> None:
        conv = self.conv
        if conv is not None:
            work = lambda: chat_context(self.chat, conversation_id=conv.id)  # noqa: E731
        else:
            persona, project = self.choices.value("persona"), self.choices.value("project")
            work = lambda: chat_context(self.chat, persona_id=persona, project_id=project)  # noqa: E731
        self.in_thread(
            work,
            doing="reading the conversation's knowledge bases",
            group="context",
            exclusive=True,
            done=self._show_context,
        )

    def _show_context(self, context: ChatContext) -> None:
        self._chat_context = context
        banner = self.query_one("#no-model", Static)
        banner.display = context.model is None
        if context.model is None:
            banner.update(self._no_model_text(context))
        self._status()

    def _no_model_text(self, context: ChatContext) -> Text:
        key = self._key_for("model_settings")
        text = Text()
        text.append("No chat model to answer with. ", style="bold")
        text.append("Choose a provider and a model for the chat role in Settings → Model roles")
        text.append(f" (press {key} to go there)." if key else ".")
        if context.problem:
            text.append(f"\n{context.problem}", style="dim")
        return text

    def _key_for(self, action: str) -> str | None:
        """The key bound to ``action`` now (a keymap may have moved it)."""
        return next((key for key, active in self.active_bindings.items() if active.binding.action == action), None)

    def _status(self) -> None:
        """One line: the turn, the chat model, the KBs and how they are searched. Too long for
        the pane, the KB names are cut first, then the model; the rest always shows."""
        context = self._chat_context
        parts: list[Part] = []
        if self.turn is not None:
            turn = "stopped — saving what came…  " if self.turn.stopped else "answering… (Esc stops)  "
            parts.append((turn, "bold", 0))
        if context is not None:
            if context.model:
                parts.append((one_line(context.model, 40), "", 1))
            else:
                parts.append(("no chat model", "bold", 0))
            kbs = ", ".join(context.knowledge_bases)
            if kbs:
                parts += [(" · KBs: ", "dim", 0), (kbs, "dim", 2), (f" · search: {context.retrieval}", "dim", 0)]
                if context.filters:
                    parts.append((f" · within {one_line(context.filters.describe(), 80)}", "dim", 3))
            else:
                parts += [(" · no knowledge base", "dim", 0), (" (ctrl+o)", "dim", HINT)]
        self.query_one("#chat-status", FitLine).show(parts)

    async def action_model_settings(self) -> None:
        from textual.widgets import TabbedContent

        from kbdesk.tui.screens.settings import SettingsScreen

        settings = SettingsScreen()
        await self.app.push_screen(settings)
        settings.query_one(TabbedContent).active = "roles"

    # ── how the KBs are searched ───────────────────────────────────────────────
    def action_retrieval(self) -> None:
        """The next policy for this conversation (auto → always → tool → off → auto)."""
        order = list(POLICIES)
        current = self._chat_context.retrieval if self._chat_context else "auto"
        following = order[(order.index(current) + 1) % len(order)] if current in order else "auto"
        self.set_retrieval(following)

    def set_retrieval(self, policy: str | None) -> None:
        """Set this conversation's policy (None: as its persona or the settings say)."""

        def changed(conv: Conversation) -> None:
            self.conv = conv
            self._load_context()
            explained = POLICIES[policy] if policy else "as the persona or the settings say"
            self.notify(explained, title=f"KB search: {policy or 'default'}", markup=False)

        self._with_conversation(
            lambda conv: self.in_thread(
                self.chat.set_retrieval,
                conv.id,
                policy,
                doing="setting how the KBs are searched",
                group="retrieval",
                exclusive=True,
                done=changed,
            )
        )

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
            self.notify("No sources yet: answers that used the knowledge bases list theirs here", severity="warning")
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
            self.notify(self.busy_message(), severity="warning")
            return
        event.input.value = ""
        self._with_conversation(lambda conv: self._ask(conv, text))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.turn_check(action)

    # ── the command palette ────────────────────────────────────────────────────
    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("New conversation", "Start a new conversation", self.action_new_conversation)
        if self.conv is not None:
            yield SystemCommand("Rename conversation", "Give this conversation a title", self.action_rename)
            yield SystemCommand(
                "Delete conversation", "Delete this conversation and its messages", self.action_delete_conversation
            )
        yield SystemCommand("Knowledge bases of this conversation", "Switch KBs on or off (ctrl+o)", self.action_kbs)
        yield SystemCommand("Sources", "Open a passage an answer used (ctrl+y)", self.action_sources)
        if self.turn is not None:
            yield SystemCommand("Stop the answer", "Stop the answer that is coming (Esc)", self.action_stop)
        for policy, explained in POLICIES.items():
            yield SystemCommand(
                f"KB search: {policy}",
                f"Search this conversation's KBs: {explained} (ctrl+t)",
                lambda p=policy: self.set_retrieval(p),
            )
        yield SystemCommand(
            "KB search: as the persona or settings say",
            "Clear this conversation's own choice",
            lambda: self.set_retrieval(None),
        )
        yield SystemCommand(
            "Model settings", "Choose the chat model: Settings → Model roles (ctrl+g)", self.action_model_settings
        )
        for persona in self.personas:  # names are data: escaped, the palette reads markup
            yield SystemCommand(
                f"Persona: {escape(one_line(persona.name, 40))}",
                "Use this persona in the conversation",
                lambda p=persona.id: self.choices.choose("persona", p),
            )
        for project in self.projects:
            yield SystemCommand(
                f"Project: {escape(one_line(project.name, 40))}",
                "Put the conversation in this project",
                lambda p=project.id: self.choices.choose("project", p),
            )
