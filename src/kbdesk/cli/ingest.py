"""``kbdesk add``, ``resume``, ``rebuild`` and ``watch``: their arguments and what each
prints. How they run — exit codes, Ctrl-C, a database that stops a run — is
:mod:`kbdesk.cli.ingest_run`; ``docs`` and ``doc …`` are :mod:`kbdesk.cli.documents`.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import click
from rich.text import Text

from kbdesk.cli.ingest_run import (
    database_stops,
    ingest,
    quoted,
    run_interruptibly,
    show_progress,
    summary,
)
from kbdesk.cli.output import print_json_line, stdout
from kbdesk.cli.progress import IngestProgress
from kbdesk.cli.state import CliState
from kbdesk.ingest.events import IngestEvent
from kbdesk.ingest.pipeline import IngestReport
from kbdesk.textsafe import inert_line

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
        f"Next: `kbdesk resume {quoted(kb)}` finishes the documents left; the same `kbdesk add` "
        f"again does too, and also takes files not reached yet."
    )
    again = "run the same `kbdesk add` again: it takes up the rest."
    with IngestProgress(show_progress(as_json, quiet)) as progress, database_stops(progress.counts, again):
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

        report = ingest(ingestor, progress, work, next_step, as_json)
    summary(report, as_json, missing=missing)


@click.command("resume")
@click.argument("kb", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def resume_command(state: CliState, kb: str | None, as_json: bool) -> None:
    """Finish documents that a crash or kill left half-way (all KBs, or KB)."""
    next_step = f"Next: `kbdesk resume{' ' + quoted(kb) if kb else ''}` again finishes the documents left."
    again = f"run `kbdesk resume{' ' + quoted(kb) if kb else ''}` again."
    with IngestProgress(show_progress(as_json, False)) as progress, database_stops(progress.counts, again):
        ingestor = state.desk().ingestor(on_event=progress)
        report = ingest(ingestor, progress, lambda: ingestor.resume(kb), next_step, as_json)
    summary(report, as_json)


@click.command("rebuild")
@click.argument("kb")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def rebuild_command(state: CliState, kb: str, as_json: bool) -> None:
    """Re-chunk and re-embed every document of KB that has stored text."""
    next_step = (
        f"Next: `kbdesk resume {quoted(kb)}` finishes the documents left half-way; "
        f"`kbdesk rebuild {quoted(kb)}` again rebuilds every document."
    )
    again = f"run `kbdesk resume {quoted(kb)}` to finish the documents left."
    with IngestProgress(show_progress(as_json, False)) as progress, database_stops(progress.counts, again):
        ingestor = state.desk().ingestor(on_event=progress)
        counts, report = ingest(ingestor, progress, lambda: ingestor.rebuild(kb), next_step, as_json)
    if not as_json:
        stdout().print(
            Text(
                f"{counts['total_docs']} documents: {counts['rebuilding']} rebuilt, "
                f"{counts['skipped']} skipped (no stored text); {report.embedded_chunks} chunks "
                f"embedded ({report.cached_chunks} from cache)"
            )
        )
    summary(report, as_json, {"message": "rebuild finished", **counts}, headline=False)


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

    again = f"start `kbdesk watch {quoted(kb)} {quoted(folder)}` again: its first pass takes up the rest."
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

    with database_stops(lambda: (len(finished), 0), again):
        run_interruptibly(work, cancel=cancel, stopped=stopped, exit_code=0)
