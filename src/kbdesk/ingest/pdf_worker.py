"""PDF text extraction in a child process that can be killed.

pypdf has no timeout, single pages have been seen to hang or eat memory, and any call
can raise on a malformed file. So the PDF never gets parsed in kbdesk's own process:
:func:`run_pdf_worker` runs this file with ``python -P`` (a fresh interpreter through
``subprocess``: no ``fork()`` of a threaded process, no ``preexec_fn``; ``python -m
kbdesk.ingest.pdf_worker`` works the same), writes the PDF bytes to its stdin (from a
thread, while it reads the answer) and reads one JSON object from its stdout. The child
caps its own address space (``RLIMIT_AS``) and processor time (``RLIMIT_CPU``: the
``timeout``) before it imports pypdf, and uses pypdf's own decompression / parsing
limits. Processor time, not wall time: on a busy machine an extraction waits for its
turn without failing; the parent kills a child only when it has used no processor time
at all for :data:`WALL_FACTOR` times the limit (a backstop; where the system cannot
tell, that much wall time, the only limit where there are no rlimits).

A child never outlives kbdesk: :func:`kill_pdf_workers` kills every running child
(their callers raise :class:`PdfWorkerCancelled`, not a failure of the document), a
``cancelled`` callable given to :func:`run_pdf_worker` is polled every
``CANCEL_POLL_SECONDS``, and the child itself dies with its parent (Linux:
``PR_SET_PDEATHSIG``; elsewhere it polls its parent's pid). It runs in a process group
of its own and ignores SIGINT: a Ctrl-C in the terminal is kbdesk's to handle.

Protocol: stdin = PDF bytes; argv = memory cap in MB, CPU seconds, parent pid; stdout =
``{"pages": [str, ...], "errors": [str, ...]}`` or ``{"error": str}``; exit code 0 when
JSON was written, ``EXIT_MEMORY`` when the memory cap was hit.

This module imports nothing from kbdesk, so the child stays small.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

EXIT_MEMORY = 3
WALL_FACTOR = 20  # the backstop (no progress, or wall time), in multiples of the processor-time limit
# A 10 MB PDF with more text than this is hostile or broken; it also bounds the JSON
# the parent has to read back.
MAX_TEXT_CHARS = 20_000_000
CANCEL_POLL_SECONDS = 0.1  # how often run_pdf_worker asks its ``cancelled`` callable
PROGRESS_POLL = 1.0  # how often, without one, it looks whether the child still works
PARENT_POLL_SECONDS = 0.5  # how often a child without PR_SET_PDEATHSIG checks its parent
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class PdfWorkerError(Exception):
    """The PDF could not be extracted; the message is one readable line."""


class PdfWorkerTimeout(PdfWorkerError):
    """The processor-time limit was reached (or the wall-clock backstop): tried again later."""


class PdfWorkerCancelled(Exception):
    """The extraction was stopped on purpose (cancel or Ctrl-C): the document did not
    fail, it is left for the next run."""


@dataclass
class PdfPages:
    pages: list[str]  # one entry per page, "" for pages without text or that failed
    errors: list[str]  # "page 3: ..." for pages that raised; the others were kept


# ── parent side ─────────────────────────────────────────────────────────────────────

# Children running now: pid -> Popen. Mutated under _running_lock; kill_pdf_workers
# reads a copy without the lock, so it is safe from a signal handler.
_running: dict[int, subprocess.Popen] = {}
_running_lock = threading.Lock()
_killed: set[int] = set()  # pids kill_pdf_workers killed (their callers raise PdfWorkerCancelled)


def kill_pdf_workers() -> int:
    """Kill every PDF child process running now (thread-safe, signal-handler safe).

    Each extraction that was running raises :class:`PdfWorkerCancelled` in its own
    thread; extractions started afterwards run normally. Returns how many were killed.
    """
    killed = 0
    for pid, proc in _running.copy().items():
        if proc.returncode is not None:
            continue
        _killed.add(pid)
        try:
            os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
            killed += 1
        except OSError:  # already gone
            pass
    return killed


def running_pdf_workers() -> list[int]:
    """Pids of the PDF child processes running now (for tests and diagnostics)."""
    return [pid for pid, proc in _running.copy().items() if proc.returncode is None]


def run_pdf_worker(
    data: bytes, *, timeout: float, memory_mb: int, cancelled: Callable[[], bool] | None = None
) -> PdfPages:
    """Extract the text of each page of ``data`` in a child process.

    Raises :class:`PdfWorkerError` (one line) when the PDF cannot be read, and
    :class:`PdfWorkerCancelled` when ``cancelled()`` became true or
    :func:`kill_pdf_workers` was called while it ran.
    """
    if cancelled is not None and cancelled():
        raise PdfWorkerCancelled("PDF extraction was cancelled")
    # The limit is processor time, counted by the system in the child (RLIMIT_CPU): a
    # machine busy with other work slows an extraction down but never fails it. Wall
    # time is only a backstop (a child that gets no CPU at all for that long).
    cpu_seconds = max(1, math.ceil(timeout))
    wall = timeout * WALL_FACTOR if _HAS_RLIMIT else timeout
    # This very file runs as a script (it imports nothing from kbdesk), so the child
    # needs no sys.path changes; -P keeps the script's and the current directory (which
    # may hold the user's files) off sys.path.
    cmd = [sys.executable, "-P", os.path.abspath(__file__), str(memory_mb), str(cpu_seconds), str(os.getpid())]
    try:
        # its own process group: a Ctrl-C in the terminal goes to kbdesk's group, and
        # kbdesk decides what stops (a child killed by it would look like a broken PDF)
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0 if os.name == "posix" else None,
        )
    except OSError as exc:  # e.g. a frozen app whose sys.executable is not a Python
        raise PdfWorkerError(f"cannot start the PDF reader process ({exc.strerror or exc})") from None
    with _running_lock:
        _running[proc.pid] = proc
    try:
        out, err = _communicate(proc, data, wall, cancelled)
    finally:
        with _running_lock:
            _running.pop(proc.pid, None)
            was_killed = proc.pid in _killed
            _killed.discard(proc.pid)
    rc = proc.returncode
    if was_killed or rc == -signal.SIGINT:  # SIGINT: a Ctrl-C reached it before it could ignore it
        raise PdfWorkerCancelled("PDF extraction was cancelled")
    # imported here: the child runs this file and imports nothing from kbdesk
    from kbdesk.ingest.child_answer import CPU, CRASHED, MEMORY, read_answer

    answer = read_answer(rc, out, err, EXIT_MEMORY)
    if answer.fault == MEMORY:
        raise PdfWorkerError(f"PDF extraction used more than {memory_mb} MB of memory")
    if answer.fault == CPU:
        raise PdfWorkerTimeout(f"PDF extraction took more than {timeout:g} s of processor time")
    if answer.fault == CRASHED:
        raise PdfWorkerError(f"PDF reader crashed ({answer.how})")
    if answer.result is None:
        raise PdfWorkerError(answer.how)
    result = answer.result
    return PdfPages(pages=list(result["pages"]), errors=list(result["errors"]))


_HAS_RLIMIT = os.name == "posix"  # elsewhere (Windows) the wall clock is the only limit


def _communicate(
    proc: subprocess.Popen, data: bytes, timeout: float, cancelled: Callable[[], bool] | None
) -> tuple[bytes, bytes]:
    """Feed ``data``, read the answer; kill the child on cancel, on an exception, or once
    it has gone ``timeout`` s without using any processor time (where the system says:
    Linux; elsewhere ``timeout`` s of wall time) — a child that works, however slowly
    on a busy machine, is never killed for it.

    The bytes go in from a thread of their own while this one reads the child's output:
    however late the child starts reading (a busy machine), all of ``data`` reaches it,
    and neither side can block the other on a full pipe. (``Popen.communicate`` called
    again after a timeout would not write the rest of its input.)"""
    stdin, proc.stdin = proc.stdin, None  # communicate() below reads the output only
    feeder = threading.Thread(target=_feed, args=(stdin, data), name="pdf-worker-stdin", daemon=True)
    feeder.start()
    deadline = time.monotonic() + timeout
    spent = _cpu_ticks(proc.pid)
    try:
        while True:
            step = min(deadline - time.monotonic(), CANCEL_POLL_SECONDS if cancelled is not None else PROGRESS_POLL)
            try:
                return proc.communicate(timeout=max(step, 0))
            except subprocess.TimeoutExpired:
                now = _cpu_ticks(proc.pid)
                if now is not None and now != spent:  # it is working: the backstop waits
                    spent, deadline = now, time.monotonic() + timeout
                if time.monotonic() >= deadline:
                    proc.kill()
                    proc.communicate()
                    raise PdfWorkerTimeout(f"PDF extraction made no progress for {timeout:g} s") from None
                if cancelled is not None and cancelled():
                    _killed.add(proc.pid)
                    proc.kill()
                    return proc.communicate()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        feeder.join()  # the child has ended: the pipe is closed, the write returned


def _cpu_ticks(pid: int) -> int | None:
    """The processor time a running child has used so far, in clock ticks (Linux), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15 of proc(5))
    except (OSError, ValueError, IndexError):
        return None


