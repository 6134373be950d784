"""The OCR child process, from kbdesk's side: started with the PDF reader's bounds, fed
from a thread, read to the end, killed with everything it started (its own process
group) on timeout or cancel. :mod:`.ocr_worker` is what runs in it."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from kbdesk.ingest.child_answer import CPU, CRASHED, MEMORY, read_answer
from kbdesk.ingest.ocr_worker import EXIT_MEMORY
from kbdesk.ingest.sections import ExtractionError, ResourceLimit

CANCEL_POLL_SECONDS = 0.1


class OcrCancelled(Exception):
    """The OCR was stopped on purpose (cancel): the document did not fail."""


_running: dict[int, subprocess.Popen] = {}
_running_lock = threading.Lock()


def running_ocr_workers() -> list[int]:
    """Pids of the OCR child processes running now (for tests and diagnostics)."""
    return [pid for pid, proc in _running.copy().items() if proc.returncode is None]


def _kill(proc: subprocess.Popen) -> None:
    """The child and the tesseract it started (its own process group)."""
    with contextlib.suppress(OSError):
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()


def run_ocr_worker(
    data: bytes,
    args: list[str],
    setup: Any,
    *,
    timeout: float,
    memory_mb: int,
    cancelled: Callable[[], bool] | None = None,
) -> dict:
    """Run :mod:`.ocr_worker` on ``data``; its JSON answer, or raises ExtractionError,
    ResourceLimit (out of time) or OcrCancelled."""
    assert setup.binary is not None
    cpu_seconds = math.ceil(timeout) + 2
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ocr_worker.py")
    cmd = [
        sys.executable, "-P", worker, str(memory_mb), str(cpu_seconds), str(os.getpid()),
        args[0], setup.binary, "+".join(setup.languages), str(setup.max_pixels), *args[1:],
    ]  # fmt: skip
    env = dict(os.environ, OMP_THREAD_LIMIT="1", OPENBLAS_NUM_THREADS="1")
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            process_group=0 if os.name == "posix" else None,
        )
    except OSError as exc:
        raise ExtractionError(f"cannot start the OCR process ({exc.strerror or exc})") from None
    with _running_lock:
        _running[proc.pid] = proc
    try:
        out, err, why = _communicate(proc, data, timeout, cancelled)
    finally:
        with _running_lock:
            _running.pop(proc.pid, None)
    if why == "cancelled":
        raise OcrCancelled("OCR was cancelled")
    if why == "timeout":
        raise ResourceLimit(
            f"OCR took longer than {timeout:g} s; the next add tries again "
            "(a busy machine? ingest.pdf_timeout in the config raises the limit per page)"
        )
    answer = read_answer(proc.returncode, out, err, EXIT_MEMORY)
    if answer.fault == MEMORY:
        raise ExtractionError(f"OCR used more than {memory_mb} MB of memory (ingest.pdf_memory_mb)")
    if answer.fault == CPU:
        raise ResourceLimit(f"OCR took longer than {timeout:g} s; the next add tries again")
    if answer.fault == CRASHED:
        raise ExtractionError(f"the OCR process crashed ({answer.how})")
    if answer.result is None:
        raise ExtractionError(answer.how)
    return answer.result


def _communicate(
    proc: subprocess.Popen, data: bytes, timeout: float, cancelled: Callable[[], bool] | None
) -> tuple[bytes, bytes, str | None]:
    """Write ``data`` from a thread (a slow child never blocks the wait), read stdout and
    stderr to their ends, kill on timeout or cancel."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def write() -> None:
        with contextlib.suppress(OSError):  # the child died: its exit code says why
            assert proc.stdin is not None
            proc.stdin.write(data)
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()

    def read(stream: Any, into: list[bytes]) -> None:
        for block in iter(lambda: stream.read(65536), b""):
            into.append(block)

    threads = [
        threading.Thread(target=write, daemon=True),
        threading.Thread(target=read, args=(proc.stdout, chunks["out"]), daemon=True),
        threading.Thread(target=read, args=(proc.stderr, chunks["err"]), daemon=True),
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    why: str | None = None
    try:
        while True:
            try:
                proc.wait(timeout=min(CANCEL_POLL_SECONDS, max(deadline - time.monotonic(), 0)))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    why = "timeout"
                elif cancelled is not None and cancelled():
                    why = "cancelled"
                if why is not None:
                    _kill(proc)
                    proc.wait()
                    break
    except BaseException:
        _kill(proc)
        proc.wait()
        raise
    _kill(proc)  # anything the child left behind in its group
    for t in threads:
        t.join(timeout=5)
    return b"".join(chunks["out"]), b"".join(chunks["err"]), why
