"""Snapshots of every screen at 80×24 (pytest-textual-snapshot).

Nothing that changes between runs is on screen: no paths (the add dialog shows only
its placeholder), no times, no ids, no ports (base URLs shown are fixed), no blinking
cursor, no notifications, and never a key. Update after a deliberate change with ``pytest tests/tui --snapshot-update``.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input, TabbedContent

from kbdesk.paths import get_paths
from kbdesk.tui.app import make_app
from kbdesk.tui.screens.add_files import AddFilesScreen
from kbdesk.tui.screens.kb_detail import KbDetailScreen
from kbdesk.tui.screens.kb_form import KbFormScreen
from kbdesk.tui.widgets.documents_table import DocumentsTable
from kbdesk.tui.widgets.results_table import ResultsTable
from tui_support import before, settle, type_text

SIZE = (80, 24)


@pytest.fixture
def filled(tui_desk, corpus):
    tui_desk.create_kb("docs", "sample corpus")
    tui_desk.create_kb("papers", "reading list", chunk_size=800, chunk_overlap=100)
    tui_desk.add("docs", [corpus])
    return tui_desk


def test_kb_list(snap_compare, filled):
    assert snap_compare(make_app(filled), terminal_size=SIZE, run_before=before())


def test_kb_list_empty(snap_compare, tui_desk):
    assert snap_compare(make_app(tui_desk), terminal_size=SIZE, run_before=before())


def test_kb_detail_with_a_failed_document(snap_compare, filled):
    def open_broken(pilot):
        app = pilot.app
        app.push_screen(KbDetailScreen(filled.kb("docs")))

    def highlight(pilot):
        table = pilot.app.screen.query_one(DocumentsTable)
        broken = next(r for r in table.rows_by_id.values() if r.filename == "broken.pdf")
        table.move_cursor(row=table.get_row_index(broken.doc_id))

    assert snap_compare(make_app(filled), terminal_size=SIZE, run_before=before(open_broken, highlight))


def test_confirm_delete(snap_compare, filled):
    assert snap_compare(make_app(filled), terminal_size=SIZE, run_before=before(lambda p: p.press("d")))


def test_add_files_dialog(snap_compare, filled, monkeypatch):
    # the note lists kbdesk's suffixes (bounded to 200 characters); a fixed list keeps the
    # picture from changing with every new format (test_tui_newcomer.py checks the real one)
    fixed = frozenset({".txt", ".md", ".csv", ".html", ".pdf", ".docx", ".pptx", ".xlsx", ".odt", ".epub", ".eml"})
    monkeypatch.setattr("kbdesk.ingest.formats.SUPPORTED_SUFFIXES", fixed)  # what suffix_list reads
    assert snap_compare(
        make_app(filled), terminal_size=SIZE, run_before=before(lambda p: p.app.push_screen(AddFilesScreen("docs")))
    )


def test_new_kb_form_with_model_picker(snap_compare, vector_desk):
    assert snap_compare(
        make_app(vector_desk), terminal_size=SIZE, run_before=before(lambda p: p.app.push_screen(KbFormScreen()))
    )


@pytest.fixture
def vector_filled(vector_desk, corpus):
    vector_desk.create_kb("docs", "sample corpus")
    vector_desk.add("docs", [corpus])
    return vector_desk


def _search(query: str, threshold: str = "0"):
    async def run(pilot) -> None:
        pilot.app.action_open_search(["docs"])
        await settle(pilot)
        pilot.app.screen.query_one("#threshold", Input).value = threshold
        await type_text(pilot, query)
        await pilot.press("enter")

    return run


def test_search_results(snap_compare, vector_filled):
    assert snap_compare(make_app(vector_filled), terminal_size=SIZE, run_before=before(_search("restore a backup")))


def test_chunk_with_neighbours(snap_compare, vector_filled):
    def open_first(pilot):
        pilot.app.screen.query_one(ResultsTable).focus()
        return pilot.press("enter")

    assert snap_compare(
        make_app(vector_filled), terminal_size=SIZE, run_before=before(_search("restore a backup"), open_first)
    )


@pytest.fixture
def providers_desk(monkeypatch):
    from kbdesk import open_desk

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        '[providers.local]\nkind = "ollama"\n\n'
        '[providers.openai]\nkind = "openai"\napi_key = "sk-never-shown-0123456789"\n'
    )
    desk = open_desk()
    yield desk
    desk.close()


def test_settings_providers(snap_compare, providers_desk):
    assert snap_compare(make_app(providers_desk), terminal_size=SIZE, run_before=before(lambda p: p.press("s")))


def test_settings_model_roles(snap_compare, vector_desk):
    def roles(pilot):
        pilot.app.screen.query_one(TabbedContent).active = "roles"

    assert snap_compare(make_app(vector_desk), terminal_size=SIZE, run_before=before(lambda p: p.press("s"), roles))


def test_help(snap_compare, filled):
    assert snap_compare(make_app(filled), terminal_size=SIZE, run_before=before(lambda p: p.press("f1")))
