"""Pilot tests: knowledge bases and documents, driven by keys as a user would."""

from __future__ import annotations

import threading

import pytest
from textual.widgets import Input, Static

from helpers import present
from kbdesk.tui.app import make_app
from kbdesk.tui.screens.add_files import AddFilesScreen
from kbdesk.tui.screens.base import FormError
from kbdesk.tui.screens.confirm import ConfirmScreen
from kbdesk.tui.screens.kb_detail import KbDetailScreen
from kbdesk.tui.screens.kb_form import KbFormScreen
from kbdesk.tui.screens.kb_list import KbListScreen
from kbdesk.tui.widgets.documents_table import DocumentsTable
from kbdesk.tui.widgets.kb_table import KbTable
from tui_support import CORPUS, notifications, settle, type_text, wait_until


async def test_create_a_keyword_kb(tui_desk):
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, KbListScreen)
        assert "No knowledge bases yet" in str(app.screen.query_one("#welcome", Static).render())
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, KbFormScreen)
        await type_text(pilot, "notes")
        await pilot.press("tab")
        await type_text(pilot, "meeting notes")
        await pilot.press("enter")
        await settle(pilot)
        # no provider is set up: the KB is keyword-only, and its detail screen opens at once
        assert isinstance(app.screen, KbDetailScreen)
        kb = tui_desk.kb("notes")
        assert kb.description == "meeting notes" and kb.model_id is None
        assert kb.chunk_size == 1000 and kb.chunk_overlap == 200
        assert app.screen.query_one("#empty").display


async def test_create_refuses_a_bad_form(tui_desk):
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        form = app.screen
        form.query_one("#name", Input).value = "x"
        form.query_one("#chunk_overlap", Input).value = "5000"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is form  # still open, with what was typed and the reason beside it
        assert "overlap" in error_line(form) and form.query_one("#name", Input).value == "x"
        assert tui_desk.list_kbs() == []


def error_line(form) -> str:
    line = form.query_one(FormError)
    return str(line.render()) if line.display else ""


async def test_renaming_to_a_taken_name_keeps_the_form_and_says_why(tui_desk):
    tui_desk.create_kb("notes")
    tui_desk.create_kb("papers", description="the papers")
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.query_one(KbTable).move_cursor(row=1)  # papers
        await pilot.press("e")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, KbFormScreen) and error_line(form) == ""
        form.query_one("#name", Input).value = "notes"
        form.query_one("#description", Input).value = "typed, not lost"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is form and "already exists" in error_line(form)
        assert form.query_one("#description", Input).value == "typed, not lost"
        assert not notifications(app)  # said once, in the form
        form.query_one("#name", Input).value = "reading"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, KbListScreen)
        assert tui_desk.kb("reading").description == "typed, not lost"


async def test_add_a_folder_and_watch_every_document_finish(tui_desk, corpus):
    tui_desk.create_kb("docs")
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, KbDetailScreen)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, AddFilesScreen)
        app.screen.query_one("#path", Input).value = str(corpus)
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, KbDetailScreen)
        table = detail.query_one(DocumentsTable)
        rows = {row.path: row for row in table.rows_by_id.values()}
        assert set(rows) == {"guide.md", "notes/meeting.txt", "people.csv", "page.html", "broken.pdf"}
        assert {name: row.status for name, row in rows.items() if name != "broken.pdf"} == dict.fromkeys(
            ["guide.md", "notes/meeting.txt", "people.csv", "page.html"], "ready"
        )
        broken = rows["broken.pdf"]
        assert broken.status == "error" and broken.error
        assert all(row.size and row.chunks for name, row in rows.items() if name != "broken.pdf")
        # the error text of the failed document shows when it is highlighted
        table.move_cursor(row=table.get_row_index(broken.doc_id))
        await settle(pilot)
        shown = str(detail.query_one("#doc-error", Static).render())
        assert "broken.pdf" in shown and broken.error[:20] in shown
        assert any("4 ready, 1 failed" in m for m in notifications(app))
        # the KB list shows the new counts when we go back
        await pilot.press("escape")
        await settle(pilot)
        kb_row = present(app.screen.query_one(KbTable).selected, "selected KB")
        assert kb_row.document_count == 5


