"""Pilot tests: the search screen's filter line narrows a search to matching documents,
completes tags and folders of the KBs searched, and a filter that does not read is said in
the screen's words (nothing searched, no traceback)."""

from __future__ import annotations

from textual.widgets import Input, Static

from kbdesk.tui.app import make_app
from kbdesk.tui.screens.search import SearchScreen
from kbdesk.tui.widgets.results_table import ResultsTable
from tui_support import notifications, settle, type_text
from vault_support import MATCHING, vault_kb


async def open_search(pilot):
    await settle(pilot)
    pilot.app.action_open_search(["notes"])
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, SearchScreen)
    return screen


async def test_the_filter_line_narrows_the_search_and_completes_tags_and_folders(tui_desk):
    vault_kb(tui_desk)
    app = make_app(tui_desk)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_search(pilot)
        screen.query_one("#limit", Input).value = "10"
        screen.query_one("#query", Input).value = "roadmap"
        # completion from what the KBs hold: a tag, then a folder (→ accepts)
        await pilot.press("ctrl+f")
        await type_text(pilot, "tag:q")
        await settle(pilot)
        await pilot.press("right")
        assert screen.query_one("#filter", Input).value == "tag:q2"  # the first tag that fits, sorted
        await pilot.press("backspace")
        await type_text(pilot, "3 path:wo")
        await settle(pilot)
        await pilot.press("right")
        assert screen.query_one("#filter", Input).value == "tag:q3 path:work/**"
        await pilot.press("enter")
        await settle(pilot)
        kept = [h for h in screen.query_one(ResultsTable).hits if h["cut"] is None]
        assert {h["source"] for h in kept} == MATCHING
        status = str(screen.query_one("#search-status", Static).render())
        assert "within path work/** · tags q3" in status


async def test_a_filter_that_does_not_read_is_said_in_the_screens_words(tui_desk):
    vault_kb(tui_desk)
    app = make_app(tui_desk)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_search(pilot)
        screen.query_one("#query", Input).value = "roadmap"
        screen.query_one("#filter", Input).value = "since:last-week"
        screen.query_one("#filter", Input).focus()
        await pilot.press("enter")
        await settle(pilot)
        assert screen.response is None  # nothing was searched
        status = str(screen.query_one("#search-status", Static).render())
        assert "Filter since: must be a date like 2026-11-01" in status
        assert "key:value words" in status
        assert any("since: must be a date" in n for n in notifications(app))
        # fixed, it searches
        screen.query_one("#filter", Input).value = "#q2"
        await pilot.press("enter")
        await settle(pilot)
        assert [h["source"] for h in screen.query_one(ResultsTable).hits if h["cut"] is None] == ["work/old-roadmap.md"]
