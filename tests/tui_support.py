"""Helpers for the TUI tests (a module of its own: several test folders have a conftest.py,
so ``from conftest import …`` would be ambiguous)."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import numpy as np

CORPUS: dict[str, str | bytes] = {
    "guide.md": "# Guide\n\n## Backups\n\nBackups run every night at two.\n\n## Restore\n\n"
    "Run the restore command with the snapshot name to restore a backup.\n",
    "notes/meeting.txt": "We agreed to ship the lighthouse feature in March.\n\nAlice owns the rollout.",
    "people.csv": "name,role\nAlice,engineer\nBob,designer\n",
    "page.html": "<html><head><title>Status</title></head><body><h1>Status</h1>"
    "<p>All systems are green [not markup].</p></body></html>",
    # not a PDF at all: ends in error with a readable reason, and stops nothing else
    "broken.pdf": b"%PDF-1.4\nthis is not really a pdf\n%%EOF\n",
}


async def settle(pilot: Any, rounds: int = 50) -> None:
    """Wait until no worker runs and the message queues are drained."""
    from textual.worker import WorkerFailed

    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        with contextlib.suppress(WorkerFailed):  # reported by the app as a notification; tests check that
            await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in app.workers):
            return


def before(*steps: Any) -> Any:
    """A snapshot's run_before: waits for workers after each step, clears notifications and
    stops the cursors blinking (nothing on screen may depend on timing)."""
    from textual.widgets import Input

    async def run(pilot: Any) -> None:
        await settle(pilot)
        for step in steps:
            result = step(pilot)
            if hasattr(result, "__await__"):
                await result
            await settle(pilot)
        pilot.app.clear_notifications()
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False  # a blinking cursor would make the picture depend on timing
        await pilot.pause()

    return run


async def type_text(pilot: Any, text: str) -> None:
    for char in text:
        await pilot.press(char if char != " " else "space")


def current_screen(app: Any) -> Any:
    """``app.screen`` read now: mypy keeps an earlier ``isinstance(app.screen, …)`` across
    the awaits that change the screen, so ``app.screen is screen`` would look impossible."""
    return app.screen


def notifications(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


class GatedProvider:
    """Embeds only once the gate opens: ingestion is provably still running until then."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls = 0

    def embed(self, texts, model, on_input_error="raise"):
        self.calls += 1
        assert self.gate.wait(60), "the test never opened the gate"
        from kbdesk.providers import EmbedResult

        vectors = [np.random.default_rng(len(t)).standard_normal(8).tolist() for t in texts]
        return EmbedResult(vectors=vectors, calls=1)


async def press_into(pilot: Any, key: str, screen_type: type) -> Any:
    """Press ``key`` once the app has settled, and return the screen it opened (checked)."""
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, screen_type), f"{key} opened {type(screen).__name__}, not {screen_type.__name__}"
    return screen


def gated_kb(desk: Any, name: str = "docs") -> tuple[GatedProvider, Any]:
    """A KB whose embedder waits for ``provider.gate``: its indexing stays under way until
    the test opens the gate."""
    provider = GatedProvider()
    desk.embedders.register("gated", provider)
    return provider, desk.create_kb(name, model_id="m", provider="gated")


async def wait_until(pilot: Any, condition: Any, timeout: float = 30.0) -> bool:
    """Pause until ``condition()`` holds (for states reached while a worker still runs)."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await pilot.pause(0.05)
    return True
