"""The TUI with a remote: the KB picker lists the remote's KBs (and says when it does not
answer), the search screen ranks local and remote hits together and names a remote it
could not reach."""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest
from remote_support import TeamServer, local_kb
from textual.widgets import Input, SelectionList, Static

from kbdesk import open_desk
from kbdesk.paths import get_paths
from kbdesk.tui.app import make_app
from kbdesk.tui.screens.choose_kbs import ChooseKbsScreen
from kbdesk.tui.screens.search import SearchScreen
from kbdesk.tui.widgets.results_table import ResultsTable

pytestmark = pytest.mark.slow


async def settle(pilot, rounds: int = 50) -> None:
    from textual.worker import WorkerFailed

    for _ in range(rounds):
        await pilot.pause()
        with contextlib.suppress(WorkerFailed):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            return


def test_the_tui_picks_and_searches_remote_kbs_and_shows_a_remote_down(tmp_path, kbdesk_home, monkeypatch):
    asyncio.run(_picks_and_searches(tmp_path, monkeypatch))


async def _picks_and_searches(tmp_path, monkeypatch) -> None:
    team = TeamServer(tmp_path)
    try:
        monkeypatch.setenv("TEAM_KB_TOKEN", team.token)
        local_kb(tmp_path, dict(os.environ))
        path = get_paths().config_file
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as fh:
            fh.write(f'\n[remotes.team]\nurl = "{team.url}"\ntoken_env = "TEAM_KB_TOKEN"\n')
        desk = open_desk()
        app = make_app(desk)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            await app.push_screen(ChooseKbsScreen(["Notes"]))
            await settle(pilot)
            options = app.screen.query_one(SelectionList)
            values = [options.get_option_at_index(i).value for i in range(options.option_count)]
            assert values == ["Notes", "team:Product Docs"]
            app.pop_screen()
            await settle(pilot)

            screen = SearchScreen(["Notes", "team:Product Docs"])
            await app.push_screen(screen)
            await settle(pilot)
            screen.query_one("#query", Input).value = "backups"
            await pilot.press("enter")
            await settle(pilot)
            kept = [h for h in screen.query_one(ResultsTable).hits if h["cut"] is None]
            assert {(h["kb"], h["source"]) for h in kept} == {
                ("Notes", "notes.md"),
                ("team:Product Docs", "handbook.md"),
            }
            assert not screen.query_one("#search-notice", Static).display

            team.stop()
            await pilot.press("enter")
            await settle(pilot)
            kept = [h for h in screen.query_one(ResultsTable).hits if h["cut"] is None]
            assert {h["kb"] for h in kept} == {"Notes"}
            banner = screen.query_one("#search-notice", Static)
            assert banner.display and "remote 'team' was not searched" in str(banner.render())
        desk.close()
    finally:
        team.stop()
