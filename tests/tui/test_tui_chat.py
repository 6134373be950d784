"""Pilot tests: the chat screen against the scripted chat server on loopback, the KB popup,
sources, conversations, persona and project, and the notes screen."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.content import Content
from textual.widgets import Input, OptionList, Select, SelectionList, Static, TextArea

from helpers import present
from kbdesk.chat import TextDelta
from kbdesk.errors import InvalidInputError
from kbdesk.tui.app import KbdeskApp, make_app
from kbdesk.tui.chat_state import AnswerState, UserBlock
from kbdesk.tui.screens.chat import ChatScreen
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.screens.help import HelpScreen
from kbdesk.tui.screens.kb_list import KbListScreen
from kbdesk.tui.screens.kb_popup import KbPopupScreen
from kbdesk.tui.screens.note_form import NoteFormScreen
from kbdesk.tui.screens.notes import NotesScreen
from kbdesk.tui.screens.prompt import PromptScreen
from kbdesk.tui.screens.source import SourceScreen
from kbdesk.tui.screens.sources import SourcesScreen
from kbdesk.tui.widgets.conversation_list import ConversationList
from kbdesk.tui.widgets.transcript import AnswerView
from tui_chat_support import docs, open_chat, shown
from tui_support import current_screen, notifications, settle, type_text, wait_until

SIZE = (80, 24)


def _plain(prompt: object) -> str:
    assert isinstance(prompt, Text | Content), prompt  # an option's text, as kbdesk made it
    return prompt.plain


def rendered(widget) -> str:
    return str(widget.render())


def option_texts(options: OptionList) -> list[str]:
    return [_plain(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def ask(pilot, text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")
    await settle(pilot)


async def test_an_answer_streams_with_its_sources_and_a_key_opens_one(chat_desk, chat_server):
    docs(chat_desk)
    chat_server.reply("Let me look.", tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply("Backups run nightly [1]. [bold]not bold[/bold] [link=https://example.com]x[/link]\x1b[31m")
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        assert screen.query_one("#question", Input).has_focus
        await ask(pilot, "When do backups run?")
        user, answer = screen.transcript.blocks
        assert isinstance(user, UserBlock) and user.text == "When do backups run?"
        assert isinstance(answer, AnswerState) and answer.status == "complete" and answer.model == "tiny"
        assert [s["label"] for s in answer.sources] == ["guide.md § Guide › Backups — Docs"]
        text = shown(screen.query_one(AnswerView))
        # model text is data: brackets stay as they are, no escape sequence reaches the screen
        assert "Backups run nightly [1]. [bold]not bold[/bold] [link=https://example.com]x[/link]" in text
        assert "\x1b" not in text
        assert "✓ kb_search “backups” — 1 result from Docs" in text
        assert "Sources\n [1] guide.md § Guide › Backups — Docs" in text
        assert "tiny · KBs: Docs" in rendered(screen.query_one("#chat-status", Static))
        # what kbdesk sent: the tool, the hint with the conversation's KBs
        first = chat_server.chat_requests[0]
        assert [t["function"]["name"] for t in first["tools"]] == ["kb_search"]
        assert '- "Docs" (2 documents)' in first["messages"][0]["content"]
        # the conversation is saved and listed under its first question
        assert option_texts(screen.conversations) == ["When do backups run?"]
        # a key opens the sources, Enter opens the passage with its neighbours
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert isinstance(app.screen, SourcesScreen)
        await pilot.press("enter")
        await settle(pilot)
        source = app.screen
        assert isinstance(source, SourceScreen)
        passages = [rendered(p) for p in source.query(".passage")]
        assert passages == ["Backups run every night at two.", "Restore with the snapshot name."]
        assert rendered(source.query_one(".passage.current")) == "Backups run every night at two."
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert current_screen(app) is screen
        # the same conversation, read back from the database, looks the same
        screen.open_conversation(screen.conv.id)
        await settle(pilot)
        again = screen.transcript.blocks[1]
        assert again.text == answer.text and again.sources == answer.sources
        assert "✓ kb_search “backups”" in shown(screen.query_one(AnswerView))


async def test_keys_keep_working_while_an_answer_streams_and_esc_stops_it(chat_desk, chat_server):
    docs(chat_desk)
    words = " ".join(f"w{i}" for i in range(200))
    chat_server.slow(words, delay=0.05)  # ten seconds if nobody stops it
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        await type_text(pilot, "Tell me everything")
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: screen.turn is not None and "w3" in screen.turn.state.text)
        turn = screen.turn
        bindings = {b.binding.action for b in screen.active_bindings.values() if b.enabled}
        assert "stop" in bindings  # Esc stops (and once stopped, goes back)
        # typing, the KB popup and help all work meanwhile
        await type_text(pilot, "next one")
        assert screen.query_one("#question", Input).value == "next one"
        await pilot.press("ctrl+o")
        await settle_ui(pilot)
        assert isinstance(app.screen, KbPopupScreen)
        await pilot.press("escape")
        await settle_ui(pilot)
        assert current_screen(app) is screen
        await pilot.press("enter")  # a second question waits for the first answer
        await pilot.pause()
        assert any("still coming" in n for n in notifications(app))
        assert screen.query_one("#question", Input).value == "next one"
        assert screen.turn is turn
        await pilot.press("escape")
        assert await wait_until(pilot, lambda: screen.turn is None)
        await settle(pilot)
        assert turn.state.status == "cancelled"
        assert "stopped by the user" in shown(turn.view)
        assert current_screen(app) is screen  # Esc stopped the answer; it did not leave
        saved = chat_desk.chat().messages(screen.conv.id)
        assert [(m.role, m.status) for m in saved][-1] == ("notice", "cancelled")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, KbListScreen)


async def test_ctrl_c_stops_a_streaming_answer_and_quit_stays_on_ctrl_q(chat_desk, chat_server):
    docs(chat_desk)
    chat_server.slow(" ".join(f"w{i}" for i in range(200)), delay=0.05)
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        await type_text(pilot, "Tell me everything")
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: screen.turn is not None and "w3" in screen.turn.state.text)
        turn = screen.turn
        await pilot.press("ctrl+c")  # the question box has focus: it still stops the answer
        assert await wait_until(pilot, lambda: screen.turn is None)
        await settle(pilot)
        assert turn.state.status == "cancelled"
        assert not any("quit" in n.lower() for n in notifications(app))
        assert app.is_running and app.screen is screen
        await type_text(pilot, "abc")
        await pilot.press("ctrl+c")  # no answer streaming: the question box keeps its text, nothing stops
        await settle(pilot)
        assert screen.query_one("#question", Input).value == "abc" and app.screen is screen


async def settle_ui(pilot) -> None:
    """A few refreshes without waiting for workers (the turn's worker is still running)."""
    for _ in range(5):
        await pilot.pause(0.02)


async def test_text_deltas_are_coalesced(chat_desk, chat_server):
    words = " ".join(f"w{i}" for i in range(300))
    chat_server.slow(words, delay=0.002)
    ticks = []

    def hook(message) -> None:
        if isinstance(message, ChatScreen.Tick):
            ticks.append(message)

    app = make_app(chat_desk)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        screen = await open_chat(pilot)
        deltas = []
        real_ask = screen.chat.ask

        def counting_ask(*args, on_event, **kwargs):
            def count(event):
                if isinstance(event, TextDelta):
                    deltas.append(event)
                on_event(event)

            return real_ask(*args, on_event=count, **kwargs)

        screen.chat.ask = counting_ask
        started = time.monotonic()
        await ask(pilot, "Count")
        elapsed = time.monotonic() - started
        answer = screen.transcript.blocks[-1]
        assert answer.status == "complete" and answer.text == words
        assert len(deltas) == 300
        # at most one wake-up per 50 ms of text, plus the turn's other events
        assert ticks and len(ticks) <= elapsed / 0.05 + 6, (len(ticks), elapsed)
        assert len(ticks) < len(deltas) / 3


async def test_conversations_switch_rename_and_delete(chat_desk, chat_server):
    chat = chat_desk.chat()
    chat_server.reply("First answer.")
    first = chat.ask(None, "First question").conversation_id
    chat_server.reply("Second answer.")
    second = chat.ask(None, "Second question").conversation_id
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        listing = screen.query_one(ConversationList)
        assert [c.id for c in listing.conversations] == [second, first]  # the latest first, and open
        assert screen.conv.id == second and "Second answer." in shown(screen.query_one(AnswerView))
        listing.focus()
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen.conv.id == first and "First answer." in shown(screen.query_one(AnswerView))
        assert screen.query_one("#question", Input).has_focus
        # rename
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one(Input).value = "Renamed [not markup]"
        await pilot.press("enter")
        await settle(pilot)
        assert chat.conversation(first).title == "Renamed [not markup]"
        assert sorted(option_texts(listing)) == ["Renamed [not markup]", "Second question"]
        # delete the highlighted one from the list
        listing.focus()
        listing.highlighted = [c.id for c in listing.conversations].index(first)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert [c.id for c in chat.conversations()] == [second]
        assert [c.id for c in listing.conversations] == [second]
        assert screen.conv is None and not screen.transcript.blocks  # it was on screen: a new one now
        # a new conversation is saved with its first question
        chat_server.reply("Third answer.")
        screen.query_one("#question", Input).focus()
        await ask(pilot, "Third question")
        assert len(chat.conversations()) == 2 and present(screen.conv, "conversation").title == "Third question"
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert screen.conv is None and listing.highlighted is None


async def test_persona_and_project_apply_to_the_conversation(chat_desk, chat_server):
    docs(chat_desk)
    chat = chat_desk.chat()
    tutor = chat.create_persona("Tutor", "Explain it simply.", kbs=["Wiki"])
    ops = chat.create_project("Ops")
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        assert screen.conv is None
        screen.query_one("#persona", Select).value = tutor.id
        await settle(pilot)
        assert "KBs: Wiki, Docs" in rendered(screen.query_one("#chat-status", Static))
        chat_server.reply("Simply put: nightly.")
        screen.query_one("#question", Input).focus()
        await ask(pilot, "Backups?")
        assert chat.conversation(present(screen.conv, "conversation").id).persona_id == tutor.id
        system = chat_server.chat_requests[-1]["messages"][0]["content"]
        assert "Explain it simply." in system and '"Wiki"' in system
        screen.query_one("#project", Select).value = ops.id
        await settle(pilot)
        assert chat.conversation(present(screen.conv, "conversation").id).project_id == ops.id
        screen.query_one("#persona", Select).clear()
        await settle(pilot)
        assert chat.conversation(present(screen.conv, "conversation").id).persona_id is None
        assert "KBs: Docs" in rendered(screen.query_one("#chat-status", Static))
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "Persona: Tutor" in titles and "Project: Ops" in titles


async def test_kb_popup_switches_kbs_for_the_conversation(chat_desk, chat_server):
    docs(chat_desk)
    chat = chat_desk.chat()
    chat_desk.store.create_kb("Handbook", discoverable=False)
    chat.create_persona("Ops", kbs=["Handbook"])
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        await pilot.press("ctrl+o")  # a new conversation is saved to hold its KB choices
        await settle(pilot)
        popup = app.screen
        assert isinstance(popup, KbPopupScreen) and screen.conv is not None
        toggles = popup.query_one(SelectionList)
        assert [(r.name, r.enabled, r.locked) for r in popup.rows] == [("Docs", True, False), ("Wiki", False, False)]
        assert "Docs  (2 docs)" in _plain(toggles.get_option_at_index(0).prompt)
        assert toggles.has_focus and toggles.highlighted == 0
        await pilot.press("down", "space")  # Wiki on
        await settle(pilot)
        await pilot.press("up", "space")  # Docs off
        await settle(pilot)
        assert [(t.name, t.enabled, t.origin) for t in chat.kb_toggles(screen.conv.id)] == [
            ("Docs", False, None),
            ("Wiki", True, "conversation"),
        ]
        assert sorted(toggles.selected) == [chat_desk.kb("Wiki").id]
        await pilot.press("escape")
        await settle(pilot)
        assert current_screen(app) is screen
        assert "KBs: Wiki" in rendered(screen.query_one("#chat-status", Static))
        # a persona's KB shows checked and locked
        chat.set_persona(screen.conv.id, "Ops")
        await pilot.press("ctrl+o")
        await settle(pilot)
        popup = app.screen
        assert isinstance(popup, KbPopupScreen)
        rows = {r.name: r for r in popup.rows}
        assert rows["Handbook"].locked and rows["Handbook"].enabled
        index = [r.name for r in popup.rows].index("Handbook")
        handbook = popup.query_one(SelectionList).get_option_at_index(index)
        assert handbook.disabled and "from the persona" in _plain(handbook.prompt)
        await pilot.press("m")  # Manage KBs… goes to the KB list
        await settle(pilot)
        assert isinstance(app.screen, KbListScreen)


async def test_failures_reach_the_user(chat_desk, chat_server):
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        chat_server.error(500, "the model fell over")
        await ask(pilot, "Hello?")
        answer = screen.transcript.blocks[-1]
        assert answer.status == "error" and screen.turn is None
        assert "✗" in shown(screen.query_one(AnswerView)) and "500" in shown(screen.query_one(AnswerView))
        # something raised before the turn began: one notification, and the screen is usable again

        def broken(*args, **kwargs):
            raise InvalidInputError("the question is longer than allowed")

        screen.chat.ask = broken
        app.clear_notifications()
        await ask(pilot, "Again")
        assert notifications(app) == ["the question is longer than allowed"]
        assert screen.turn is None
        # the screen shows what was saved: the first question and its error, not the one that failed
        blocks = screen.transcript.blocks
        assert [b.text for b in blocks if isinstance(b, UserBlock)] == ["Hello?"]
        assert not any(b.streaming for b in blocks if isinstance(b, AnswerState))


async def test_notes_create_edit_search_delete(chat_desk):
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("j")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, NotesScreen)
        assert "No notes yet" in rendered(screen.query_one("#note-preview", Static))
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, NoteFormScreen)
        await type_text(pilot, "Launch")
        await pilot.press("enter")  # on to the text
        assert app.screen.query_one("#note-content", TextArea).has_focus
        await type_text(pilot, "The")
        app.screen.query_one("#note-content", TextArea).insert(" lighthouse launch is in March.")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert current_screen(app) is screen
        [note] = chat_desk.chat().notes.list()
        assert (note.title, note.content) == ("Launch", "The lighthouse launch is in March.")
        assert "The lighthouse launch is in March." in rendered(screen.query_one("#note-preview", Static))
        await pilot.press("n")
        await settle(pilot)
        app.screen.query_one("#note-content", TextArea).text = "Backups are checked on Mondays [weekly]."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert len(chat_desk.chat().notes.list()) == 2
        # edit the highlighted one
        listing = screen.query_one(OptionList)
        listing.highlighted = [n.id for n in screen.notes].index(note.id)
        await pilot.press("e")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, NoteFormScreen) and form.query_one("#note-content", TextArea).text == note.content
        form.query_one("#note-content", TextArea).text = "The lighthouse launch moved to April."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert chat_desk.chat().notes.get(note.id).content == "The lighthouse launch moved to April."
        # search: letters typed in the search field are text, not keys
        await pilot.press("slash")
        await type_text(pilot, "lighthouse need")
        assert current_screen(app) is screen and screen.query_one("#notes-query", Input).value == "lighthouse need"
        screen.query_one("#notes-query", Input).value = "lighthouse"
        await pilot.press("enter")
        await settle(pilot)
        assert [n.id for n in screen.notes] == [note.id]
        status = rendered(screen.query_one("#notes-status", Static))
        assert "1 match for “lighthouse” by keyword" in status
        # the box keeps the focus after Enter: a letter typed next is text (n does not open "New note")
        await type_text(pilot, "n")
        assert current_screen(app) is screen and screen.query_one("#notes-query", Input).value == "lighthousen"
        screen.query_one("#notes-query", Input).value = "lighthouse"
        # Down goes into the list, where d deletes the highlighted note
        await pilot.press("down")
        assert screen.listing.has_focus
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert [n.content for n in chat_desk.chat().notes.list()] == ["Backups are checked on Mondays [weekly]."]
        assert screen.notes == []


