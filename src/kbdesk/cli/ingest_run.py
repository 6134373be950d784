"""How ``kbdesk add``, ``resume``, ``rebuild`` and ``watch`` run: their exit codes, the
summary they print, Ctrl-C (the ingestion runs in a worker thread while the main thread
waits; the first Ctrl-C cancels it and leaves after ``GRACE_SECONDS`` at the latest,
through ``os._exit`` if a worker is still stuck — ingestion is crash-safe by design; a
second Ctrl-C leaves at once; PDF child processes are killed on the way out) and a
database that stops a run (one line, exit ``EXIT_DATABASE``)."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import click
from rich.text import Text

from kbdesk.cli.output import print_json, stderr, stdout
from kbdesk.cli.progress import IngestProgress, Ledger
from kbdesk.ingest.pdf_worker import kill_pdf_workers
from kbdesk.ingest.pipeline import IngestReport
from kbdesk.textsafe import inert_line

EXIT_SOME_FAILED = 3
EXIT_DATABASE = 4  # the database could not be written (a full disk, an I/O error): what finished is kept
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a Ctrl-C
GRACE_SECONDS = 1.5  # after Ctrl-C, how long the run may take to stop before we leave anyway
NAMES_SHOWN = 5  # per list in the interrupted summary

T = TypeVar("T")


def show_progress(as_json: bool, quiet: bool) -> bool:
    return not as_json and not quiet and sys.stderr.isatty()


def summary(
    report: IngestReport, as_json: bool, extra: dict | None = None, headline: bool = True, missing: Sequence[str] = ()
) -> None:
    known = list(getattr(report, "known_failures", []))
    by_other = list(getattr(report, "by_other", []))
    if as_json:
        print_json({**report.to_dict(), "missing": list(missing), **(extra or {})})
    else:
        out = stdout()
        parts = [f"{len(report.added)} added", f"{len(report.updated)} updated", f"{len(report.unchanged)} unchanged"]
        if report.resumed:
            parts.append(f"{len(report.resumed)} resumed")
        if by_other:
            parts.append(f"{len(by_other)} indexed by another run")
        if report.removed:
            parts.append(f"{len(report.removed)} removed")
        parts.append(f"{len(report.failed)} failed")
        if known:
            parts.append(f"{len(known)} failed before and unchanged")
        if headline:
            out.print(
                Text(
                    ", ".join(parts) + f"; {report.embedded_chunks} chunks embedded "
                    f"({report.cached_chunks} from cache, {report.embedding_calls} provider calls)"
                )
            )
        err = stderr()  # failures are errors: on stderr, one line each
        for name, reason in report.failed:
            err.print(Text(f"  failed  {inert_line(name)}: {inert_line(reason)}", style="red"))
        for name, reason in known:
            err.print(Text(f"  failed before  {inert_line(name)}: {inert_line(reason)}", style="red"))
        if known:
            err.print(
                Text("  (unchanged since they failed, so not tried again: --retry-failed tries them)", style="dim")
            )
        for path, reason in report.skipped:
            if path not in missing:
                out.print(Text(f"  skipped {inert_line(path)}: {inert_line(reason)}", style="dim"))
    if report.failed or known or missing:
        raise SystemExit(EXIT_SOME_FAILED)


# ── Ctrl-C ──────────────────────────────────────────────────────────────────────────


def _quit_now(_signum: int, _frame: Any) -> None:
    """The second Ctrl-C: leave at once (no cleanup, no traceback)."""
    with contextlib.suppress(OSError):
        os.write(2, b"\nStopped at once. Nothing is half-written: `kbdesk resume` finishes what was left.\n")
    kill_pdf_workers()
    os._exit(EXIT_INTERRUPTED)


def _leave(code: int, at_once: bool) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if at_once:  # a worker is stuck (HTTP, PDF): don't wait for it, don't let exit join it
        kill_pdf_workers()
        os._exit(code)
    raise SystemExit(code)


def run_interruptibly(
    work: Callable[[], T],
    *,
    cancel: Callable[[], None],
    stopped: Callable[[T | None], None],
    exit_code: int = EXIT_INTERRUPTED,
) -> T:
    """``work()`` in a worker thread; returns its result or re-raises its error.

    On Ctrl-C: ``cancel()``, wait up to GRACE_SECONDS for ``work`` to return, call
    ``stopped(result or None)`` to say what happened, and exit with ``exit_code``. A
    second Ctrl-C exits at once.
    """
    box: dict[str, Any] = {}
    # An Event, not Thread.join: a join interrupted by Ctrl-C can mark the thread as
    # ended while it still runs (seen on CPython 3.11).
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread below, which re-raises it
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="kbdesk-run", daemon=True).start()
    try:
        while not done.wait(0.25):
            pass
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, _quit_now)
        logging.disable(logging.WARNING)  # retry chatter from calls being abandoned
        cancel()
        finished = done.wait(GRACE_SECONDS)
        stopped(box.get("value") if finished else None)
        _leave(exit_code, at_once=not finished)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(inert_line(n) for n in names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def _interrupted(ledger: Ledger, report: IngestReport | None, next_step: str, as_json: bool) -> None:
    """What a cut-short run finished and what the next run picks up."""
    finished = list(ledger.finished.values())
    failed = list(ledger.failed.values())
    left = ledger.left
    if report is not None:  # the run returned: it also knows documents it never started
        left += [name for name in report.cancelled if name not in left]
    if as_json:
        print_json(
            {
                "interrupted": True,
                "finished": finished,
                "failed": [{"file": f, "error": e} for f, e in failed],
                "left": left,
                "unchanged": ledger.unchanged,
                "next": next_step,
            }
        )
        return
    out = stdout()
    out.print(Text(f"Interrupted: {len(finished)} finished, {len(failed)} failed, {len(left)} left for the next run."))
    if finished:
        out.print(Text(f"  finished  {_names(finished)}"))
    for name, reason in failed[:NAMES_SHOWN]:
        out.print(Text(f"  failed    {inert_line(name)}: {inert_line(reason)}", style="red"))
    if left:
        out.print(Text(f"  left      {_names(left)}"))
    out.print(Text(next_step))


def ingest(ingestor: Any, progress: IngestProgress, work: Callable[[], T], next_step: str, as_json: bool) -> T:
    def cancel() -> None:
        progress.stop()
        click.echo("Stopping… (Ctrl-C again quits at once)", err=True)
        ingestor.cancel()

    def stopped(report: Any) -> None:
        report = report[1] if isinstance(report, tuple) else report  # rebuild returns (counts, report)
        _interrupted(progress.ledger, report, next_step, as_json)

    return run_interruptibly(work, cancel=cancel, stopped=stopped)


def quoted(text: str) -> str:
    return inert_line(shlex.quote(text))


@contextlib.contextmanager
def database_stops(progress: Callable[[], tuple[int, int]], resume: str) -> Iterator[None]:
    """A run the database stopped (a full disk, an I/O error, a file locked too long):
    one line on stderr — what happened, what finished (``progress()``: documents
    finished, documents taken up and left as they were) and how to go on — and exit
    :data:`EXIT_DATABASE`. A database opened read-only is refused before any work, as
    every other command refuses it."""
    from kbdesk.errors import DatabaseWriteError, ReadOnlyDatabaseError, StoreError

    try:
        yield
    except ReadOnlyDatabaseError:
        raise
    except StoreError as exc:
        finished, left = progress()
        kept = f"{finished} document{'' if finished == 1 else 's'} finished before it and are kept"
        mend = (
            "Free some space (or mend what the disk reports), then"
            if isinstance(exc, DatabaseWriteError)
            else "Once the database can be written again,"
        )
        click.echo(
            inert_line(
                f"Error: stopped: {exc}. {kept}"
                + (f", {left} were left as they were" if left else "")
                + f". {mend} {resume}"
            ),
            err=True,
        )
        raise SystemExit(EXIT_DATABASE) from None
