"""Snapshots of the chat screen (a Markdown answer, waiting for the model, no chat model),
the KB popup, the sources and the notes at 80×24.

Deterministic: the answer comes from the scripted server (no base URL or port is shown),
conversations are listed by title only (no times, no ids), no notification, no blinking
cursor. Update after a deliberate change with ``pytest tests/tui --snapshot-update``.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input

from kbdesk.chat import TurnStarted, Waiting
from kbdesk.tui.app import make_app
from tui_chat_support import ScriptedAsk, docs, shown
from tui_support import before, settle, type_text, wait_until

SIZE = (80, 24)


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
    assert snap_compare(
        make_app(answered), terminal_size=SIZE, run_before=before(_open_chat, lambda p: p.press("ctrl+n"))
    )


def test_kb_popup(snap_compare, answered):
    def persona(pilot):
        chat = answered.chat()
        conv = chat.conversations()[0]
        chat.set_persona(conv.id, "Tutor")

    assert snap_compare(
        make_app(answered), terminal_size=SIZE, run_before=before(persona, _open_chat, lambda p: p.press("ctrl+o"))
    )


def test_sources(snap_compare, answered):
    assert snap_compare(
        make_app(answered), terminal_size=SIZE, run_before=before(_open_chat, lambda p: p.press("ctrl+y"))
    )


def test_source_passage(snap_compare, answered):
    assert snap_compare(
        make_app(answered),
        terminal_size=SIZE,
        run_before=before(_open_chat, lambda p: p.press("ctrl+y"), lambda p: p.press("enter")),
    )


def test_chat_markdown_answer(snap_compare, chat_desk, chat_server):
    docs(chat_desk)
    chat_server.reply(
        "**Backups** run nightly at two [1].\n\n- kept for *30 days*\n- restore with "
        "`kbdesk restore`\n\nSee [the guide](https://example.com/guide); <b>html</b> stays text."
    )
    chat_desk.chat().ask(None, "When do backups run?")
    assert snap_compare(make_app(chat_desk), terminal_size=SIZE, run_before=before(_open_chat))


def test_chat_waiting_for_the_model(snap_compare, chat_desk):
    scripted = ScriptedAsk()  # the turn stays open (its worker running) until the app closes

    async def waiting(pilot) -> None:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        screen = pilot.app.screen
        screen.chat.ask = scripted
        await type_text(pilot, "Summarise the handbook")
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: screen.turn is not None and scripted.calls)
        scripted.send(TurnStarted(screen.turn.conversation_id, "u1", "tiny", "local"), Waiting(12.0))
        assert await wait_until(pilot, lambda: "waiting for the model" in shown(screen.turn.view))
        for field in screen.query(Input):
            field.cursor_blink = False
        await pilot.pause(0.1)

    assert snap_compare(make_app(chat_desk), terminal_size=SIZE, run_before=waiting)


def test_chat_without_a_model(snap_compare, tui_desk):
    assert snap_compare(make_app(tui_desk), terminal_size=SIZE, run_before=before(_open_chat))


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
