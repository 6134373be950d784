"""``kbdesk add``, ``resume``, ``rebuild``, ``watch``, ``docs`` and ``doc …``.

Ctrl-C: the ingestion runs in a worker thread while the main thread waits. The first
Ctrl-C cancels it (batches in hand stop at their next step), waits up to
``GRACE_SECONDS`` for it to return, prints what finished and what the next run picks
up, and exits 130 — at once, through ``os._exit``, if a worker is still stuck (an HTTP
call, a PDF): ingestion is crash-safe by design (a document becomes ready in one
transaction; anything else is resumable), so leaving mid-call loses nothing. A second
Ctrl-C exits at once. PDF child processes are killed on the way out (and die with
kbdesk anyway, see :mod:`kbdesk.ingest.pdf_worker`).
"""

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

from kbdesk.cli.output import human_bytes, plain, print_json, print_json_line, stderr, stdout, table
from kbdesk.cli.progress import IngestProgress, Ledger
from kbdesk.cli.state import CliState
from kbdesk.ingest.events import IngestEvent
from kbdesk.ingest.pdf_worker import kill_pdf_workers
from kbdesk.ingest.pipeline import IngestReport
from kbdesk.textsafe import inert_line

EXIT_SOME_FAILED = 3
EXIT_DATABASE = 4  # the database could not be written (a full disk, an I/O error): what finished is kept
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a Ctrl-C
GRACE_SECONDS = 1.5  # after Ctrl-C, how long the run may take to stop before we leave anyway
NAMES_SHOWN = 5  # per list in the interrupted summary

T = TypeVar("T")


def _show_progress(as_json: bool, quiet: bool) -> bool:
    return not as_json and not quiet and sys.stderr.isatty()


