"""Pilot tests: a document cannot drive the terminal from the TUI either.

Textual, like rich, removes only BEL, BS, VT, FF and CR from text and sends ESC, CSI,
OSC and C1 characters on to the terminal. Every widget that shows a file name or
document text shows them escaped; the whole screen is checked through its screenshot
(what Textual would draw), and the widgets through what they hold.
"""

from __future__ import annotations

import re
from typing import Any

from textual.widgets import DataTable, Input, Select, Static

from kbdesk.tui.app import make_app
from kbdesk.tui.screens.chunk import ChunkScreen
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.screens.kb_detail import KbDetailScreen
from kbdesk.tui.screens.search import SearchScreen
from kbdesk.tui.widgets.documents_table import DocumentsTable
from kbdesk.tui.widgets.results_table import ResultsTable
from tui_support import notifications, settle, type_text

PAYLOAD = "\x1b]0;PWNED\x07 \x1b[2J \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \x9b31m \x07"
NAME_PAYLOAD = PAYLOAD.replace("http://evil", "http:evil")
TEXT = f"{PAYLOAD} The lighthouse keeper logs every ship. {PAYLOAD} Lighthouse lamps are cleaned at dawn."
SHOWN = "\\x1b]0;PWNED\\x07 \\x1b[2J"  # how the start of the payload reads on screen
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def assert_inert(text: str) -> None:
    found = RAW_CONTROL.search(text)
    assert found is None, f"raw {found.group(0)!r} in {text[max(0, found.start() - 40) : found.start() + 40]!r}"


def assert_screen_inert(app) -> None:
    """Nothing Textual would draw holds a raw control character (the SVG is the drawing)."""
    assert_inert(app.export_screenshot().replace("\n", " "))


def _shelf(desk, tmp_path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    for name in (f"report{NAME_PAYLOAD}.txt", "raw.md"):
        (folder / name).write_text(TEXT, encoding="utf-8")
    desk.create_kb("docs", keyword_only=True)
    report = desk.add("docs", [folder])
    assert len(report.added) == 2 and not report.failed
    raw = next(d for d in desk.store.list_documents(desk.kb("docs").id) if d.filename == "raw.md")
    # a file name stored raw, as an older kbdesk or another program may have written it
    with desk.store.write() as conn:
        conn.execute("UPDATE kb_documents SET filename = ? WHERE id = ?", (f"raw{NAME_PAYLOAD}.md", raw.id))
    return raw.id


def _cells(table: DataTable[Any] | DocumentsTable) -> list[str]:
    return [cell.plain for row in range(table.row_count) for cell in table.get_row_at(row)]


async def test_documents_table_and_dialogs_show_names_escaped(tui_desk, tmp_path):
    raw_id = _shelf(tui_desk, tmp_path)
    app = make_app(tui_desk)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert_screen_inert(app)
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, KbDetailScreen)
        table = detail.query_one(DocumentsTable)
        cells = _cells(table)
        for cell in cells:
            assert_inert(cell)
        names = [c for c in cells if c.startswith(("raw", "report"))]
        assert len(names) == 2 and all(SHOWN in name for name in names)
        assert_screen_inert(app)
        # the removal dialog quotes the raw name; so does the notification after it
        table.move_cursor(row=table.get_row_index(raw_id))
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert SHOWN in str(app.screen.query_one(".dialog-title", Static).render())
        assert_screen_inert(app)
        await pilot.press("y")
        await settle(pilot)
        removed = [m for m in notifications(app) if m.startswith("Removed")]
        assert len(removed) == 1 and SHOWN in removed[0]
        for message in notifications(app):
            assert_inert(message)
        assert_screen_inert(app)


async def test_search_screen_and_chunk_view_show_text_escaped(tui_desk, tmp_path):
    _shelf(tui_desk, tmp_path)
    app = make_app(tui_desk)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        screen.query_one("#mode", Select).value = "keyword"
        screen.query_one("#query", Input).focus()
        await type_text(pilot, "lighthouse")
        await pilot.press("enter")
        await settle(pilot)
        table = screen.query_one(ResultsTable)
        assert len(table.hits) == 2
        assert [h["content"] for h in table.hits] == [TEXT, TEXT]  # the data is untouched
        sources = [c for c in _cells(table) if c.startswith(("raw", "report"))]
        assert len(sources) == 2 and all(SHOWN in s for s in sources)
        for cell in _cells(table):
            assert_inert(cell)
        preview = str(screen.query_one("#preview", Static).render())
        assert_inert(preview)
        assert SHOWN in preview and "The lighthouse keeper" in preview
        assert_screen_inert(app)
        # the chunk itself, in full
        table.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ChunkScreen)
        shown = [str(s.render()) for s in app.screen.query(".chunk")]
        assert shown and all(SHOWN in text for text in shown)
        for text in shown:
            assert_inert(text)
        assert_inert(str(app.screen.query_one(".dialog-title", Static).render()))
        assert_screen_inert(app)
