"""The app indexes in a child process: every file ends ready, once; a child killed mid-run is
reported and its documents resumed; cancelling and quitting stop it, and no child outlives the app."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ingest_support import write_files
from kbdesk.ingest.child import ChildRun, IngestJob
from kbdesk.tui.app import make_app
from tui_support import notifications, settle, wait_until

pytestmark = pytest.mark.slow


def _files(folder: Path, count: int) -> Path:
    return write_files(folder, {f"part{i % 4}/doc{i:03}.txt": f"Document {i} about the harbour." for i in range(count)})


def _one_ready_document_per_file(desk, kb: str, count: int) -> None:
    docs = desk.documents(kb)
    assert len(docs) == count
    assert len({d.source_path for d in docs}) == count
    assert {d.status for d in docs} == {"ready"}


def _gate(server) -> tuple[threading.Event, list[int]]:
    """Hold every embeddings request of ``server`` until the gate opens; count them as they come."""
    gate, seen = threading.Event(), []
    original = server._handle

    def handle(handler, method):
        if method == "POST":
            seen.append(1)
            gate.wait(30)
        original(handler, method)

    server._handle = handle
    return gate, seen


@dataclass
class Gated:
    folder: Path
    kb: Any
    gate: threading.Event
    seen: list[int]
    app: Any

    async def start(self, pilot: Any) -> None:
        """The add of the folder, in a child process, until its first embeddings request."""
        self.app.start_ingest(self.kb, "Indexing", IngestJob("add", (self.kb.id, [str(self.folder)])))
        assert await wait_until(pilot, lambda: bool(self.seen), 60)  # the child is embedding


@pytest.fixture
def gated(vector_desk, fake_openai, tmp_path):
    """40 files, a KB with vectors, the app, and the provider holding every embeddings
    request until ``gate`` opens (it opens after the test whatever happened)."""
    gate, seen = _gate(fake_openai)
    kb = vector_desk.create_kb("docs", model_id="text-embedding-3-small", provider="fake")
    try:
        yield Gated(_files(tmp_path / "many", 40), kb, gate, seen, make_app(vector_desk))
    finally:
        gate.set()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


async def test_the_app_indexes_in_a_child_process(tui_desk, tmp_path):
    folder = _files(tmp_path / "many", 60)
    kb = tui_desk.create_kb("docs", keyword_only=True)
    app = make_app(tui_desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        tracker = app.start_ingest(kb, "Indexing", IngestJob("add", (kb.id, [str(folder)])))
        run = app._ingestors[kb.id]
        assert isinstance(run, ChildRun)
        assert await wait_until(pilot, lambda: not app.ingesting(kb.id), 60)
        await settle(pilot)
        assert run.pid is not None and run.pid != os.getpid() and not _alive(run.pid)
        assert tracker is not None and tracker.counts() == (60, 60)  # its progress reached the app
        assert any("Indexing 'docs': 60 ready" in m for m in notifications(app))
    _one_ready_document_per_file(tui_desk, "docs", 60)


async def test_a_killed_child_is_reported_and_its_documents_resumed(vector_desk, gated):
    app, kb = gated.app, gated.kb
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await gated.start(pilot)
        os.kill(app._ingestors[kb.id].pid, signal.SIGKILL)
        gated.gate.set()
        assert await wait_until(pilot, lambda: not app.ingesting(kb.id), 30)
        await settle(pilot)
        said = "\n".join(notifications(app))
        assert "the indexing process ended before it finished (it was stopped by SIGKILL)" in said
        assert await wait_until(pilot, lambda: app.unfinished.get(kb.id, 0) > 0)
        assert "left unfinished when indexing last stopped. Press u to resume them." in "\n".join(notifications(app))
        app.action_resume_all()
        assert await wait_until(pilot, lambda: app.ingesting(kb.id))
        assert isinstance(app._ingestors[kb.id], ChildRun)  # the resume runs in a child too
        assert await wait_until(pilot, lambda: not app.ingesting(kb.id), 60)
        await settle(pilot)
    _one_ready_document_per_file(vector_desk, "docs", 40)
    assert not vector_desk.unfinished_documents("docs")


def _footer_keys(screen) -> set[str]:
    from textual.widgets._footer import FooterKey

    from kbdesk.tui.widgets.keys_footer import KeysFooter

    return {k.description for k in screen.query_one(KeysFooter).query(FooterKey)}


async def test_x_on_the_kb_screen_stops_the_child_and_leaves_the_rest_resumable(vector_desk, gated):
    from kbdesk.tui.screens.kb_detail import KbDetailScreen

    app, kb = gated.app, gated.kb
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, KbDetailScreen)
        assert "Stop" not in _footer_keys(screen)  # nothing to stop yet
        await gated.start(pilot)
        assert await wait_until(pilot, lambda: "Stop" in _footer_keys(screen), 10)
        run = app._ingestors[kb.id]
        await pilot.press("x")
        assert run.cancelled
        assert any(m.startswith("Stopping the indexing of 'docs'") for m in notifications(app))
        gated.gate.set()
        assert await wait_until(pilot, lambda: not app.ingesting(kb.id), 30)
        await settle(pilot)
        assert not _alive(run.pid)
        assert "Stop" not in _footer_keys(screen)
        assert "Resume" in _footer_keys(screen)  # what it had not finished, one key away
    left = vector_desk.unfinished_documents("docs")
    assert left  # what it had not finished waits for a resume
    vector_desk.ingestor().resume("docs")
    _one_ready_document_per_file(vector_desk, "docs", 40)


async def test_quitting_ends_the_child(vector_desk, gated):
    app = gated.app
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await gated.start(pilot)
        pid = app._ingestors[gated.kb.id].pid
        await pilot.press("ctrl+q")
        await pilot.pause()
        threading.Timer(0.5, gated.gate.set).start()  # the request in flight gets its answer meanwhile
        await pilot.press("y")
    assert pid is not None and not _alive(pid)
    assert vector_desk.unfinished_documents("docs")  # left for the next launch, as with a run in the app