async def test_chat_and_notes_keys_come_back_to_the_open_screen(chat_desk):
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        chat = await open_chat(pilot)
        chat.query_one(ConversationList).focus()
        await pilot.press("j")
        await settle(pilot)
        assert isinstance(app.screen, NotesScreen)
        await pilot.press("c")  # back to the chat already open, not a second one
        await settle(pilot)
        assert app.screen is chat
        assert sum(isinstance(s, ChatScreen) for s in app.screen_stack) == 1
        assert sum(isinstance(s, NotesScreen) for s in app.screen_stack) == 0
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Chat", "Notes", "New conversation", "Sources"} <= set(titles)
        await pilot.press("f1")  # help lists the chat's keys, and the app's chat and notes keys
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        described = [str(cell) for cell in app.screen._keys().columns[1].cells]
        for wanted in ("Sources", "KBs", "Rename", "Chat", "Notes"):
            assert wanted in described


def test_new_bindings_have_unique_ids():
    from kbdesk.tui.screens import (
        add_files,
        choose_kbs,
        chunk,
        confirm,
        help,
        kb_detail,
        kb_form,
        kb_list,
        provider_form,
        reembed,
        search,
        settings,
    )

    classes: list[type[Any]] = [
        KbdeskApp,
        add_files.AddFilesScreen,
        choose_kbs.ChooseKbsScreen,
        chunk.ChunkScreen,
        confirm.ConfirmScreen,
        help.HelpScreen,
        kb_detail.KbDetailScreen,
        kb_form.KbFormScreen,
        kb_list.KbListScreen,
        provider_form.ProviderFormScreen,
        reembed.ReembedScreen,
        search.SearchScreen,
        settings.SettingsScreen,
        ChatScreen,
        ConversationList,
        KbPopupScreen,
        SourcesScreen,
        SourceScreen,
        NotesScreen,
        NoteFormScreen,
        PromptScreen,
    ]
    ids = []
    for cls in classes:
        for binding in cls.BINDINGS:
            assert binding.id, f"{cls.__name__}: {binding.key} has no id"
            ids.append(binding.id)
    assert len(ids) == len(set(ids))


