"""The UI never blocks while ingesting; progress arrives coalesced; the CLI opens the app."""

from __future__ import annotations

import time

from click.testing import CliRunner
from textual.widgets import Input

from helpers import present
from ingest_support import write_files
from kbdesk.ingest.events import IngestEvent
from kbdesk.tui.app import make_app
from kbdesk.tui.messages import IngestProgress
from kbdesk.tui.progress import IngestTracker
from kbdesk.tui.screens.kb_detail import KbDetailScreen
from kbdesk.tui.screens.search import SearchScreen
from kbdesk.tui.widgets.documents_table import DocumentsTable
from tui_support import gated_kb, settle, type_text, wait_until

FILES = 150


async def test_keys_are_handled_while_ingestion_runs(tui_desk, tmp_path):
    folder = write_files(
        tmp_path / "many", {f"doc{i:03}.txt": f"Document {i} about topic {i % 7}." for i in range(FILES)}
    )
    provider, _ = gated_kb(tui_desk)

    ticks: list[IngestProgress] = []

    def hook(message):
        if isinstance(message, IngestProgress):
            ticks.append(message)

    app = make_app(tui_desk)
    try:
        await _drive(app, hook, ticks, provider, folder, tui_desk)
    finally:
        provider.gate.set()  # never leave an ingestion thread waiting


async def _drive(app, hook, ticks, provider, folder, tui_desk) -> None:
    async with app.run_test(size=(80, 24), message_hook=hook) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, KbDetailScreen)
        started = time.monotonic()
        kb = tui_desk.kb("docs")
        detail._add(type("Request", (), {"paths": [str(folder)], "include": [], "exclude": [], "sync": False})())
        # the ingestion runs; the user goes on working
        deadline = time.monotonic() + 30
        while not provider.calls and time.monotonic() < deadline:
            await pilot.pause(0.02)
        assert provider.calls, "ingestion should have reached the provider"
        assert app.ingesting(kb.id)
        table = detail.query_one(DocumentsTable)
        assert await wait_until(pilot, lambda: table.row_count == FILES)  # every queued document shows
        assert {row.status for row in table.rows_by_id.values()} - {"ready", "error"}
        assert detail.query_one("#progress-row").display
        await pilot.press("down", "down", "down")
        assert table.cursor_row == 3
        await pilot.press("slash")
        await pilot.pause()
        search = app.screen
        assert isinstance(search, SearchScreen)
        await type_text(pilot, "topic")
        assert search.query_one("#query", Input).value == "topic"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is detail
        # all of that happened before ingestion finished
        assert app.ingesting(kb.id)
        provider.gate.set()
        await settle(pilot)
        assert not app.ingesting(kb.id)
        statuses = {row.status for row in table.rows_by_id.values()}
        assert statuses == {"ready"}
        assert not detail.query_one("#progress-row").display
        elapsed = time.monotonic() - started
        # some 750 events reached the app as a handful of ticks (at most ~4 a second)
        assert len(ticks) <= 4 * elapsed + 6, (len(ticks), elapsed)


def test_tracker_coalesces_and_keeps_the_latest_state():
    now = [0.0]
    notified: list[int] = []
    tracker = IngestTracker("kb", "docs", "Indexing", lambda: notified.append(1), interval=0.25, clock=lambda: now[0])
    for i in range(100):
        tracker.on_event(IngestEvent("queued", f"f{i}", f"d{i}", "pending"))
    assert len(notified) == 1
    for status in ("extracting", "chunking"):
        tracker.on_event(IngestEvent("status", "f1", "d1", status))
    tracker.on_event(IngestEvent("embedded", "f1", "d1", "embedding", done=3, total=9))
    tracker.on_event(IngestEvent("error", "f2", "d2", "error", "cannot read this PDF"))
    tracker.on_event(IngestEvent("error", "huge.bin", None, None, "cannot read file"))
    tracker.on_event(IngestEvent("skipped", "/x/.git", detail="hidden"))
    assert len(notified) == 1  # all within the interval
    now[0] = 0.3
    tracker.on_event(IngestEvent("ready", "f3", "d3", "ready", done=4, total=4))
    assert len(notified) == 2
    changes = tracker.drain()
    assert len(changes) == 100
    d1, d2 = present(changes["d1"], "d1's change"), present(changes["d2"], "d2's change")
    assert d1.status == "embedding" and (d1.done, d1.total) == (3, 9)
    assert d2.error == "cannot read this PDF"
    assert tracker.drain() == {}
    assert tracker.counts() == (2, 100)
    tracker.finish()
    assert len(notified) == 3 and tracker.finished
    assert tracker.summary() == "Indexing 'docs': 1 ready, 2 failed, 1 skipped"


