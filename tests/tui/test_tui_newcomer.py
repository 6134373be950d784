"""The newcomer's path at 80×24: only a chat provider configured (where the README's chat
quick start leaves someone) → a new knowledge base → a folder added → a question asked.

No misleading default on the way: the new KB is searched by keyword unless an embedding
model is set, "keyword only" is the first choice of *Embeddings* with its hint under it,
a chat model is never offered as an embedding model, and the Add dialog says which
files are read (kbdesk's own list of suffixes).
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input, Label, Select, Static

from kbdesk import open_desk
from kbdesk.ingest.extract import SUPPORTED_SUFFIXES
from kbdesk.tui.app import make_app
from kbdesk.tui.chat_state import AnswerState
from kbdesk.tui.screens.add_files import NOTE_CHARS, AddFilesScreen, files_read
from kbdesk.tui.screens.kb_detail import KbDetailScreen
from kbdesk.tui.screens.kb_form import KEYWORD_ONLY, KbFormScreen
from kbdesk.tui.widgets.model_picker import ModelPicker
from tui_chat_support import open_chat, shown, write_config
from tui_support import settle, type_text, wait_until

SIZE = (80, 24)
MODELS = {
    "object": "list",
    "data": [
        {"id": "tiny", "object": "model", "owned_by": "me"},  # the chat role's model
        {"id": "SmolLM2-135M-Instruct", "object": "model", "owned_by": "me"},  # a chat model by its name
        {"id": "nomic-embed-text", "object": "model", "owned_by": "me"},  # an embedding model by its name
    ],
}


@pytest.fixture
def newcomer(chat_server):
    """A desk with only a chat provider and the chat role set, kbdesk's default retrieval (auto)."""
    write_config(chat_server, retrieval=None)
    desk = open_desk(backend="numpy")
    yield desk
    desk.close()


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


async def test_only_a_chat_provider_new_kb_add_a_folder_ask(newcomer, chat_server, corpus):
    chat_server.routes[("GET", "/v1/models")] = (200, MODELS)
    chat_server.reply("Let me look.", tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply("Backups run every night at two [1].")
    app = make_app(newcomer)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, KbFormScreen)
        # no embedding model is set: keyword only, said under the choice; no model row
        assert form.query_one("#provider", Select).value == KEYWORD_ONLY
        assert form.query_one("#keyword-hint", Static).display
        assert not form.query_one("#model", ModelPicker).display and not form.query_one("#model-label", Label).display
        assert not chat_server.requests  # nothing asked of the chat server for a keyword KB
        # choosing the chat provider lists its models: never the chat model, nor one named like a chat model
        form.query_one("#provider", Select).value = "local"
        await settle(pilot)
        picker = form.query_one("#model", ModelPicker)
        assert picker.display and [m.id for m in picker.models] == ["nomic-embed-text"]
        assert not form.query_one("#keyword-hint", Static).display
        form.query_one("#provider", Select).value = KEYWORD_ONLY
        await settle(pilot)
        form.query_one("#name", Input).value = "notes"
        await pilot.press("ctrl+s")
        await settle(pilot)
        kb = newcomer.kb("notes")
        assert kb.model_id is None
        detail = app.screen
        assert isinstance(detail, KbDetailScreen)
        detail._add(type("Request", (), {"paths": [str(corpus)], "include": [], "exclude": [], "sync": False})())
        await settle(pilot)
        assert newcomer.kb("notes").document_count >= 4
        await pilot.press("escape")
        await settle(pilot)
        screen = await open_chat(pilot)
        await type_text(pilot, "When do backups run?")
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: screen.turn is None and len(screen.transcript.blocks) == 2)
        answer = screen.transcript.blocks[-1]
        assert isinstance(answer, AnswerState) and answer.status == "complete", shown(screen)
        assert [s["source"] for s in answer.sources][:1] == ["guide.md"]


def test_the_add_dialog_lists_every_suffix_kbdesk_reads():
    listed = files_read(10_000)
    assert listed.split(", ") == sorted(s.lstrip(".").upper() for s in SUPPORTED_SUFFIXES)
    short = files_read(30)
    kept = short.split(" and ")[0].split(", ")
    assert short.endswith(f" and {len(SUPPORTED_SUFFIXES) - len(kept)} more") and len(short) <= 30 + 12
    assert len(files_read()) <= NOTE_CHARS + 12


def test_snapshot_newcomer_new_kb(snap_compare, newcomer):
    assert snap_compare(make_app(newcomer), terminal_size=SIZE, run_before=before(lambda p: p.press("n")))


def test_snapshot_newcomer_embeddings_dropdown(snap_compare, newcomer):
    async def open_dropdown(pilot) -> None:
        pilot.app.screen.query_one("#provider", Select).focus()
        await pilot.press("enter")

    assert snap_compare(
        make_app(newcomer), terminal_size=SIZE, run_before=before(lambda p: p.press("n"), open_dropdown)
    )


def test_snapshot_newcomer_add_dialog(snap_compare, newcomer, monkeypatch):
    fixed = frozenset({".txt", ".md", ".csv", ".html", ".pdf", ".docx", ".pptx", ".xlsx", ".odt", ".epub", ".eml"})
    monkeypatch.setattr("kbdesk.ingest.formats.SUPPORTED_SUFFIXES", fixed)  # what suffix_list reads
    newcomer.create_kb("notes", keyword_only=True)
    assert snap_compare(
        make_app(newcomer), terminal_size=SIZE, run_before=before(lambda p: p.app.push_screen(AddFilesScreen("notes")))
    )


def test_snapshot_newcomer_asks(snap_compare, newcomer, chat_server, corpus):
    newcomer.create_kb("notes", keyword_only=True)
    newcomer.add("notes", [corpus])
    chat_server.reply("Let me look.", tool_calls=[("kb_search", {"query": "backups"})])
    chat_server.reply("Backups run every night at two [1].")

    async def ask(pilot) -> None:
        await pilot.press("c")
        await settle(pilot)
        screen = pilot.app.screen
        await type_text(pilot, "When do backups run?")
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: screen.turn is None and len(screen.transcript.blocks) == 2)

    assert snap_compare(make_app(newcomer), terminal_size=SIZE, run_before=before(ask))
