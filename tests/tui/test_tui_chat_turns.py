"""Pilot tests of a turn on the chat screen: the answer as Markdown while it streams, the
turn's state under it, Stop and Back while it runs, the no-model message, the KB-search policy.

Turns run either against the scripted chat server on loopback (the real engine) or through
:class:`ScriptedAsk`, which hands the screen exactly the events the test sends — so a
worker can be kept running for as long as a test needs to prove something about it."""

from __future__ import annotations

import re
import threading

import pytest
from textual.widgets import Input, Static, TabbedContent
from textual.widgets._markdown import MarkdownBlock, MarkdownParagraph

from kbdesk.chat import Answer, Retrieval, TextDelta, TurnFinished, TurnStarted, Waiting
from kbdesk.tui.app import make_app
from kbdesk.tui.screens.kb_list import KbListScreen
from kbdesk.tui.screens.settings import SettingsScreen
from kbdesk.tui.widgets.answer_view import AnswerMarkdown, AnswerView
from tui_chat_support import (
    ScriptedAsk,
    docs,
    open_chat,
    screen_text,
    shown,
    write_config,
)
from tui_support import notifications, settle, type_text, wait_until

SIZE = (80, 24)


async def send_question(pilot, text: str) -> None:
    """Type and send a question without waiting for the answer (its worker may run on)."""
    await type_text(pilot, text)
    await pilot.press("enter")


async def ui(pilot) -> None:
    """A few refreshes without waiting for workers (the turn's worker is still running)."""
    for _ in range(5):
        await pilot.pause(0.02)


class WatchedEvent(threading.Event):
    """A turn's ``ended`` event that remembers whether the UI ever waited on it."""

    waited = False

    def wait(self, timeout=None):
        self.waited = True
        return super().wait(timeout)


def status(screen) -> str:
    return str(screen.query_one("#chat-status", Static).render())


def enabled(screen) -> set[str]:
    return {b.binding.action for b in screen.active_bindings.values() if b.enabled}


async def test_an_answer_renders_as_markdown_while_it_streams_and_links_open_nothing(
    chat_desk, chat_server, monkeypatch
):
    chat_server.reply("**Backups** run nightly.\n\n- daily at two\n- weekly", pieces=8, hold=30)  # then silence
    chat_server.reply(
        "Read [the guide](https://example.com/guide) or run `kbdesk restore`; <b>not html</b>, "
        "[bold]not markup[/bold].\n\n1. first\n2. second"
    )
    opened: list[str] = []
    app = make_app(chat_desk)
    monkeypatch.setattr(app, "open_url", lambda url, **kw: opened.append(url))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        await send_question(pilot, "Backups?")
        assert await wait_until(pilot, lambda: screen.turn is not None and "weekly" in shown(screen.turn.view))
        turn = screen.turn
        # mid-answer (the server is silent after "weekly"): the text is Markdown already
        assert turn.state.streaming and not turn.ended.is_set()
        text = shown(turn.view)
        assert "Backups run nightly." in text and "**" not in text
        assert "daily at two" in text and "- daily" not in text  # a list, not a dash
        assert turn.view.query(MarkdownParagraph)
        await pilot.press("escape")  # stop it: what came is kept, still as Markdown
        assert await wait_until(pilot, lambda: screen.turn is None)
        await settle(pilot)
        assert turn.state.status == "cancelled" and "Backups run nightly." in shown(turn.view)
        # a complete answer: code, a link, HTML and brackets shown as written
        await send_question(pilot, "And restoring?")
        await settle(pilot)
        view = list(screen.query(AnswerView))[-1]
        text = shown(view)
        assert "Read the guide or run kbdesk restore; <b>not html</b>, [bold]not markup[/bold]." in text
        assert "first" in text and "second" in text
        # clicking the link opens nothing; a notification names the address
        paragraph = next(p for p in view.query(MarkdownParagraph) if "the guide" in str(p.render()))
        await pilot.click(paragraph, offset=(str(paragraph.render()).index("the guide") + 2, 0))
        await ui(pilot)
        assert opened == []
        assert any("https://example.com/guide" in n for n in notifications(app))