def test_kbdesk_without_arguments_opens_the_app(monkeypatch, kbdesk_home):
    import kbdesk.tui.app
    from kbdesk.cli.main import cli

    calls = []
    monkeypatch.setattr(kbdesk.tui.app, "run", lambda db, home: calls.append((db, home)))
    result = CliRunner().invoke(cli, [])
    assert result.exit_code == 0, result.output
    assert calls == [(None, str(kbdesk_home))]
    assert CliRunner().invoke(cli, ["kb", "list"]).exit_code == 0
    assert len(calls) == 1  # a command never opens the app


def test_the_summary_tells_remembered_failures_and_another_run(tmp_path):
    """A TUI add over a folder with known failures, while another kbdesk run holds some
    files, says both in its closing notification."""
    from kbdesk import open_desk

    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "good.txt").write_text("good words")
    (folder / "bad.txt").write_bytes(b"\x00\x01\x02" * 40)
    desk = open_desk(tmp_path / "kb.db")
    desk.create_kb("docs", keyword_only=True)
    desk.add("docs", [folder])
    tracker = IngestTracker("kb", "docs", "Adding to", lambda: None)
    desk.add("docs", [folder], on_event=tracker.on_event)
    tracker.on_event(IngestEvent("waiting", "docs", detail="2 documents are being indexed by kbdesk process 1"))
    tracker.finish()
    summary = tracker.summary()
    assert "1 unchanged" in summary and "1 failed before and unchanged (not tried again)" in summary
    assert "indexed by another kbdesk run" in summary
    desk.close()


async def test_a_readout_shows_every_new_text_whatever_its_size():
    from rich.text import Text
    from textual.app import App

    from kbdesk.tui.widgets.readout import Readout

    class One(App[None]):
        CSS = "Readout { width: auto; height: auto; }"

        def compose(self):
            yield Readout("")

    app = One()
    async with app.run_test(size=(60, 6)) as pilot:
        readout = app.query_one(Readout)
        shown = []
        for text in ("add:  1/30", "add:  2/30", "add:  2/30", "add: 30/30", "rebuild: 1/300", "two\nlines"):
            readout.show(Text(text))
            await pilot.pause()
            lines = [line.text.rstrip() for line in readout.render_lines(readout.region.reset_offset)]
            shown.append("\n".join(line for line in lines if line))
            assert readout.region.width >= max(len(part) for part in text.split("\n"))
        assert shown == ["add:  1/30", "add:  2/30", "add:  2/30", "add: 30/30", "rebuild: 1/300", "two\nlines"]
        assert readout.region.height == 2


async def test_rows_that_arrive_while_indexing_can_all_be_reached():
    from textual.app import App

    from kbdesk.tui.progress import DocProgress
    from kbdesk.tui.widgets.doc_rows import build_rows

    class One(App[None]):
        def compose(self):
            yield DocumentsTable(id="docs")

    app = One()
    async with app.run_test(size=(80, 12)) as pilot:
        table = app.query_one(DocumentsTable)
        table.load(build_rows([]), {})
        await pilot.pause()
        table.focus()
        shown_before = table.show_vertical_scrollbar
        for start, stop in ((0, 3), (3, 40), (40, 90)):  # a few rows, then more than fit, then more again
            table.apply({f"d{i:03}": DocProgress(f"d{i:03}", f"n{i:03}.md", "pending") for i in range(start, stop)})
            await pilot.pause()
            assert table.virtual_size.height == stop + 1  # the header and every row
            assert table.show_vertical_scrollbar == (stop + 1 > table.scrollable_content_region.height)
            await pilot.press("end")
            await pilot.pause()
            assert present(table.selected, "selected row").filename == f"n{stop - 1:03}.md"
            lines = [strip.text for strip in table.render_lines(table.region.reset_offset)]
            assert any(f"n{stop - 1:03}.md" in line for line in lines)  # the last row is on screen
        assert not shown_before and table.show_vertical_scrollbar
