"""Pilot tests: the search screen as a retrieval debugger, and opening a hit."""

from __future__ import annotations

from textual.widgets import Input, Select, Static

from helpers import present
from kbdesk.search import SearchResponse
from kbdesk.tui.app import make_app
from kbdesk.tui.screens.chunk import ChunkScreen
from kbdesk.tui.screens.search import SearchScreen
from kbdesk.tui.widgets.results_table import ResultsTable
from tui_support import current_screen, settle, type_text


async def test_search_and_open_a_result(vector_desk, corpus):
    vector_desk.create_kb("docs")  # takes the embedding role: fake / text-embedding-3-small
    vector_desk.add("docs", [corpus])
    app = make_app(vector_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert screen.kb_names == ["docs"]
        # the fake server's vectors are random: let every cosine pass, ranks decide
        screen.query_one("#threshold", Input).value = "-1"
        await type_text(pilot, "restore a backup")
        await pilot.press("enter")
        await settle(pilot)
        table = screen.query_one(ResultsTable)
        kept = [h for h in table.hits if h["cut"] is None]
        assert answered(screen).mode == "hybrid"
        assert kept and kept[0]["source"] == "guide.md"
        # every row carries the debugger's numbers
        assert kept[0]["keyword_rank"] in (1, 2) and kept[0]["fused"] > 0
        assert all(h["vector_rank"] is not None for h in kept)
        status = str(screen.query_one("#search-status", Static).render())
        assert "hybrid" in status and "result(s) from docs" in status
        preview = str(screen.query_one("#preview", Static).render())
        assert "guide.md" in preview and f"keyword rank {kept[0]['keyword_rank']}" in preview
        # open it: the whole chunk with its neighbours
        table.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ChunkScreen)
        chunks = [str(s.render()) for s in app.screen.query(".chunk")]
        assert any("restore command" in c for c in chunks)
        assert len(app.screen.query(".chunk.current")) == 1
        await pilot.press("escape")
        await settle(pilot)
        assert current_screen(app) is screen


async def test_the_threshold_cut_is_shown_and_explained(vector_desk, corpus):
    vector_desk.create_kb("docs")
    vector_desk.add("docs", [corpus])
    app = make_app(vector_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        screen.query_one("#mode", Select).value = "vector"
        screen.query_one("#threshold", Input).value = "0.99"
        screen.query_one("#query", Input).value = "lighthouse rollout"
        screen.query_one("#query", Input).focus()
        await pilot.press("enter")
        await settle(pilot)
        table = screen.query_one(ResultsTable)
        assert answered(screen).results == []
        assert table.hits and all(h["cut"] == "threshold" for h in table.hits)
        status = str(screen.query_one("#search-status", Static).render())
        assert "Nothing passed" in status and "threshold 0.99" in status
        # ctrl+t hides the candidates that were cut
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert table.row_count == 0
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert table.row_count == len(present(answered(screen).explain, "explanation"))


async def test_keyword_kb_and_kb_choice(tui_desk, corpus):
    tui_desk.create_kb("docs")
    tui_desk.create_kb("empty")
    tui_desk.add("docs", [corpus])
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.action_open_search()
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert screen.kb_names == ["docs", "empty"]  # all KBs by default
        await pilot.press("ctrl+o")
        await settle(pilot)
        await pilot.press("down", "space")  # untick "empty"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.kb_names == ["docs"]
        await type_text(pilot, "lighthouse [March]")
        await pilot.press("enter")
        await settle(pilot)
        assert answered(screen).mode == "keyword"
        assert answered(screen).results[0].source == "notes/meeting.txt"


async def test_a_failed_search_clears_the_old_results_and_speaks_the_screens_words(tui_desk, corpus):
    tui_desk.create_kb("docs", keyword_only=True)
    tui_desk.add("docs", [corpus])
    app = make_app(tui_desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.action_open_search()
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await type_text(pilot, "lighthouse")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.query_one(ResultsTable).row_count > 0
        screen.query_one("#mode", Select).value = "vector"  # a keyword-only KB: vector search cannot run
        await settle(pilot)
        assert screen.response is None and screen.query_one(ResultsTable).row_count == 0
        status = str(screen.query_one("#search-status", Static).render())
        assert "Choose keyword in Mode" in status and "--mode" not in status


async def test_a_down_embedder_answers_by_keyword_under_a_banner(vector_desk, corpus, fake_openai):
    from kbdesk.providers.breaker import forget_breakers

    forget_breakers()
    vector_desk.create_kb("docs")
    vector_desk.add("docs", [corpus])
    fake_openai.stop()
    app = make_app(vector_desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.action_open_search()
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await type_text(pilot, "lighthouse")
        await pilot.press("enter")
        await settle(pilot)
        banner = screen.query_one("#search-notice", Static)
        assert banner.display
        assert "keyword search only in docs: the query could not be embedded" in str(banner.render())
        assert answered(screen).results and answered(screen).mode == "keyword"
    forget_breakers()


def answered(screen: SearchScreen) -> SearchResponse:
    """The search the screen shows now (one ran)."""
    assert screen.response is not None, "no search shown"
    return screen.response