def _feed(stdin: Any, data: bytes) -> None:
    """Write all of ``data`` to the child's input and close it; a child that ended early
    (killed, or it failed before reading) just leaves the rest unwritten."""
    try:
        stdin.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            stdin.close()


# ── child side ──────────────────────────────────────────────────────────────────────


class _Failure(Exception):
    pass


def _die_with_parent(parent: int | None) -> None:
    """Make sure this child ends when kbdesk does, however kbdesk ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what a Ctrl-C stops (belt and braces)
    if parent is None:
        return
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass  # no usable libc: poll like the other systems

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(PARENT_POLL_SECONDS)

    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _limit_resources(memory_mb: int, cpu_seconds: int) -> None:
    try:
        import resource
    except ImportError:  # Windows: no rlimits; the parent's wall-clock kill still applies
        return
    for which, value in (
        (resource.RLIMIT_AS, memory_mb * 1024 * 1024),
        (resource.RLIMIT_CPU, cpu_seconds),
        (resource.RLIMIT_CORE, 0),
    ):
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        with contextlib.suppress(ValueError, OSError):  # e.g. macOS refuses some RLIMIT_AS values
            resource.setrlimit(which, (value, hard))


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else ""
    return (text[:200] or type(exc).__name__).replace("\x00", "")


def _limit_message(exc: BaseException) -> str:
    if "decompress" in str(exc).lower():
        return "a compressed stream inflates past the safety limit"
    return f"exceeds a safety limit ({_one_line(exc)})"


def _out_of_memory(exc: BaseException) -> bool:
    # zlib reports a failed allocation as zlib.error, not MemoryError
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or (type(exc).__name__ == "error" and ("allocate" in text or "memory" in text))


def _clean(text: str) -> str:
    text = text.replace("\x00", "")
    # pypdf can produce lone surrogates from broken font maps; they can't be stored as UTF-8
    return text.encode("utf-8", "replace").decode("utf-8")


NEEDS_PASSWORD = "PDF is encrypted: it needs a password to open"


def _missing_dependency(exc: BaseException) -> str:
    """pypdf needs a package kbdesk depends on (``pypdf[crypto,brotli]``) and it is missing."""
    package = "brotli" if "brotli" in str(exc).lower() else "cryptography"
    return f"PDF needs the '{package}' package, which is missing from this installation (pip install {package})"


def extract_pages(data: bytes) -> tuple[list[str], list[str]]:
    """Child-side extraction; raises ``_Failure`` (readable) for whole-document errors."""
    import io
    import logging
    import warnings

    import pypdf
    from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError

    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    warnings.simplefilter("ignore")
    # pypdf's defaults bound decompression (75 MB per stream) and parsing work; never
    # shell out to jbig2dec, and skip the per-reader scan for deprecated globals.
    if hasattr(pypdf, "overwrite_configuration"):  # in pypdf 7; guarded in case an older one lacks it
        pypdf.overwrite_configuration(jbig2dec_binary=None, disable_legacy_handling=True)

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # an empty open password (permissions only) is read as if there were none
        if reader.is_encrypted and reader.decrypt("") == pypdf.PasswordType.NOT_DECRYPTED:
            raise _Failure(NEEDS_PASSWORD)
        count = len(reader.pages)
    except _Failure:
        raise
    except DependencyError as exc:
        raise _Failure(_missing_dependency(exc)) from None
    except FileNotDecryptedError:
        raise _Failure(NEEDS_PASSWORD) from None
    except LimitReachedError as exc:
        raise _Failure(f"PDF {_limit_message(exc)}") from None
    except RecursionError:
        raise _Failure("PDF is damaged (objects nested too deeply)") from None
    except Exception as exc:  # noqa: BLE001 - pypdf can raise anything on a malformed file
        if _out_of_memory(exc):
            raise MemoryError from None
        raise _Failure(f"PDF is damaged or incomplete ({_one_line(exc)})") from None
    if count == 0:
        raise _Failure("PDF has no pages")

    pages: list[str] = []
    errors: list[str] = []
    total = 0
    for number in range(1, count + 1):
        try:
            text = _clean(reader.pages[number - 1].extract_text() or "")
        except DependencyError as exc:
            raise _Failure(_missing_dependency(exc)) from None
        except FileNotDecryptedError:
            raise _Failure(NEEDS_PASSWORD) from None
        except LimitReachedError as exc:
            errors.append(f"page {number}: {_limit_message(exc)}")
            text = ""
        except RecursionError:
            errors.append(f"page {number}: objects nested too deeply")
            text = ""
        except Exception as exc:  # noqa: BLE001 - one broken page should not lose the other pages
            if _out_of_memory(exc):
                raise MemoryError from None
            errors.append(f"page {number}: {_one_line(exc)}")
            text = ""
        total += len(text)
        if total > MAX_TEXT_CHARS:
            raise _Failure(f"PDF is too large: more than {MAX_TEXT_CHARS:,} characters of text")
        pages.append(text)
    return pages, errors


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    memory_mb, cpu_seconds = int(args[0]), int(args[1])
    _die_with_parent(int(args[2]) if len(args) > 2 else None)
    try:
        _limit_resources(memory_mb, cpu_seconds)
        data = sys.stdin.buffer.read()
        try:
            pages, errors = extract_pages(data)
            result: dict = {"pages": pages, "errors": errors}
        except _Failure as exc:
            result = {"error": str(exc)}
        del data
        payload = json.dumps(result, ensure_ascii=False).encode("utf-8")  # _clean(): no surrogates
    except MemoryError:
        return EXIT_MEMORY
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
