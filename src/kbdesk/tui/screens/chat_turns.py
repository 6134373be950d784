"""Asking on the chat screen: one turn at a time, stoppable at any moment.

A turn runs ``ChatService.ask`` in a thread worker. Its events go through a
:class:`~kbdesk.tui.chat_state.TurnRelay`, which merges text deltas; the worker only posts
a :class:`TurnTick` (never touches a widget), and the screen drains the relay on each tick
and on a short timer, applying the events to the answer's state and its view.

Stop (Esc) cancels the turn's token at once and shows "stopped" without waiting for the
worker: the providers close the connection, the engine saves what came and ends the turn.
Back cancels too and leaves at once; the worker finishes on its own. Only when the app is
closing does the screen wait (a little) for it, so the desk is not closed under it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from kbdesk.chat.events import TurnStarted
from kbdesk.providers.chat import CancelToken
from kbdesk.store.chat import Conversation
from kbdesk.tui.chat_state import AnswerState, ChatContext, TurnRelay, UserBlock
from kbdesk.tui.widgets.answer_view import AnswerView

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService

BUSY = "An answer is still coming: wait for it, or press Esc to stop it"
SAVING = "The stopped answer is still being saved: ask again in a moment"
STOP_WAIT = 3.0
"""Seconds a closing app waits for a stopped answer to be saved."""


class TurnTick(Message, bubble=False):
    """The turn's relay has events (posted from the worker thread)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TurnTick)


@dataclass
class Turn:
    conversation_id: str
    state: AnswerState
    view: AnswerView
    relay: TurnRelay
    token: CancelToken
    timer: Timer | None = None
    ended: threading.Event = field(default_factory=threading.Event)
    """Set by the worker thread when ``ask`` has returned (or raised)."""

    @property
    def stopped(self) -> bool:
        return self.token.cancelled


class ChatTurns:
    """The asking half of :class:`~kbdesk.tui.screens.chat.ChatScreen` (a mixin): the
    screen provides ``chat``, ``transcript``, ``in_thread``, ``_status``, ``refresh_list``
    and ``open_conversation``."""

    turn: Turn | None = None
    _chat_context: ChatContext | None
    chat: ChatService

    def busy_message(self) -> str:
        return SAVING if self.turn is not None and self.turn.stopped else BUSY

    def _ask(self: Any, conv: Conversation, text: str) -> None:
        if self.turn is not None:  # a second question while the conversation was being saved
            self.notify(self.busy_message(), severity="warning")
            return
        self.transcript.add(UserBlock(text))
        state = AnswerState()
        view = self.transcript.add(state)
        assert isinstance(view, AnswerView)
        relay = TurnRelay(lambda: self.post_message(TurnTick()))
        turn = Turn(conv.id, state, view, relay, CancelToken())
        self.turn = turn
        turn.timer = self.set_interval(0.1, self._drain)

        def run() -> Any:
            try:
                return self.chat.ask(conv.id, text, on_event=relay.on_event, cancel=turn.token)
            finally:
                turn.ended.set()

        self.in_thread(
            run, doing="answering", group="turn", done=lambda _: self._drain(), failed=lambda _: self._turn_failed(turn)
        )
        self._status()
        self.refresh_bindings()

    def on_turn_tick(self, _: TurnTick) -> None:
        self._drain()

    def _drain(self: Any) -> None:
        turn = self.turn
        if turn is None:
            return
        events = turn.relay.drain()
        if not events:
            return
        for event in events:
            turn.state.apply(event)
            if isinstance(event, TurnStarted):
                self._chat_context = ChatContext(
                    event.model,
                    None,
                    tuple(event.knowledge_bases),
                    self._chat_context.retrieval if self._chat_context else "auto",
                )
        turn.view.show_state()
        if not turn.state.streaming:
            self._turn_over(turn)

    def _turn_over(self: Any, turn: Turn) -> None:
        if turn.timer is not None:
            turn.timer.stop()
        if self.turn is turn:
            self.turn = None
        self.refresh_list()  # the first question titles the conversation; the order changes
        self._status()
        self.refresh_bindings()

    def _turn_failed(self: Any, turn: Turn) -> None:
        """The turn raised before it could finish (reported already): show what was saved."""
        self._turn_over(turn)
        self.open_conversation(turn.conversation_id)

    def action_stop(self: Any) -> None:
        turn = self.turn
        if turn is None or turn.stopped:
            return
        turn.token.cancel()  # at once; the engine keeps what came and ends the turn
        turn.state.stopping = True
        turn.view.show_state()
        self.query_one("#chat-status", Static).update(Text("stopped — saving what came…", style="bold"))
        self.refresh_bindings()

    def action_back(self: Any) -> None:
        if self.turn is not None:
            self.turn.token.cancel()  # the worker saves what came and ends on its own
        self.app.pop_screen()

    def turn_check(self, action: str) -> bool | None:
        """``check_action`` for the turn's keys: Esc stops a running answer, else goes back."""
        if action == "stop":
            return self.turn is not None and not self.turn.stopped
        return True

    def on_unmount(self: Any) -> None:
        turn = self.turn
        if turn is None:
            return
        turn.token.cancel()  # leaving stops the answer; what came is saved
        if not self.app.is_running:  # the app is closing: let the turn save before the desk closes
            turn.ended.wait(STOP_WAIT)
