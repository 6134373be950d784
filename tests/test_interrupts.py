"""Ctrl-C: real ``kbdesk`` processes, real SIGINT, a real HTTP provider on loopback that
stalls, and a real PDF child process busy on a slow PDF.

What a user relies on: one Ctrl-C ends the command within moments (exit 130) and says
what finished and what the next run picks up; a second Ctrl-C ends it at once; no PDF
child process outlives it; nothing is left half-done — the next run finishes the rest.
Signals go to the whole process group, as a terminal sends them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from ingest_support import vector_desk, write_files
from kbdesk import open_desk
from kbdesk.ingest.batch import BATCH_DOCS
from kbdesk.ingest.pdf_worker import PdfWorkerCancelled, kill_pdf_workers, run_pdf_worker, running_pdf_workers
from pdf_builders import FONT, _stream, make_pdf

MAIN = "from kbdesk.cli.main import main; main()"
EXIT_WAIT = 10.0  # the bound on waiting for an exit: generous, this is not a timing test
WAIT = 30.0  # bound on waiting for a run to reach the state a test interrupts
STALL = ("stall", {"seconds": 30})  # the provider answers a poisoned request after 30 s
SLOW = "glacier"  # the marker of texts whose embedding request stalls


def slow_pdf(operations: int = 100_000, pages: int = 1) -> bytes:
    """Pages of one line of text followed by many no-op transforms: pypdf spends ~20 µs
    on each, so 100,000 keep the PDF child busy for a couple of seconds (~3 KB a page)."""
    content = (
        b"BT /F1 12 Tf 72 720 Td (A page about lighthouses and their keepers) Tj ET " + b"1 0 0 1 0 0 cm " * operations
    )
    return make_pdf([_stream(content, deflate=1)] * pages, shared=FONT)


def endless_pdf() -> bytes:
    """Minutes of work for the PDF child (its CPU limit ends it first): only a kill stops it soon."""
    return slow_pdf(300_000, pages=30)


# ── processes ───────────────────────────────────────────────────────────────────────


class Kbdesk:
    """``kbdesk ARGS`` in its own session (so a SIGINT can go to its whole group)."""

    def __init__(self, tmp_path: Path, *args: object, name: str = "run") -> None:
        self.out, self.err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", MAIN, *map(str, args)], stdout=out, stderr=err, start_new_session=True
            )
        self.pid = self.proc.pid

    def ctrl_c(self) -> None:
        os.killpg(self.pid, signal.SIGINT)

    def wait(self) -> int:
        try:
            return self.proc.wait(timeout=EXIT_WAIT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"kbdesk did not exit within {EXIT_WAIT} s of Ctrl-C") from None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)

    @property
    def stdout(self) -> str:
        return self.out.read_text()

    @property
    def stderr(self) -> str:
        return self.err.read_text()

    def until(self, condition, what: str) -> None:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if condition():
                return
            assert self.proc.poll() is None, f"kbdesk exited early ({self.proc.returncode}): {self.stderr}"
            time.sleep(0.02)
        self.kill()
        raise AssertionError(f"never reached: {what}")


@pytest.fixture
def started():
    runs: list[Kbdesk] = []

    def start(*args, **kwargs) -> Kbdesk:
        run = Kbdesk(*args, **kwargs)
        runs.append(run)
        return run

    yield start
    for run in runs:  # a failed test leaves nothing running
        run.kill()


def run_cli_process(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", MAIN, *map(str, args)], capture_output=True, text=True, timeout=120)


# ── /proc ───────────────────────────────────────────────────────────────────────────


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, process group) of a live process, None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parens
    return fields[0], int(fields[1]), int(fields[2])


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def alive(pid: int) -> bool:
    found = _stat(pid)
    return found is not None and found[0] not in ("Z", "X")  # a zombie has ended


def pdf_children(pid: int) -> list[int]:
    out = []
    for child in _pids():
        found = _stat(child)
        if found and found[1] == pid and alive(child):
            try:
                if b"pdf_worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                    out.append(child)
            except OSError:
                pass
    return out


def group_left(pgid: int) -> list[int]:
    """Live processes still in the (dead) command's process group."""
    return [pid for pid in _pids() if (found := _stat(pid)) and found[2] == pgid and alive(pid)]