def _summary(
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


def _run_interruptibly(
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


def _ingest(ingestor: Any, progress: IngestProgress, work: Callable[[], T], next_step: str, as_json: bool) -> T:
    def cancel() -> None:
        progress.stop()
        click.echo("Stopping… (Ctrl-C again quits at once)", err=True)
        ingestor.cancel()

    def stopped(report: Any) -> None:
        report = report[1] if isinstance(report, tuple) else report  # rebuild returns (counts, report)
        _interrupted(progress.ledger, report, next_step, as_json)

    return _run_interruptibly(work, cancel=cancel, stopped=stopped)


def _q(text: str) -> str:
    return inert_line(shlex.quote(text))


@contextlib.contextmanager
def _database_stops(progress: Callable[[], tuple[int, int]], resume: str) -> Iterator[None]:
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


# ── commands ────────────────────────────────────────────────────────────────────────


@click.command("add")
@click.argument("kb")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-i", "--include", multiple=True, metavar="GLOB", help="Only files matching GLOB (repeatable).")
@click.option("-x", "--exclude", multiple=True, metavar="GLOB", help="Skip files matching GLOB (repeatable).")
@click.option("--hidden", is_flag=True, help="Also take hidden files and folders.")
@click.option("--no-ignore", is_flag=True, help="Also take the files .gitignore and .ignore files name.")
@click.option("--sync", is_flag=True, help="Remove documents whose files are gone from the folders given.")
@click.option("--retry-failed", is_flag=True, help="Also try files that failed before and have not changed since.")
@click.option(
    "--depth",
    type=click.IntRange(0, 20),
    default=0,
    show_default=True,
    help="URLs: follow links on the same site this many steps (under the URL's folder).",
)
@click.option(
    "--max-pages", type=click.IntRange(1), default=500, show_default=True, help="URLs: at most this many pages per run."
)
@click.option(
    "--checksum",
    is_flag=True,
    help="Compare every file's contents, not only its size and modification time "
    "(finds edits whose mtime was put back, e.g. by rsync -t or touch -r; reads every file).",
)
@click.option("-w", "--workers", type=click.IntRange(1, 32), help="Documents processed at once (default 3).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def add_command(
    state: CliState,
    kb: str,
    paths: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    hidden: bool,
    no_ignore: bool,
    sync: bool,
    retry_failed: bool,
    depth: int,
    max_pages: int,
    checksum: bool,
    workers: int | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Add files, folders (recursively) and web pages (URLs) to KB; unchanged ones are skipped.

    A URL is fetched (robots.txt honoured; a sitemap.xml adds its pages) and each page
    is known by its URL; --depth follows its links on the same site, --include and
    --exclude then match whole URLs. Adding it again asks the site only for what
    changed; with --sync a page that is gone (404, 410) is removed.

    In folders, files named in .gitignore/.ignore files are left out (--no-ignore
    takes them), and so are lock files, minified bundles and vendored folders
    (node_modules, vendor), each listed with its reason.

    A file that failed for a reason of its own (broken, binary, empty, too big) is
    not tried again until it changes, unless --retry-failed. Files another kbdesk run
    is indexing are left to it, and this run waits for them.

    Exits 3 when some documents failed (each is listed with its reason, on stderr)
    or a path does not exist (the others are still added); 4 when the database could
    not be written (a full disk, a disk error: one line says what finished, which is
    kept). Ctrl-C stops within a moment, says what finished, and exits 130; the next
    add (or resume) finishes the rest.
    """
    from kbdesk.web.urls import is_url

    desk = state.desk()
    urls = [p for p in paths if is_url(p)]
    files = [p for p in paths if not is_url(p)]
    missing = [p for p in files if not os.path.exists(os.path.expanduser(p))]
    for path in missing:
        click.echo(f"Error: no such file or folder: {inert_line(path)}", err=True)
    next_step = (
        f"Next: `kbdesk resume {_q(kb)}` finishes the documents left; the same `kbdesk add` "
        f"again does too, and also takes files not reached yet."
    )
    again = "run the same `kbdesk add` again: it takes up the rest."
    with IngestProgress(_show_progress(as_json, quiet)) as progress, _database_stops(progress.counts, again):
        ingestor = desk.ingestor(on_event=progress, workers=workers)

        def work() -> IngestReport:
            return ingestor.add(
                kb,
                [*files, *urls],
                include=include,
                exclude=exclude,
                hidden=hidden,
                sync=sync,
                retry_failed=retry_failed,
                checksum=checksum,
                no_ignore=no_ignore,
                depth=depth,
                max_pages=max_pages,
            )

        report = _ingest(ingestor, progress, work, next_step, as_json)
    _summary(report, as_json, missing=missing)


@click.command("resume")
@click.argument("kb", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def resume_command(state: CliState, kb: str | None, as_json: bool) -> None:
    """Finish documents that a crash or kill left half-way (all KBs, or KB)."""
    next_step = f"Next: `kbdesk resume{' ' + _q(kb) if kb else ''}` again finishes the documents left."
    again = f"run `kbdesk resume{' ' + _q(kb) if kb else ''}` again."
    with IngestProgress(_show_progress(as_json, False)) as progress, _database_stops(progress.counts, again):
        ingestor = state.desk().ingestor(on_event=progress)
        report = _ingest(ingestor, progress, lambda: ingestor.resume(kb), next_step, as_json)
    _summary(report, as_json)


@click.command("rebuild")
@click.argument("kb")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def rebuild_command(state: CliState, kb: str, as_json: bool) -> None:
    """Re-chunk and re-embed every document of KB that has stored text."""
    next_step = (
        f"Next: `kbdesk resume {_q(kb)}` finishes the documents left half-way; "
        f"`kbdesk rebuild {_q(kb)}` again rebuilds every document."
    )
    again = f"run `kbdesk resume {_q(kb)}` to finish the documents left."
    with IngestProgress(_show_progress(as_json, False)) as progress, _database_stops(progress.counts, again):
        ingestor = state.desk().ingestor(on_event=progress)
        counts, report = _ingest(ingestor, progress, lambda: ingestor.rebuild(kb), next_step, as_json)
    if not as_json:
        stdout().print(
            Text(
                f"{counts['total_docs']} documents: {counts['rebuilding']} rebuilt, "
                f"{counts['skipped']} skipped (no stored text); {report.embedded_chunks} chunks "
                f"embedded ({report.cached_chunks} from cache)"
            )
        )
    _summary(report, as_json, {"message": "rebuild finished", **counts}, headline=False)


@click.command("watch")
@click.argument("kb")
@click.argument("folder")
@click.option("-i", "--include", multiple=True, metavar="GLOB", help="Only files matching GLOB (repeatable).")
@click.option("-x", "--exclude", multiple=True, metavar="GLOB", help="Skip files matching GLOB (repeatable).")
@click.option("--hidden", is_flag=True, help="Also take hidden files and folders.")
@click.option("--no-ignore", is_flag=True, help="Also take the files .gitignore and .ignore files name.")
@click.option(
    "--poll",
    is_flag=True,
    help="Look for changes every --interval seconds instead of using OS file events "
    "(network drives; used anyway when file events are unavailable).",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.2),
    help="Seconds between looks when polling (default 2), or between re-checks of a URL (default 300).",
)
@click.option("--depth", type=click.IntRange(0, 20), default=0, help="A URL: follow links this many steps.")
@click.option("--checksum", is_flag=True, help="Each pass compares the files' contents, not only their size and mtime.")
@click.option("--passes", type=click.IntRange(1), hidden=True, help="Stop after this many passes (tests).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line for each event, for scripts.")
@click.pass_obj
def watch_command(
    state: CliState,
    kb: str,
    folder: str,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    hidden: bool,
    no_ignore: bool,
    poll: bool,
    interval: float | None,
    depth: int,
    checksum: bool,
    passes: int | None,
    as_json: bool,
) -> None:
    """Keep KB in step with FOLDER (or a URL's pages) until Ctrl-C: new, changed and deleted files.

    A URL is re-checked every --interval seconds (default 300) with conditional
    requests; a page gone (404, 410) is removed.

    Reacts to OS file events (one pass per burst of changes, after a first pass at
    start); a file that failed is reported once and tried again when it changes.
    With --json every event is a line {"at", "kind", "name", "detail"} (kinds: watching,
    fallback, added, updated, resumed, removed, failed, pass, stopped). Exits 4 when the
    database could not be written (a full disk, a disk error), saying so in one line.
    """
    from kbdesk.ingest.watch import WatchEvent, watch_folder
    from kbdesk.web.urls import is_url

    if not is_url(folder) and not os.path.isdir(folder):
        raise click.BadParameter(f"no such folder: {inert_line(folder)}", param_hint="'FOLDER'")
    desk = state.desk()
    name = desk.kb(kb).name
    finished: set[str] = set()  # documents made ready by this watch (said if the database stops it)

    def count(event: IngestEvent) -> None:
        if event.kind == "ready" and event.doc_id:
            finished.add(event.doc_id)

    ingestor = desk.ingestor(on_event=count)
    out = stdout()
    stop = threading.Event()
    if not as_json:
        out.print(Text(f"Watching {inert_line(folder)} for '{inert_line(name)}'; Ctrl-C stops."))

    def show(event: WatchEvent) -> None:
        if as_json:
            print_json_line(
                {"at": event.at.isoformat(), "kind": event.kind, "name": event.name, "detail": event.detail}
            )
            return
        when = event.at.strftime("%H:%M:%S")
        if event.kind in ("added", "updated", "resumed", "removed"):
            out.print(Text(f"{when} {event.kind} {inert_line(event.name)}"))
        elif event.kind == "failed":
            out.print(Text(f"{when} failed {inert_line(event.name)}: {inert_line(event.detail)}", style="red"))
        elif event.kind == "fallback":
            click.echo(f"{when} {inert_line(event.detail)}", err=True)

    def cancel() -> None:
        stop.set()
        ingestor.cancel()

    def stopped(_passes: Any) -> None:
        if as_json:
            show(WatchEvent("stopped"))
        else:
            out.print(Text("Stopped."))

    again = f"start `kbdesk watch {_q(kb)} {_q(folder)}` again: its first pass takes up the rest."
    if is_url(folder):
        from kbdesk.web.watch import watch_url

        def work() -> Any:
            return watch_url(
                ingestor,
                kb,
                folder,
                stop=stop,
                on_event=show,
                depth=depth,
                include=include,
                exclude=exclude,
                interval=interval or 300.0,
                max_passes=passes,
            )

    else:

        def work() -> Any:
            return watch_folder(
                ingestor,
                kb,
                folder,
                stop=stop,
                on_event=show,
                include=include,
                exclude=exclude,
                hidden=hidden,
                poll=poll,
                poll_interval=interval or 2.0,
                max_passes=passes,
                checksum=checksum,
                no_ignore=no_ignore,
            )

    with _database_stops(lambda: (len(finished), 0), again):
        _run_interruptibly(work, cancel=cancel, stopped=stopped, exit_code=0)


@click.command("docs")
@click.argument("kb")
@click.option(
    "--status",
    type=click.Choice(["pending", "extracting", "chunking", "embedding", "ready", "error"]),
    help="Only documents in this status.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def docs_command(state: CliState, kb: str, status: str | None, as_json: bool) -> None:
    """List the documents of KB with status, chunks, size and error."""
    desk = state.desk()
    found = desk.kb(kb)
    docs = desk.documents(found.id, status)
    if as_json:
        print_json({"data": [d.to_dict() for d in docs], "total": len(docs)})
        return
    if not docs:
        stdout().print(plain(f"No documents in '{found.name}'. Add some: kbdesk add '{found.name}' PATH"))
        return
    t = table("filename", "id", "status", "chunks", "size", "error")
    for d in docs:
        t.add_row(
            plain(d.filename), d.id[:8], _status(d), str(d.chunk_count), human_bytes(d.size_bytes), plain(d.error or "")
        )
    stdout().print(t)


@click.group("doc")
def doc_group() -> None:
    """One document: its status, or removing it."""


@doc_group.command("status")
@click.argument("kb")
@click.argument("doc")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def doc_status(state: CliState, kb: str, doc: str, as_json: bool) -> None:
    """Status of DOC (id, id prefix or filename) in KB: id, status, chunk count, error."""
    desk = state.desk()
    found = desk.document(kb, doc)
    view = {
        "id": found.id,
        "status": found.status,
        "chunk_count": found.chunk_count,
        "error": found.error,
        "filename": found.filename,
    }
    if as_json:
        print_json(view)
    else:
        line = f"{found.filename}: {_status(found)}, {found.chunk_count} chunks"
        stdout().print(plain(line + (f" — {found.error}" if found.error else "")))


def _status(doc: Any) -> str:
    """A document's status, saying when search still serves an older version."""
    if doc.stale:
        return f"{doc.status} (search has the version of {(doc.indexed_at or '')[:16].replace('T', ' ')})"
    return doc.status


@doc_group.command("rm")
@click.argument("kb")
@click.argument("doc")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def doc_rm(state: CliState, kb: str, doc: str, as_json: bool) -> None:
    """Delete DOC from KB with its chunks, vectors and stored file."""
    desk = state.desk()
    found = desk.document(kb, doc)
    desk.delete_document(found.id)
    if as_json:
        print_json({"deleted": True, "id": found.id, "filename": found.filename})
    else:
        stdout().print(plain(f"Deleted {found.filename}"))