async def test_a_long_answer_is_appended_not_rerendered(chat_desk, chat_server, monkeypatch):
    chat_desk.chat().ask(None, "First")  # the scripted server's default answer: "ok"
    paragraphs = [f"Paragraph {i} says *something* about backups." for i in range(60)]
    words = "\n\n".join(paragraphs)
    chat_server.slow(words, delay=0.002)
    appends: list[str] = []
    updates: list[str] = []
    real_append, real_update = AnswerMarkdown.append, AnswerMarkdown.update

    def append(self, markdown):
        appends.append(markdown)
        return real_append(self, markdown)

    def update(self, markdown):
        updates.append(markdown)
        return real_update(self, markdown)

    monkeypatch.setattr(AnswerMarkdown, "append", append)
    monkeypatch.setattr(AnswerMarkdown, "update", update)
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        earlier = screen.query_one(AnswerView)
        earlier_blocks = list(earlier.query(MarkdownBlock))
        updates.clear()
        appends.clear()
        await send_question(pilot, "Tell me a lot")

        def latest():  # the new answer's view, whether its turn is still running or done
            views = list(screen.query(AnswerView))
            return views[-1] if views and views[-1] is not earlier else None

        assert await wait_until(pilot, lambda: latest() is not None and "Paragraph 1 says" in shown(latest()))
        view = latest()
        first = view.query(MarkdownParagraph).first()
        await settle(pilot)
        assert view.state.status == "complete"
        blocks = list(view.query(MarkdownParagraph))
        assert [str(b.render()) for b in blocks] == [p.replace("*", "") for p in paragraphs]  # once each, in order
        assert blocks[0] is first  # the first paragraph was never rebuilt while the rest came
        assert list(earlier.query(MarkdownBlock)) == earlier_blocks  # nor was the answer before
        assert all(b.is_attached for b in earlier_blocks)
        # 420-odd pieces came; the document was appended to far fewer times, and never re-rendered
        assert "".join(appends) == words
        assert len(appends) < len(words.split()) / 4, len(appends)
        assert updates == [""]  # the new answer's empty document, once, when it was mounted
        await ui(pilot)
        transcript = screen.transcript
        assert transcript.max_scroll_y > 0 and transcript.is_vertical_scroll_end  # it followed the text


async def test_esc_stops_an_answer_before_its_first_byte_then_back_leaves(chat_desk, chat_server):
    chat_server.hang(60)  # reads the question and says nothing
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        await send_question(pilot, "Anyone there?")
        assert await wait_until(pilot, lambda: len(chat_server.chat_requests) == 1 and screen.turn is not None)
        turn = screen.turn
        # the engine says it is waiting, about once a second; the answer shows it
        assert await wait_until(pilot, lambda: "waiting for the model (" in shown(turn.view))
        assert re.search(r"waiting for the model \(\d+ s\)…", shown(turn.view))
        assert enabled(screen) >= {"stop"}
        await pilot.press("escape")
        await pilot.pause()
        assert turn.token.cancelled and "stopped" in shown(turn.view)
        assert "waiting for the model" not in shown(turn.view)
        assert "stop" not in enabled(screen) and "back" in enabled(screen)  # Esc now goes back
        # the connection is closed and the turn ends as stopped, saved
        assert await wait_until(pilot, lambda: chat_server.left.is_set() and screen.turn is None)
        await settle(pilot)
        assert turn.state.status == "cancelled" and "stopped by the user" in shown(turn.view)
        saved = chat_desk.chat().messages(screen.conv.id)
        assert [(m.role, m.status) for m in saved] == [("user", "complete"), ("notice", "cancelled")]
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, KbListScreen)


async def test_stop_shows_at_once_and_back_leaves_while_the_worker_still_runs(chat_desk):
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        scripted = ScriptedAsk(ignore_cancel=True)
        screen.chat.ask = scripted
        await send_question(pilot, "Slow one")
        assert await wait_until(pilot, lambda: screen.turn is not None and scripted.calls)
        turn = screen.turn
        turn.ended = WatchedEvent()
        scripted.send(TurnStarted(turn.conversation_id, "u1", "tiny", "local"), TextDelta("Half an "))
        assert await wait_until(pilot, lambda: "Half an" in shown(turn.view))
        await pilot.press("escape")
        await ui(pilot)
        # stopped on screen while the worker provably still runs
        assert not turn.ended.is_set() and turn.token.cancelled
        assert "stopped" in shown(turn.view) and "stopped — saving what came" in status(screen)
        await type_text(pilot, "next")  # a new question waits until the stopped one is saved
        await pilot.press("enter")
        await ui(pilot)
        assert any("still being saved" in n for n in notifications(app))
        assert screen.query_one("#question", Input).value == "next"
        await pilot.press("escape")  # Back: leaves at once
        await ui(pilot)
        assert isinstance(app.screen, KbListScreen) and not turn.ended.is_set()
        assert not turn.ended.waited  # the screen left without waiting for the worker
        scripted.send(TurnFinished(Answer(turn.conversation_id, None, "Half an ", "cancelled")))
        assert await wait_until(pilot, turn.ended.is_set)