def assert_nothing_left(run: Kbdesk, pdf_pids: Sequence[int] = ()) -> None:
    deadline = time.monotonic() + EXIT_WAIT
    while (group_left(run.pid) or any(alive(p) for p in pdf_pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_left(run.pid) == [], "a process of the interrupted command is still running"
    assert not any(alive(p) for p in pdf_pids), "a PDF child outlived kbdesk"


def statuses(kb: str = "docs") -> dict[str, str]:
    with open_desk() as desk:
        return {d.filename: d.status for d in desk.store.list_documents(desk.kb(kb).id)}


# ── kbdesk add ──────────────────────────────────────────────────────────────────────


def test_ctrl_c_stops_add_within_moments_and_the_next_add_finishes(tmp_path, fake_openai, started):
    vector_desk(fake_openai).close()
    fake_openai.poison[SLOW] = STALL
    # three batches: a* is indexed quickly, b* waits on the provider, c.pdf keeps a PDF child busy
    files: dict[str, str | bytes] = {
        f"a{i:03d}.txt": f"Note {i} on harbours and their keepers." for i in range(BATCH_DOCS)
    }
    files |= {f"b{i:03d}.txt": f"Note {i} on a {SLOW} and its moraines." for i in range(BATCH_DOCS)}
    files["c.pdf"] = slow_pdf()
    folder = write_files(tmp_path / "corpus", files)

    # two workers: one takes a*, then c.pdf; the other is stuck on b*'s HTTP call
    run = started(tmp_path, "add", "docs", folder, "-w", "2")
    with open_desk() as desk:
        kb_id = desk.kb("docs").id

        def a_done_and_pdf_busy() -> bool:
            ready = sum(d.status == "ready" for d in desk.store.list_documents(kb_id))
            return ready == BATCH_DOCS and bool(pdf_children(run.pid))

        run.until(a_done_and_pdf_busy, "the first batch ready while the PDF is being read")
    children = pdf_children(run.pid)

    run.ctrl_c()
    assert run.wait() == 130
    out, err = run.stdout, run.stderr
    assert f"Interrupted: {BATCH_DOCS} finished, 0 failed, {BATCH_DOCS + 1} left for the next run." in out
    assert "finished  a000.txt, a001.txt" in out
    assert "left      " in out and "b000.txt" in out
    assert "kbdesk resume docs" in out and "kbdesk add" in out
    assert "Stopping" in err and "Traceback" not in err
    assert_nothing_left(run, children)

    # nothing half-done: every a* is ready and has its chunks, nothing else is
    after = statuses()
    assert sorted(n for n, s in after.items() if s == "ready") == sorted(n for n in files if n.startswith("a"))

    fake_openai.poison.clear()
    finish = run_cli_process("add", "docs", folder)
    assert finish.returncode == 0, finish.stdout + finish.stderr
    assert statuses() == dict.fromkeys(files, "ready")  # one ready row per file


def test_a_second_ctrl_c_quits_at_once(tmp_path, fake_openai, started):
    vector_desk(fake_openai).close()
    fake_openai.poison[SLOW] = STALL
    folder = write_files(tmp_path / "corpus", {f"g{i}.txt": f"{SLOW} note {i}" for i in range(3)})
    run = started(tmp_path, "add", "docs", folder)
    run.until(lambda: fake_openai.embedding_requests, "an embedding request in flight")

    run.ctrl_c()
    run.until(lambda: "Stopping" in run.stderr, "the first Ctrl-C acknowledged")
    run.ctrl_c()
    assert run.wait() == 130
    assert "Stopped at once" in run.stderr and "Traceback" not in run.stderr
    assert "Interrupted:" not in run.stdout  # it did not sit out the grace period
    assert_nothing_left(run)

    fake_openai.poison.clear()
    assert run_cli_process("resume", "docs").returncode == 0
    assert statuses() == {f"g{i}.txt": "ready" for i in range(3)}


# ── kbdesk resume ───────────────────────────────────────────────────────────────────


def test_ctrl_c_stops_resume_and_a_later_resume_finishes(tmp_path, fake_openai, started):
    vector_desk(fake_openai).close()
    fake_openai.poison[SLOW] = STALL
    folder = write_files(tmp_path / "corpus", {f"g{i}.txt": f"{SLOW} note {i}" for i in range(3)})
    run = started(tmp_path, "add", "docs", folder, name="add")
    run.until(lambda: fake_openai.embedding_requests, "an embedding request in flight")
    run.ctrl_c()
    assert run.wait() == 130

    asked = len(fake_openai.embedding_requests)
    run = started(tmp_path, "resume", "docs", "--json", name="resume")
    run.until(lambda: len(fake_openai.embedding_requests) > asked, "the resumed embedding request in flight")
    run.ctrl_c()
    assert run.wait() == 130
    said = json.loads(run.stdout)  # --json: the summary is JSON too
    assert said["interrupted"] is True and said["finished"] == [] and said["failed"] == []
    assert sorted(said["left"]) == ["g0.txt", "g1.txt", "g2.txt"]
    assert "kbdesk resume docs" in said["next"]
    assert "Traceback" not in run.stderr
    assert_nothing_left(run)

    fake_openai.poison.clear()
    done = run_cli_process("resume", "docs")
    assert done.returncode == 0, done.stderr
    assert statuses() == {f"g{i}.txt": "ready" for i in range(3)}


# ── kbdesk rebuild ──────────────────────────────────────────────────────────────────


def test_ctrl_c_stops_rebuild_and_resume_finishes_it(tmp_path, fake_openai, started):
    with vector_desk(fake_openai) as desk:
        desk.edit_kb("docs", chunk_size=400, chunk_overlap=0)
    texts = {f"g{i}.txt": " ".join(f"Sentence {j} of note {i} about a {SLOW}." for j in range(20)) for i in range(3)}
    folder = write_files(tmp_path / "corpus", texts)
    assert run_cli_process("add", "docs", folder).returncode == 0
    with open_desk() as desk:  # new chunking: the rebuild must embed chunks it has never seen
        desk.edit_kb("docs", chunk_size=200, chunk_overlap=0)
    fake_openai.poison[SLOW] = STALL

    asked = len(fake_openai.embedding_requests)
    run = started(tmp_path, "rebuild", "docs")
    run.until(lambda: len(fake_openai.embedding_requests) > asked, "the rebuild's embedding request in flight")
    run.ctrl_c()
    assert run.wait() == 130
    assert "Interrupted: 0 finished, 0 failed, 3 left for the next run." in run.stdout
    assert "kbdesk resume docs" in run.stdout and "kbdesk rebuild docs" in run.stdout
    assert "Traceback" not in run.stderr
    assert_nothing_left(run)

    fake_openai.poison.clear()
    done = run_cli_process("resume", "docs")
    assert done.returncode == 0, done.stderr
    assert statuses() == dict.fromkeys(texts, "ready")
    with open_desk() as desk:
        kb = desk.kb("docs")
        sizes = [len(text) for _, text in desk.store.chunk_texts(kb.id)]
    assert sizes and max(sizes) <= 200  # finished with the new chunking


# ── the PDF child process ───────────────────────────────────────────────────────────


def _extract_in_thread(data: bytes, **options):
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = run_pdf_worker(data, timeout=60, memory_mb=512, **options)
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which checks it
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def _until(condition, what: str, bound: float = WAIT) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        assert time.monotonic() < deadline, f"never reached: {what}"
        time.sleep(0.02)


def test_kill_pdf_workers_stops_a_running_extraction():
    thread, box = _extract_in_thread(endless_pdf())
    _until(running_pdf_workers, "a PDF child running")
    [pid] = running_pdf_workers()
    assert kill_pdf_workers() == 1
    thread.join(EXIT_WAIT)
    assert not thread.is_alive()
    assert isinstance(box.get("error"), PdfWorkerCancelled)  # cancelled, not "the PDF is broken"
    assert not alive(pid) and running_pdf_workers() == []


def test_a_cancelled_callable_stops_an_extraction():
    cancel = threading.Event()
    thread, box = _extract_in_thread(endless_pdf(), cancelled=cancel.is_set)
    _until(running_pdf_workers, "a PDF child running")
    [pid] = running_pdf_workers()
    cancel.set()
    thread.join(EXIT_WAIT)
    assert isinstance(box.get("error"), PdfWorkerCancelled)
    assert not alive(pid)
    # a later extraction is not affected by an earlier cancel
    assert run_pdf_worker(slow_pdf(10), timeout=60, memory_mb=512).pages[0].startswith("A page about")


PARENT = """
import sys
from kbdesk.ingest.pdf_worker import run_pdf_worker
run_pdf_worker(open(sys.argv[1], "rb").read(), timeout=60, memory_mb=512)
"""


def test_a_pdf_child_ignores_ctrl_c_and_dies_with_its_parent(tmp_path):
    pdf = tmp_path / "slow.pdf"
    pdf.write_bytes(endless_pdf())
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(pdf)], start_new_session=True)
    try:
        _until(lambda: pdf_children(parent.pid), "a PDF child running")
        [child] = pdf_children(parent.pid)
        time.sleep(0.5)  # let it get past interpreter start-up
        os.kill(child, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole group: the parent decides
        time.sleep(0.3)
        assert alive(child)
        parent.kill()  # SIGKILL: no chance to clean up; the child must go anyway
        parent.wait(EXIT_WAIT)
        # left alone it would work for a minute (its CPU limit); it goes with its parent
        _until(lambda: not alive(child), "the orphaned PDF child gone", EXIT_WAIT)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)


def test_ctrl_c_during_another_command_exits_130_without_a_traceback(tmp_path, fake_openai, started):
    """A search whose query embedding hangs (a silent provider) ends at one Ctrl-C."""
    desk = vector_desk(fake_openai)
    desk.add("docs", [write_files(tmp_path / "c", {"a.txt": "tides and harbours"})])
    desk.close()
    fake_openai.poison = {SLOW: STALL}
    run = started(tmp_path, "search", "docs", f"{SLOW} question")
    run.until(
        lambda: any(SLOW in " ".join(r.inputs) for r in fake_openai.embedding_requests), "the query embedding request"
    )
    run.ctrl_c()
    assert run.wait() == 130
    assert "Interrupted." in run.stderr and "Traceback" not in run.stderr