async def test_remove_a_document_then_delete_the_kb(tui_desk, corpus):
    tui_desk.create_kb("docs")
    tui_desk.add("docs", [corpus / "guide.md", corpus / "people.csv"])
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        table = app.screen.query_one(DocumentsTable)
        assert table.row_count == 2
        target = present(table.selected, "selected row").filename
        await pilot.press("d")  # d removes, on every screen
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert target in str(app.screen.question)
        await pilot.press("y")
        await settle(pilot)
        assert [d.filename for d in tui_desk.store.list_documents(tui_desk.kb("docs").id)] == (
            [name for name in ("guide.md", "people.csv") if name != target]
        )
        assert table.row_count == 1
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        assert "1 documents" in confirm.detail and "original files are not touched" in confirm.detail
        await pilot.press("n")  # cancel first: nothing happens
        await settle(pilot)
        assert len(tui_desk.list_kbs()) == 1
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert tui_desk.list_kbs() == []
        assert app.screen.query_one("#welcome").display


async def test_edit_a_kb(tui_desk):
    tui_desk.create_kb("docs")
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        form = app.screen
        form.query_one("#name", Input).value = "manuals"
        form.query_one("#chunk_size", Input).value = "500"
        form.query_one("#chunk_overlap", Input).value = "50"
        await pilot.press("ctrl+s")
        await settle(pilot)
        kb = tui_desk.kb("manuals")
        assert (kb.chunk_size, kb.chunk_overlap) == (500, 50)
        assert present(app.screen.query_one(KbTable).selected, "selected KB").name == "manuals"


async def test_errors_become_one_line_notifications(tui_desk):
    tui_desk.create_kb("docs")
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        tui_desk.delete_kb("docs")  # behind the app's back (another process, say)
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        messages = notifications(app)
        assert any("no knowledge base" in m for m in messages), messages
        assert not any("Traceback" in m for m in messages)


async def test_create_with_a_model_then_rebuild_and_reembed(vector_desk, corpus):
    from textual.widgets import Select

    from kbdesk.tui.screens.reembed import ReembedScreen
    from kbdesk.tui.widgets.model_picker import LIST, ModelPicker

    app = make_app(vector_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        form = app.screen
        picker = form.query_one("#model", ModelPicker)
        assert picker.mode == LIST and picker.value == "text-embedding-3-small"  # the embedding role
        form.query_one("#name", Input).value = "docs"
        await pilot.press("ctrl+s")
        await settle(pilot)
        kb = vector_desk.kb("docs")
        assert (kb.embedding_config["provider"], kb.model_id) == ("fake", "text-embedding-3-small")
        detail = app.screen
        assert isinstance(detail, KbDetailScreen)
        detail._add(
            type("Request", (), {"paths": [str(corpus)], "include": ["*.md", "*.txt"], "exclude": [], "sync": False})()
        )
        await settle(pilot)
        assert sorted(r.path for r in detail.query_one(DocumentsTable).rows_by_id.values()) == [
            "guide.md",
            "notes/meeting.txt",
        ]
        # rebuild, after a confirmation
        await pilot.press("b")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert any("Rebuilding 'docs'" in m for m in notifications(app))
        # re-embed with another model picked from the list
        await pilot.press("m")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ReembedScreen)
        dialog.query_one("#model #choice", Select).value = "nomic-embed-text"
        await pilot.click("#ok")
        await settle(pilot)
        assert vector_desk.kb("docs").model_id == "nomic-embed-text"
        assert "nomic-embed-text" in str(detail.query_one("#kb-info", Static).render())


