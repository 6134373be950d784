"""The app shell: command palette, help, bindings with ids, quitting while indexing."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.command import CommandList

from kbdesk.ingest.formats import SUPPORTED_SUFFIXES
from kbdesk.tui.app import KbdeskApp, make_app
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.screens.help import HelpScreen
from kbdesk.tui.screens.kb_detail import KbDetailScreen
from kbdesk.tui.screens.kb_list import KbListScreen
from kbdesk.tui.screens.search import SearchScreen
from kbdesk.tui.screens.settings import SettingsScreen
from tui_support import gated_kb, settle, type_text, wait_until


async def test_command_palette_reaches_the_main_actions(tui_desk):
    tui_desk.create_kb("docs")
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Search knowledge bases", "Settings", "Help", "New knowledge base", "Open 'docs'"):
            assert wanted in titles
        await pilot.press("ctrl+p")
        await settle(pilot)
        await type_text(pilot, "search knowledge")

        def found() -> bool:
            lists = app.screen.query(CommandList)
            return bool(lists) and lists.first().option_count > 0

        assert await wait_until(pilot, found)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        await pilot.press("escape")
        await settle(pilot)
        app.push_screen(KbDetailScreen(tui_desk.kb("docs")))
        await settle(pilot)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert "Add files or a folder to 'docs'" in commands and "Rebuild 'docs'" in commands
        # what it indexes is the table of formats, not a hand-kept "TXT, MD, CSV, HTML, PDF"
        assert f"any of the {len(SUPPORTED_SUFFIXES)} file types" in commands["Add files or a folder to 'docs'"]


async def test_help_and_settings_keys(tui_desk):
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, KbListScreen)
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, SettingsScreen)


def test_every_binding_has_an_id():
    """Every key of every screen and widget can be remapped by id (a user keymap), and no two
    bindings share one."""
    import importlib
    import inspect
    import pkgutil

    import kbdesk.tui

    classes: set[type[Any]] = {KbdeskApp}
    for info in pkgutil.walk_packages(kbdesk.tui.__path__, "kbdesk.tui."):
        module = importlib.import_module(info.name)
        classes |= {
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == info.name and "BINDINGS" in vars(cls)
        }
    assert len(classes) > 15
    ids = []
    for cls in sorted(classes, key=lambda c: c.__qualname__):
        for binding in cls.BINDINGS:
            assert isinstance(binding, Binding), f"{cls.__name__}: {binding} is a tuple, which has no id"
            assert binding.id, f"{cls.__name__}: {binding.key} has no id"
            ids.append(binding.id)
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


async def test_quitting_while_indexing_asks_first(tui_desk, tmp_path):
    (tmp_path / "a.txt").write_text("some text")
    provider, kb = gated_kb(tui_desk)
    app = make_app(tui_desk)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            app.start_ingest(kb, "Indexing", lambda ingestor: ingestor.add("docs", [tmp_path / "a.txt"]))
            await wait_until(pilot, lambda: provider.calls > 0)
            assert app.ingesting()
            await pilot.press("ctrl+q")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            await pilot.pause()
            assert app.is_running
            provider.gate.set()
            await settle(pilot)
            await pilot.press("ctrl+q")
            await pilot.pause()
            assert not app.is_running
    finally:
        provider.gate.set()


async def test_status_colours_follow_the_theme(tui_desk, corpus):
    from kbdesk.tui.format import palette
    from kbdesk.tui.widgets.documents_table import DocumentsTable

    tui_desk.create_kb("docs")
    tui_desk.add("docs", [corpus / "guide.md"])
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        table = app.screen.query_one(DocumentsTable)
        before = table.get_row_at(0)[4].style  # the status cell
        app.theme = "textual-light"
        await settle(pilot)
        after = table.get_row_at(0)[4].style
        assert after == palette(app)["ok"] and after != before