async def test_quitting_while_an_answer_streams_stops_it(chat_desk, chat_server):
    chat_server.slow(" ".join(f"w{i}" for i in range(400)), delay=0.05)  # twenty seconds unless stopped
    app = make_app(chat_desk)
    started = time.monotonic()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        await type_text(pilot, "Go")
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: screen.turn is not None and "w2" in screen.turn.state.text)
        turn = screen.turn
        await pilot.press("ctrl+q")
    assert turn.token.cancelled and turn.ended.is_set()
    assert time.monotonic() - started < 15
    [conv] = chat_desk.chat().conversations()  # what came is saved, marked as stopped
    assert [(m.role, m.status) for m in chat_desk.chat().messages(conv.id)] == [
        ("user", "complete"),
        ("assistant", "cancelled"),
        ("notice", "cancelled"),
    ]


async def test_a_store_without_conversations_is_reported(chat_desk, monkeypatch):
    from kbdesk.errors import StoreError

    def no_chat():
        raise StoreError("conversations live in the SQLite file")

    monkeypatch.setattr(chat_desk, "chat", no_chat)
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.press("j")
        await settle(pilot)
        assert isinstance(app.screen, KbListScreen)
        assert notifications(app) == ["conversations live in the SQLite file"] * 2


async def test_the_status_line_shows_the_conversations_filters_and_its_searches_keep_to_them(chat_desk, chat_server):
    from vault_support import MATCHING, vault_kb

    vault_kb(chat_desk)
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap", "max_results": 10})])
    chat_server.reply("The work roadmap [1].")
    chat_server.reply("", tool_calls=[("kb_search", {"query": "roadmap", "max_results": 10})])
    chat_server.reply("Again [1].")
    app = make_app(chat_desk)
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await open_chat(pilot)
        await ask(pilot, "What does the roadmap say?")
        assert "within" not in rendered(screen.query_one("#chat-status", Static))
        # ctrl+f: the filters as one line; a line that does not read is said, nothing changes
        await pilot.press("ctrl+f")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        await type_text(pilot, "since:someday")
        await pilot.press("enter")
        await settle(pilot)
        assert any("filter since: must be a date" in n for n in notifications(app))
        assert chat_desk.chat().conversation(screen.conv.id).filters is None
        await pilot.press("ctrl+f")
        await settle(pilot)
        await type_text(pilot, "tag:q3 path:work/**")
        await pilot.press("enter")
        await settle(pilot)
        assert "within path work/** · tags q3" in rendered(screen.query_one("#chat-status", Static))
        screen.query_one("#question", Input).focus()
        await ask(pilot, "And now?")
        answer = screen.transcript.blocks[-1]
        assert {s["source"] for s in answer.sources} == MATCHING
        assert "within path work/** · tags q3" in answer.retrieval
