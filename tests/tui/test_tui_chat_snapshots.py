"""Snapshots of the chat screen, the KB popup, the sources and the notes at 80×24.

Deterministic: the answer comes from the scripted server (no base URL or port is shown),
conversations are listed by title only (no times, no ids), no notification, no blinking
cursor. Update after a deliberate change with ``pytest tests/tui --snapshot-update``.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input

from tui_chat_support import chat_desk, chat_server, docs  # noqa: F401 - fixtures
from tui_support import settle, type_text
from kbdesk.tui.app import make_app

SIZE = (80, 24)


def before(*steps: Any):
    async def run(pilot) -> None:
        await settle(pilot)
        for step in steps:
            result = step(pilot)
            if hasattr(result, "__await__"):
                await result
            await settle(pilot)
        pilot.app.clear_notifications()
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        await pilot.pause()

    return run


@pytest.fixture
def answered(chat_desk, chat_server):
    """One conversation: a question answered from Docs through kb_search, and an older one."""
    docs(chat_desk)
    chat = chat_desk.chat()
    chat_server.reply("Hello! Ask me about the documents.")
    chat.ask(None, "Hi")
    chat_server.reply("Let me look.", tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply("Backups run every night at two [1]; restore with the snapshot name.")
    chat.ask(None, "When do backups run?")
    chat.create_persona("Tutor", "Explain it simply.", kbs=["Wiki"])
    return chat_desk


async def _open_chat(pilot) -> None:
    await pilot.press("c")


def test_chat_with_an_answer_and_its_sources(snap_compare, answered):
    assert snap_compare(make_app(answered), terminal_size=SIZE, run_before=before(_open_chat))


def test_chat_new_conversation(snap_compare, answered):
    assert snap_compare(make_app(answered), terminal_size=SIZE,
                        run_before=before(_open_chat, lambda p: p.press("ctrl+n")))


def test_kb_popup(snap_compare, answered):
    def persona(pilot):
        chat = answered.chat()
        conv = chat.conversations()[0]
        chat.set_persona(conv.id, "Tutor")

    assert snap_compare(make_app(answered), terminal_size=SIZE,
                        run_before=before(persona, _open_chat, lambda p: p.press("ctrl+o")))


def test_sources(snap_compare, answered):
    assert snap_compare(make_app(answered), terminal_size=SIZE,
                        run_before=before(_open_chat, lambda p: p.press("ctrl+s")))


def test_source_passage(snap_compare, answered):
    assert snap_compare(make_app(answered), terminal_size=SIZE,
                        run_before=before(_open_chat, lambda p: p.press("ctrl+s"), lambda p: p.press("enter")))


@pytest.fixture
def noted(chat_desk):
    notes = chat_desk.chat().notes
    notes.add("Backups are checked every Monday by Alice.", "Backup checks")
    notes.add("The lighthouse launch is in March [tentative].", "Launch")
    return chat_desk


def test_notes(snap_compare, noted):
    assert snap_compare(make_app(noted), terminal_size=SIZE, run_before=before(lambda p: p.press("j")))


def test_notes_search(snap_compare, noted):
    async def search(pilot) -> None:
        await pilot.press("slash")
        await type_text(pilot, "backups")
        await pilot.press("enter")

    assert snap_compare(make_app(noted), terminal_size=SIZE, run_before=before(lambda p: p.press("j"), search))
