"""The TUI at real size: a KB of 12,500 documents, its failures and its unfinished documents.

One KB is built once per module (12,497 small files in 50 folders that repeat the same
names, and 3 broken PDFs) and copied into each test's KBDESK_HOME. Snapshots of the new
states are taken at 80×24 and 120×40.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import present
from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.tui.app import make_app
from kbdesk.tui.progress import DocProgress
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.screens.kb_detail import KbDetailScreen
from kbdesk.tui.widgets.kb_table import KbTable
from kbdesk.tui.workers import wait_for_threads
from tui_support import gated_kb, notifications, press_into, settle, wait_until

DOCS = 12_500
BROKEN = ("d07/broken.pdf", "d21/broken.pdf", "d40/broken.pdf")
SIZES = [(80, 24), (120, 40)]


@pytest.fixture(scope="module")
def big_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("big") / "home"
    corpus = home.parent / "corpus"
    files: dict[str, str | bytes] = {
        f"d{i % 50:02d}/note{i // 50:04d}.txt": f"Note {i} on topic {i % 97}." for i in range(DOCS - len(BROKEN))
    }
    files.update(dict.fromkeys(BROKEN, b"%PDF-1.4\nnot really a pdf\n%%EOF\n"))
    write_files(corpus, files)
    with open_desk(home=home) as desk:
        desk.create_kb("big", keyword_only=True)
        report = desk.add("big", [corpus])
        assert len(report.added) == DOCS - len(BROKEN) and len(report.failed) == len(BROKEN)
    return home


@pytest.fixture
def big_desk(big_home, kbdesk_home):
    shutil.copytree(big_home, kbdesk_home)
    desk = open_desk()
    yield desk
    desk.close()


def leave_unfinished(desk, count: int) -> None:
    """As a killed run leaves them: in-between statuses, no live runner."""
    with desk.store.write() as conn:
        conn.execute(
            "UPDATE kb_documents SET status = 'embedding', claimed_by = NULL WHERE id IN "
            "(SELECT id FROM kb_documents WHERE status = 'ready' ORDER BY filename LIMIT ?)",
            (count,),
        )


async def open_big(pilot) -> KbDetailScreen:
    return await press_into(pilot, "enter", KbDetailScreen)


@pytest.mark.parametrize("size", SIZES)
async def test_counts_are_never_cut_and_long_names_end_visibly(big_desk, size):
    big_desk.create_kb("a knowledge base whose name is far too long to fit in any column of the list")
    app = make_app(big_desk)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.screen.query_one(KbTable)
        cells = {table.get_row_at(i)[0].plain: table.get_row_at(i) for i in range(table.row_count)}
        big = cells["big"]
        assert (big[2].plain, big[3].plain) == ("12500", "12497")  # documents and chunks, whole
        long_name = next(name for name in cells if name.startswith("a knowledge"))
        assert long_name.endswith("…") and len(long_name) < 70


async def test_rows_tell_same_names_apart_by_their_folder(big_desk):
    app = make_app(big_desk)
    async with app.run_test(size=(120, 40)) as pilot:
        table = (await open_big(pilot)).table
        same = [row for row in table.rows_by_id.values() if row.filename == "note0000.txt"]
        assert len(same) == 50 and len({row.folder for row in same}) == 50
        first = table.get_row_at(0)
        assert (first[0].plain, first[1].plain) == ("note0000.txt", "d00")


async def test_filter_and_next_error_find_the_failed_documents(big_desk):
    app = make_app(big_desk)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_big(pilot)
        table = screen.table
        await pilot.press("g")  # the next failed document, with its reason under the table
        assert present(table.selected, "selected row").path == "d07/broken.pdf"
        assert "d07/broken.pdf" in str(screen.query_one("#doc-error").render())
        await pilot.press("g")
        assert present(table.selected, "selected row").path == "d21/broken.pdf"
        await pilot.press("f")  # errors only; the cursor stays on its document
        assert table.row_count == 3 and present(table.selected, "selected row").path == "d21/broken.pdf"
        assert [table.get_row_at(i)[4].plain for i in range(3)] == ["✗ error"] * 3
        assert "Showing errors only: 3 of 12500" in str(screen.query_one("#notice").render())
        await pilot.press("f")  # in progress only: none
        assert table.row_count == 0 and table.selected is None
        await pilot.press("f")  # all again
        assert table.row_count == DOCS
        await pilot.press("end")
        assert table.cursor_row == DOCS - 1


async def test_the_cursor_follows_its_document_and_remove_acts_on_it(big_desk):
    app = make_app(big_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_big(pilot)
        table = screen.table
        await pilot.press("pagedown", "down", "down")
        target = present(table.selected, "selected row")
        row = table.cursor_row
        # documents appear above it (as during an add): the cursor stays on the same document
        table.apply({f"new{i}": DocProgress(f"new{i}", f"a-first/new{i}.txt", "pending") for i in range(5)})
        assert present(table.selected, "selected row").doc_id == target.doc_id and table.cursor_row == row + 5
        # and one above it goes away
        table.apply({"new0": None})
        assert present(table.selected, "selected row").doc_id == target.doc_id and table.cursor_row == row + 4
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert target.path in app.screen.question


async def test_unfinished_documents_are_announced_and_resumed(big_desk):
    leave_unfinished(big_desk, 1116)
    app = make_app(big_desk)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert any("1116 document(s) were left unfinished" in m for m in notifications(app))
        status = app.screen.query_one(KbTable).get_row_at(0)[5].plain
        assert "1116 unfinished" in status
        assert app.screen.active_bindings["u"].binding.description == "Resume"
        screen = await open_big(pilot)
        assert "1116 document(s) were left unfinished" in str(screen.query_one("#notice").render())
        assert screen.check_action("resume", ()) is True
        await pilot.press("u")
        await settle(pilot)
        assert not app.ingesting()
        assert big_desk.unfinished_documents() == []
        assert screen.table.counts().get("ready") == DOCS - len(BROKEN)
        assert any("Resuming 'big': 1116 ready" in m for m in notifications(app))


async def test_the_config_can_resume_unfinished_documents_without_asking(big_desk):
    from kbdesk.config import parse_config

    leave_unfinished(big_desk, 40)
    big_desk.reload_config(parse_config({"ingest": {"auto_resume": True}}))
    app = make_app(big_desk)
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_until(pilot, lambda: not big_desk.unfinished_documents() and not app.ingesting())
    assert big_desk.kb("big").document_count == DOCS


async def test_quitting_mid_indexing_leaves_them_for_the_next_launch(tui_desk, tmp_path):
    folder = write_files(tmp_path / "many", {f"doc{i:03}.txt": f"Document {i}." for i in range(40)})
    provider, kb = gated_kb(tui_desk)
    app = make_app(tui_desk)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            app.start_ingest(kb, "Indexing", lambda ingestor: ingestor.add("docs", [folder]))
            assert await wait_until(pilot, lambda: provider.calls > 0)
            await pilot.press("ctrl+q")
            await pilot.pause()
            await pilot.press("y")  # quit anyway: the run is cancelled between batches
    finally:
        provider.gate.set()
    assert wait_for_threads(30)
    left = len(tui_desk.unfinished_documents("docs"))
    assert left > 0
    again = make_app(tui_desk)
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert any(f"{left} document(s) were left unfinished" in m for m in notifications(again))
        assert again.screen.check_action("resume", ()) is True


# ── snapshots of the new states ────────────────────────────────────────────────
def before(*keys: str):
    async def run(pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_big_kb(snap_compare, big_desk, size):
    assert snap_compare(make_app(big_desk), terminal_size=size, run_before=before("enter", "pagedown"))


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_filter_on_errors(snap_compare, big_desk, size):
    assert snap_compare(make_app(big_desk), terminal_size=size, run_before=before("enter", "f"))


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_resume_banner(snap_compare, big_desk, size):
    leave_unfinished(big_desk, 1116)
    assert snap_compare(make_app(big_desk), terminal_size=size, run_before=before("enter"))


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_kb_list_with_unfinished_documents(snap_compare, big_desk, size):
    leave_unfinished(big_desk, 1116)
    assert snap_compare(make_app(big_desk), terminal_size=size, run_before=before())