async def test_create_form_keyword_only_hides_the_picker(vector_desk):
    from textual.widgets import Select

    from kbdesk.tui.screens.kb_form import KEYWORD_ONLY
    from kbdesk.tui.widgets.model_picker import ModelPicker

    app = make_app(vector_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        form = app.screen
        form.query_one("#provider", Select).value = KEYWORD_ONLY
        await settle(pilot)
        assert not form.query_one("#model", ModelPicker).display
        form.query_one("#name", Input).value = "plain"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert vector_desk.kb("plain").model_id is None


async def test_the_kb_list_says_when_documents_failed(tui_desk, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    for i in range(2):
        (folder / f"bad{i}.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    tui_desk.create_kb("broken")
    tui_desk.add("broken", [folder])
    tui_desk.create_kb("fine")
    app = make_app(tui_desk)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(KbTable)
        cells = {str(table.get_row(kb_id)[0]): str(table.get_row(kb_id)[5]) for kb_id in table.kbs}
        assert cells == {"broken": "✗ all 2 failed", "fine": "active"}, cells


async def test_enter_opens_a_document_with_its_whole_error_and_chunks(tui_desk, tmp_path):
    from kbdesk.tui.screens.document import DocumentScreen
    from tui_chat_support import screen_text

    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nBackups run nightly.\n\n## Restore\n\nUse the snapshot.\n")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 " + b"x" * 50)
    tui_desk.create_kb("mixed")
    tui_desk.add("mixed", [folder])
    app = make_app(tui_desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the KB
        await settle(pilot)
        table = app.screen.query_one(DocumentsTable)
        rows = {table.rows_by_id[doc_id].path: i for i, (_, _, doc_id) in enumerate(table._view)}
        table.move_cursor(row=rows["broken.pdf"])
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DocumentScreen)
        facts = str(app.screen.query_one("#document-facts", Static).render())
        broken = tui_desk.document("mixed", "broken.pdf")
        assert f"error (file): {broken.error}" in facts  # the whole reason
        assert "no chunks: nothing of this document is searchable" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        table.move_cursor(row=rows["guide.md"])
        await pilot.press("enter")
        await settle(pilot)
        shown = screen_text(app)
        assert "Backups run nightly" in shown and "chunk 0 · Guide" in shown, shown


async def test_leaving_a_kb_reads_its_documents_no_more(tui_desk, corpus, monkeypatch):
    """The rows the KB screen showed are kept: back on the list, nothing reads the documents again
    (a read in the app's process slowed the next key), and opening the KB paints them at once."""
    import kbdesk.tui.doc_cache as doc_cache

    monkeypatch.setattr(doc_cache, "FRESH_S", 0.0)  # kept rows always count as old
    monkeypatch.setattr(doc_cache, "REVALIDATE_AFTER_S", 1.0)  # the KB screen's second look: after it is left
    tui_desk.create_kb("docs", keyword_only=True)
    tui_desk.add("docs", [corpus])
    reads: list[tuple] = []
    briefs = tui_desk.document_briefs

    def counted(*a, **k):
        reads.append(a)
        return briefs(*a, **k)

    monkeypatch.setattr(tui_desk, "document_briefs", counted)
    app = make_app(tui_desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.pause(0.5)  # the list reads the highlighted KB's rows ahead
        assert len(reads) == 1
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, KbDetailScreen)
        assert app.screen.query_one(DocumentsTable).row_count == len(CORPUS)  # painted from the kept rows
        await pilot.press("escape")  # before its own second look
        await settle(pilot)
        await pilot.pause(1.5)
        assert isinstance(app.screen, KbListScreen)
        assert len(reads) == 1


async def test_a_kb_opened_before_its_documents_are_read_shows_them_when_they_come(tui_desk, corpus, monkeypatch):
    """Enter on a KB whose documents were never read: its screen comes at once, a line says
    the documents are being read if that takes a while, and when the rows arrive the line
    goes, the footer's Open and Remove become usable (the same keys, marked again, not built
    anew) and Enter opens one."""
    from textual.widgets._footer import FooterKey

    from kbdesk.tui.screens.document import DocumentScreen
    from kbdesk.tui.widgets.keys_footer import KeysFooter

    tui_desk.create_kb("docs", keyword_only=True)
    tui_desk.add("docs", [corpus])
    gate, gated = threading.Event(), threading.Event()
    briefs = tui_desk.document_briefs
    monkeypatch.setattr(
        tui_desk, "document_briefs", lambda *a, **k: (not gated.is_set() or gate.wait(30)) and briefs(*a, **k)
    )
    app = make_app(tui_desk)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.pause(0.3)
            await settle(pilot)  # the list has read the KB's rows ahead: forget them, and hold the next read
            app.doc_rows.forget(tui_desk.kb("docs").id)
            gated.set()
            await pilot.press("enter")
            assert await wait_until(pilot, lambda: isinstance(app.screen, KbDetailScreen))
            screen = app.screen
            table = screen.query_one(DocumentsTable)

            def key(description: str) -> FooterKey:
                return next(k for k in screen.query_one(KeysFooter).query(FooterKey) if k.description == description)

            notice = screen.query_one("#notice", Static)
            reading = f"Reading {len(CORPUS)} documents…"
            assert await wait_until(pilot, lambda: reading in str(notice.render()) and notice.display)
            assert table.row_count == 0 and key("Open").has_class("-disabled")
            keys_before = list(screen.query_one(KeysFooter).query(FooterKey))
            gate.set()
            assert await wait_until(pilot, lambda: table.row_count == len(CORPUS))
            await settle(pilot)
            assert not notice.display
            assert not key("Open").has_class("-disabled") and not key("Remove").has_class("-disabled")
            assert list(screen.query_one(KeysFooter).query(FooterKey)) == keys_before  # marked, not rebuilt
            await pilot.press("enter")
            assert await wait_until(pilot, lambda: isinstance(app.screen, DocumentScreen))
    finally:
        gate.set()


async def test_a_kb_opened_before_its_documents_are_read_comes_with_them(tui_desk, corpus, monkeypatch):
    """Enter before the list has read the KB's documents: the KB screen comes up once they are
    read (within its wait), its first frame already showing them."""
    import time

    import kbdesk.tui.screens.kb_list as kb_list

    monkeypatch.setattr(kb_list, "OPEN_WAIT_S", 10.0)  # a slow read below, well inside the wait
    tui_desk.create_kb("docs", keyword_only=True)
    tui_desk.add("docs", [corpus])
    briefs = tui_desk.document_briefs

    def slow(*a, **k):
        time.sleep(0.3)
        return briefs(*a, **k)

    monkeypatch.setattr(tui_desk, "document_briefs", slow)
    app = make_app(tui_desk)
    shown: list[int] = []  # the rows in each frame drawn of the KB screen
    display = app._display

    def frame(screen, renderable) -> None:
        display(screen, renderable)
        if isinstance(screen, KbDetailScreen) and renderable is not None:
            shown.append(screen.query_one(DocumentsTable).row_count)

    monkeypatch.setattr(app, "_display", frame)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.doc_rows.forget(tui_desk.kb("docs").id)
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: isinstance(app.screen, KbDetailScreen) and shown)
        await settle(pilot)
        assert shown[0] == len(CORPUS)


@pytest.mark.slow  # a web server on loopback
async def test_add_a_web_page_by_its_url(tui_desk):
    from web_site import Site

    tui_desk.create_kb("web")
    app = make_app(tui_desk)
    with Site() as site:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("enter")
            await settle(pilot)
            await pilot.press("a")
            await settle(pilot)
            assert isinstance(app.screen, AddFilesScreen)
            app.screen.query_one("#path", Input).value = f"{site.base}/cones.html"
            await pilot.press("enter")
            await settle(pilot)
            detail = app.screen
            assert isinstance(detail, KbDetailScreen)
            table = detail.query_one(DocumentsTable)
            await wait_until(pilot, lambda: any(r.status == "ready" for r in table.rows_by_id.values()))
            rows = {row.path: row.status for row in table.rows_by_id.values()}
            assert rows == {"cones.html": "ready"}  # shown under the site its pages share
    assert [d.filename for d in tui_desk.documents(tui_desk.kb("web").id)] == [f"{site.base}/cones.html"]
    assert "/cones.html" in site.paths()
