"""Helpers for the TUI chat tests: two keyword KBs, what a widget shows, a scripted turn. The
chat server and desk fixtures are tests/chat_fixtures.py's (a plugin every folder has)."""

from __future__ import annotations

import queue
import time

from chat_support import add_doc, write_config
from fake_chat import FakeChat

__all__ = [
    "FakeChat",
    "ScriptedAsk",
    "add_doc",
    "docs",
    "screen_text",
    "shown",
    "write_config",
]


def docs(desk):
    """Two keyword KBs: Docs (2 documents, personal: on by default) and Wiki (global: off)."""
    desk.create_kb("Docs")
    add_doc(
        desk,
        "Docs",
        "guide.md",
        "Backups run every night at two.",
        "Restore with the snapshot name.",
        metadata={"headings": ["Guide", "Backups"]},
    )
    add_doc(desk, "Docs", "faq.txt", "The office closes at six.")
    desk.store.create_kb("Wiki", scope="global")
    add_doc(desk, "Wiki", "manual.pdf", "Backups are kept for thirty days.", metadata={"page": 4})
    return desk


def shown(widget) -> str:
    """The text ``widget`` shows: its own and that of every displayed Static in it (Markdown
    blocks are Statics), in order, one per line."""
    from textual.widgets import Static

    parts = []
    for node in [widget, *widget.query("*")]:
        if (
            isinstance(node, Static)
            and node.display
            and all(a.display for a in node.ancestors_with_self if hasattr(a, "display"))
        ):
            text = str(node.render())
            if text.strip():
                parts.append(text)
    return "\n".join(parts)


def screen_text(app) -> str:
    """The screen as the user sees it, one line per row (no styles)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip).rstrip() for strip in strips)


class ScriptedAsk:
    """Stands in for ``ChatService.ask`` in the turn's worker thread: it hands the turn's
    events over as the test sends them (:meth:`send`), so the test decides what the screen
    has seen. With ``ignore_cancel`` it goes on until the test sends a ``TurnFinished`` —
    a worker provably still running after Stop or Back; without, a cancel ends the turn
    as the engine would (status "cancelled")."""

    def __init__(self, *, ignore_cancel: bool = False) -> None:
        self.ignore_cancel = ignore_cancel
        self.batches: queue.Queue = queue.Queue()
        self.calls: list[tuple[str | None, str]] = []

    def send(self, *events) -> None:
        self.batches.put(events)

    def __call__(self, conversation, question, *, on_event, cancel=None, **kwargs):
        from kbdesk.chat import Answer, Notice, TurnFinished

        self.calls.append((conversation, question))
        deadline = time.monotonic() + 60  # a test that forgot to finish the turn does not hang the run
        while time.monotonic() < deadline:
            try:
                events = self.batches.get(timeout=0.05)
            except queue.Empty:
                if cancel is not None and cancel.cancelled and not self.ignore_cancel:
                    answer = Answer(conversation, None, "", "cancelled")
                    on_event(Notice("stopped by the user", "warning"))
                    on_event(TurnFinished(answer))
                    return answer
                continue
            for event in events:
                on_event(event)
                if isinstance(event, TurnFinished):
                    return event.answer
        raise AssertionError("the test never finished the scripted turn")


async def open_chat(pilot):
    """Open the chat screen from the KB list (the ``c`` key) and return it."""
    from kbdesk.tui.screens.chat import ChatScreen
    from tui_support import press_into

    return await press_into(pilot, "c", ChatScreen)
