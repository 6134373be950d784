"""``watch``: a KB follows a folder through OS file events (real files, a real watcher).

The loop runs in a thread through the core function, as the CLI runs it, and is
stopped with its stop event; one test drives ``kbdesk watch`` itself and stops it with
a real SIGINT.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest
import watchfiles

from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.ingest.watch import WatchEvent, watch_folder

WAIT = 15.0  # generous bound on each wait; a working watcher answers in well under a second


class Watching:
    """watch_folder in a thread; its events in a queue; ``until`` waits for one."""

    def __init__(self, desk, folder, **options) -> None:
        self.desk = desk
        self.stop = threading.Event()
        self.events: queue.Queue[WatchEvent] = queue.Queue()
        self.seen: list[WatchEvent] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(folder, options), daemon=True)

    def _run(self, folder, options) -> None:
        try:
            watch_folder(self.desk.ingestor(), "Live", folder, stop=self.stop, on_event=self.events.put, **options)
        except BaseException as exc:  # noqa: BLE001 - shown by the test that waits
            self.error = exc

    def __enter__(self) -> Watching:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "watch did not stop when asked"

    def until(self, kind: str, name: str = "") -> WatchEvent:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=0.1)
            except queue.Empty:
                assert self.error is None, f"watch ended: {self.error!r}"
                continue
            self.seen.append(event)
            if event.kind == kind and (not name or event.name == name):
                return event
        raise AssertionError(f"no {kind} {name} within {WAIT} s; saw {[(e.kind, e.name) for e in self.seen]}")

    def count(self, kind: str, name: str = "") -> int:
        return sum(1 for e in self.seen if e.kind == kind and (not name or e.name == name))

    def settle(self, seconds: float = 1.5) -> None:
        """Collect what comes in the next ``seconds`` (several debounce periods)."""
        time.sleep(seconds)
        while not self.events.empty():
            self.seen.append(self.events.get())


@pytest.fixture
def live_desk():
    desk = open_desk()
    desk.create_kb("Live")
    yield desk
    desk.close()


def ready_names(desk) -> dict[str, str]:
    return {d.filename: d.status for d in desk.store.list_documents(desk.kb("Live").id)}


def test_the_kb_follows_the_folder(live_desk, tmp_path):
    folder = write_files(tmp_path / "notes", {"a.txt": "the first note about harbours"})
    with Watching(live_desk, folder) as w:
        w.until("watching")
        w.until("added", "a.txt")  # the initial pass

        write_files(folder, {"sub/b.md": "# B\n\nA second note, in a subfolder."})
        w.until("added", "sub/b.md")
        assert ready_names(live_desk) == {"a.txt": "ready", "sub/b.md": "ready"}

        (folder / "a.txt").write_text("the first note, rewritten: lighthouses now")
        w.until("updated", "a.txt")
        hits = live_desk.search(["Live"], "lighthouses", mode="keyword").results
        assert [h.source for h in hits] == ["a.txt"]

        (folder / "sub" / "b.md").unlink()
        w.until("removed", "sub/b.md")
        assert ready_names(live_desk) == {"a.txt": "ready"}

        (folder / "broken.txt").write_bytes(b"\x00\x01\x02\x03" * 64)
        failed = w.until("failed", "broken.txt")
        assert "binary" in failed.detail
        w.until("pass")

        # an unrelated edit makes a pass; the broken file, unchanged, is not reported again
        (folder / "a.txt").write_text("the first note, rewritten again: fog horns")
        w.until("updated", "a.txt")
        w.until("pass")
        assert w.count("failed", "broken.txt") == 1

        # a hidden file does not wake it
        passes = w.count("pass")
        (folder / ".scratch.txt").write_text("hidden")
        w.settle()
        assert w.count("pass") == passes


def test_a_file_named_in_an_edited_gitignore_leaves_the_kb(live_desk, tmp_path):
    folder = write_files(tmp_path / "repo", {"a.txt": "kept notes", "b.secret.txt": "a password"})
    with Watching(live_desk, folder) as w:
        w.until("added", "b.secret.txt")
        (folder / ".gitignore").write_text("*.secret.txt\n")  # a hidden file, but this one wakes it
        w.until("removed", "b.secret.txt")
        assert ready_names(live_desk) == {"a.txt": "ready"}


def test_its_own_database_inside_the_folder_does_not_wake_it(live_desk, tmp_path, kbdesk_home):
    assert kbdesk_home.parent == tmp_path  # the database and stored files live under the watched folder
    write_files(tmp_path, {"a.txt": "a note beside kbdesk's own data"})
    with Watching(live_desk, tmp_path) as w:
        w.until("added", "a.txt")
        w.until("pass")
        write_files(tmp_path, {"b.txt": "a second note"})
        w.until("added", "b.txt")
        w.until("pass")
        w.settle()  # each pass writes the database: that must not start another pass
        assert w.count("pass") == 2


def test_polling_when_asked(live_desk, tmp_path):
    folder = write_files(tmp_path / "notes", {"a.txt": "polled note"})
    with Watching(live_desk, folder, poll=True, poll_interval=0.2) as w:
        assert "polling every 0.2 s" in w.until("watching").detail
        w.until("added", "a.txt")
        write_files(folder, {"b.txt": "another polled note"})
        w.until("added", "b.txt")
    assert ready_names(live_desk) == {"a.txt": "ready", "b.txt": "ready"}


def test_falls_back_to_polling_when_file_events_are_refused(live_desk, tmp_path):
    """The system's refusal is simulated (raising the error watchfiles raises when the
    inotify watch limit is reached); the polling that follows is real."""

    def limited(*paths, force_polling, **options):
        if not force_polling:
            raise OSError(
                f'OS file watch limit reached. about ["{paths[0]}"] '
                f'(Error {{ kind: MaxFilesWatch, paths: ["{paths[0]}"] }})'
            )
        return watchfiles.watch(*paths, force_polling=True, **options)

    folder = write_files(tmp_path / "notes", {"a.txt": "a note"})
    with Watching(live_desk, folder, poll_interval=0.2, watcher=limited) as w:
        fallback = w.until("fallback")
        assert "limit on watched folders" in fallback.detail and "polling every 0.2 s" in fallback.detail
        assert "MaxFilesWatch" not in fallback.detail
        w.until("added", "a.txt")
        write_files(folder, {"b.txt": "noticed by polling"})
        w.until("added", "b.txt")


def test_watch_command_stops_on_ctrl_c(tmp_path):
    folder = write_files(tmp_path / "notes", {"a.txt": "watched from the command line"})
    with open_desk() as desk:
        desk.create_kb("Live")
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from kbdesk.cli.main import main; main()", "watch", "Live", str(folder)],
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        wait_for_text(out, "added a.txt", proc)
        write_files(folder, {"b.txt": "a second file, seen through file events"})
        wait_for_text(out, "added b.txt", proc)
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        assert proc.wait(timeout=WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    text = out.read_text()
    assert text.rstrip().endswith("Stopped.")
    assert "Traceback" not in err.read_text()


def wait_for_text(path, text: str, proc) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if text in path.read_text():
            return
        assert proc.poll() is None, f"exited early: {path.read_text()}"
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not printed within {WAIT} s: {path.read_text()!r}")
