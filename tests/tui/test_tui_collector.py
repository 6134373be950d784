"""The app's garbage collector: garbage that outlived a young collection (the widgets of a
screen left, in reference cycles) is collected once the user stops pressing keys, not in
some later frame the user waits for (kbdesk.tui.collector)."""

from __future__ import annotations

import gc
import weakref

import pytest

from kbdesk.tui import collector
from kbdesk.tui.app import make_app
from kbdesk.tui.screens.help import HelpScreen
from kbdesk.tui.screens.kb_list import KbListScreen
from tui_support import settle


class Node:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def process_collector():
    """The app tunes the process's collector (thresholds, frozen start-up objects): put it back."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def middle_aged_garbage() -> weakref.ref[Node]:
    """A cycle that lived through a young collection (so it waits in the middle generation)
    and then became garbage, as a screen's widgets do when the screen is left."""
    node = Node()
    gc.collect(0)
    ref = weakref.ref(node)
    del node
    return ref


@pytest.mark.slow
async def test_garbage_is_collected_between_keys_not_while_they_come(tui_desk, process_collector, monkeypatch):
    monkeypatch.setattr(collector, "IDLE_AFTER_S", 0.6)  # keys 50 ms apart stay far inside it
    monkeypatch.setattr(collector, "THRESHOLDS", (10_000, 1_000, 10))  # only the idle collector takes gen 1
    tui_desk.create_kb("docs", keyword_only=True)
    app = make_app(tui_desk, tune_collector=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, KbListScreen) and app.idle_collector is not None
        garbage = middle_aged_garbage()
        for _ in range(4):  # the user opens and closes help, keys close together
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            await pilot.pause(0.05)
        assert garbage() is not None, "collected while keys were coming"
        await pilot.pause(1.5)  # the user reads
        assert garbage() is None
        generation, _seconds = app.idle_collector.collections[-1]
        assert generation >= 1