async def test_back_cancels_a_running_answer_and_leaves(chat_desk):
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        # Back on a key of its own: one press, no Stop first (Textual drops every binding of a key
        # when one of them is remapped, so Stop is named too)
        app.set_keymap({"chat.stop": "escape", "chat.back": "ctrl+b"})
        screen = await open_chat(pilot)
        scripted = ScriptedAsk(ignore_cancel=True)
        screen.chat.ask = scripted
        await send_question(pilot, "Slow one")
        assert await wait_until(pilot, lambda: screen.turn is not None and scripted.calls)
        turn = screen.turn
        assert {"stop", "back"} <= enabled(screen)
        await pilot.press("ctrl+b")
        await ui(pilot)
        assert isinstance(app.screen, KbListScreen)
        assert turn.token.cancelled and not turn.ended.is_set()
        scripted.send(TurnFinished(Answer(turn.conversation_id, None, "", "cancelled")))
        assert await wait_until(pilot, turn.ended.is_set)


async def test_the_turn_state_shows_under_the_answer(chat_desk):
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        scripted = ScriptedAsk()
        screen.chat.ask = scripted
        await send_question(pilot, "Why?")
        assert await wait_until(pilot, lambda: screen.turn is not None and scripted.calls)
        turn = screen.turn
        scripted.send(TurnStarted(turn.conversation_id, "u1", "tiny", "local", ("Docs",)))
        assert await wait_until(pilot, lambda: "thinking…" in shown(turn.view))
        scripted.send(Waiting(2.0))
        assert await wait_until(pilot, lambda: "waiting for the model (2 s)…" in shown(turn.view))
        scripted.send(Waiting(3.4))
        assert await wait_until(pilot, lambda: "waiting for the model (3 s)…" in shown(turn.view))
        assert "thinking" not in shown(turn.view)
        scripted.send(TextDelta("Because **reasons**"))
        assert await wait_until(pilot, lambda: "Because reasons" in shown(turn.view))
        assert "waiting for the model" not in shown(turn.view)
        answer = Answer(
            turn.conversation_id,
            "m1",
            "Because **reasons**",
            "complete",
            model="tiny",
            finish_reason="length",
            retrieval="skipped",
            trimmed=2,
        )
        scripted.send(Retrieval("skipped", ("Docs",), "the model did not search Docs"), TurnFinished(answer))
        assert await wait_until(pilot, lambda: screen.turn is None)
        await settle(pilot)
        text = shown(turn.view)
        assert text.endswith(
            "Because reasons\nthe model did not search Docs\ncut at the length limit\n"
            "2 earlier questions left out to fit the model's context"
        )


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_no_model_message_fits_the_screen_and_its_key_opens_model_roles(tui_desk, chat_server, size):
    app = make_app(tui_desk)  # no chat model configured
    async with app.run_test(size=size) as pilot:
        screen = await open_chat(pilot)
        banner = screen.query_one("#no-model", Static)
        message = str(banner.render())
        assert message.startswith("No chat model to answer with.")
        assert "Settings → Model roles (press ctrl+g to go there)." in message
        # on screen whole: every word of it, within the screen's width, wrapped over lines
        region = banner.region
        assert region.right <= size[0] and region.height >= message.count("\n") + 2
        rows = screen_text(app).splitlines()[region.y : region.bottom]
        seen = " ".join(row[region.x : region.right].replace("▌", " ") for row in rows)
        assert " ".join(seen.split()) == " ".join(message.split())
        assert "no chat model" in status(screen)
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert isinstance(app.screen, SettingsScreen)
        assert app.screen.query_one(TabbedContent).active == "roles"
        write_config(chat_server)  # as if the roles were saved there
        app.config_changed()
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and not banner.display and "tiny" in status(screen)


async def test_ctrl_t_steps_through_how_the_kbs_are_searched(chat_desk):
    docs(chat_desk)
    chat = chat_desk.chat()
    conv = chat.ask(None, "Hi").conversation_id
    app = make_app(chat_desk)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_chat(pilot)
        assert "KBs: Docs · search: tool" in status(screen)  # the test config says tool
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert chat.conversation(conv).retrieval == "off"
        assert "search: off" in status(screen)
        assert any("they are not searched" in n for n in notifications(app))
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert chat.conversation(conv).retrieval == "auto" and "search: auto" in status(screen)
        commands = {c.title: c for c in app.get_system_commands(screen)}
        commands["KB search: always"].callback()
        await settle(pilot)
        assert chat.conversation(conv).retrieval == "always" and "search: always" in status(screen)
        commands["KB search: as the persona or settings say"].callback()
        await settle(pilot)
        assert chat.conversation(conv).retrieval is None and "search: tool" in status(screen)
