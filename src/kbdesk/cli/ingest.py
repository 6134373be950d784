"""``kbdesk add``, ``resume``, ``rebuild``, ``watch``, ``docs`` and ``doc …``."""

from __future__ import annotations

import sys
import time

import click
from rich.text import Text

from kbdesk.cli.output import human_bytes, plain, print_json, stdout, table
from kbdesk.cli.progress import IngestProgress
from kbdesk.ingest.pipeline import IngestReport

EXIT_SOME_FAILED = 3


def _show_progress(as_json: bool, quiet: bool) -> bool:
    return not as_json and not quiet and sys.stderr.isatty()


def _summary(report: IngestReport, as_json: bool, extra: dict | None = None, headline: bool = True) -> None:
    if as_json:
        print_json({**report.to_dict(), **(extra or {})})
    else:
        out = stdout()
        parts = [f"{len(report.added)} added", f"{len(report.updated)} updated",
                 f"{len(report.unchanged)} unchanged"]
        if report.resumed:
            parts.append(f"{len(report.resumed)} resumed")
        if report.removed:
            parts.append(f"{len(report.removed)} removed")
        parts.append(f"{len(report.failed)} failed")
        if headline:
            out.print(Text(", ".join(parts) + f"; {report.embedded_chunks} chunks embedded "
                           f"({report.cached_chunks} from cache, {report.embedding_calls} provider calls)"))
        for name, reason in report.failed:
            out.print(Text(f"  failed  {name}: {reason}", style="red"))
        for path, reason in report.skipped:
            out.print(Text(f"  skipped {path}: {reason}", style="dim"))
    if report.failed:
        raise SystemExit(EXIT_SOME_FAILED)


@click.command("add")
@click.argument("kb")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-i", "--include", multiple=True, metavar="GLOB", help="Only files matching GLOB (repeatable).")
@click.option("-x", "--exclude", multiple=True, metavar="GLOB", help="Skip files matching GLOB (repeatable).")
@click.option("--hidden", is_flag=True, help="Also take hidden files and folders.")
@click.option("--sync", is_flag=True, help="Remove documents whose files are gone from the folders given.")
@click.option("-w", "--workers", type=click.IntRange(1, 32), help="Documents processed at once (default 3).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def add_command(state, kb, paths, include, exclude, hidden, sync, workers, quiet, as_json) -> None:
    """Add files and folders (recursively) to KB; unchanged files are skipped.

    Exits 3 when some documents failed (each is listed with its reason).
    """
    desk = state.desk()
    with IngestProgress(_show_progress(as_json, quiet)) as progress:
        report = desk.add(kb, list(paths), include=include, exclude=exclude, hidden=hidden, sync=sync,
                          workers=workers, on_event=progress)
    _summary(report, as_json)


@click.command("resume")
@click.argument("kb", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def resume_command(state, kb, as_json) -> None:
    """Finish documents that a crash or kill left half-way (all KBs, or KB)."""
    with IngestProgress(_show_progress(as_json, False)) as progress:
        report = state.desk().ingestor(on_event=progress).resume(kb)
    _summary(report, as_json)


@click.command("rebuild")
@click.argument("kb")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def rebuild_command(state, kb, as_json) -> None:
    """Re-chunk and re-embed every document of KB that has stored text."""
    with IngestProgress(_show_progress(as_json, False)) as progress:
        counts, report = state.desk().ingestor(on_event=progress).rebuild(kb)
    if not as_json:
        stdout().print(Text(f"{counts['total_docs']} documents: {counts['rebuilding']} rebuilt, "
                            f"{counts['skipped']} skipped (no stored text); {report.embedded_chunks} chunks "
                            f"embedded ({report.cached_chunks} from cache)"))
    _summary(report, as_json, {"message": "rebuild finished", **counts}, headline=False)


@click.command("watch")
@click.argument("kb")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("-i", "--include", multiple=True, metavar="GLOB", help="Only files matching GLOB (repeatable).")
@click.option("-x", "--exclude", multiple=True, metavar="GLOB", help="Skip files matching GLOB (repeatable).")
@click.option("--interval", type=click.FloatRange(0.2), default=2.0, show_default=True,
              help="Seconds between scans.")
@click.option("--passes", type=click.IntRange(1), hidden=True, help="Stop after this many scans (tests).")
@click.pass_obj
def watch_command(state, kb, folder, include, exclude, interval, passes) -> None:
    """Keep KB in step with FOLDER until interrupted (new, changed and deleted files)."""
    desk = state.desk()
    ingestor = desk.ingestor()
    out = stdout()
    out.print(Text(f"Watching {folder} for '{desk.kb(kb).name}' every {interval:g} s; Ctrl-C stops."))
    count = 0
    try:
        while True:
            report = ingestor.add(kb, [folder], include=include, exclude=exclude, sync=True)
            for label, names in (("added", report.added), ("updated", report.updated),
                                 ("removed", report.removed)):
                for name in names:
                    out.print(Text(f"{time.strftime('%H:%M:%S')} {label} {name}"))
            for name, reason in report.failed:
                out.print(Text(f"{time.strftime('%H:%M:%S')} failed {name}: {reason}", style="red"))
            count += 1
            if passes and count >= passes:
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        out.print(Text("Stopped."))


@click.command("docs")
@click.argument("kb")
@click.option("--status", type=click.Choice(["pending", "extracting", "chunking", "embedding", "ready", "error"]),
              help="Only documents in this status.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def docs_command(state, kb, status, as_json) -> None:
    """List the documents of KB with status, chunks, size and error."""
    desk = state.desk()
    found = desk.kb(kb)
    docs = desk.store.list_documents(found.id, status)
    if as_json:
        print_json({"data": [d.to_dict() for d in docs], "total": len(docs)})
        return
    if not docs:
        stdout().print(plain(f"No documents in '{found.name}'. Add some: kbdesk add '{found.name}' PATH"))
        return
    t = table("filename", "id", "status", "chunks", "size", "error")
    for d in docs:
        t.add_row(plain(d.filename), d.id[:8], d.status, str(d.chunk_count), human_bytes(d.size_bytes),
                  plain(d.error or ""))
    stdout().print(t)


@click.group("doc")
def doc_group() -> None:
    """One document: its status, or removing it."""


@doc_group.command("status")
@click.argument("kb")
@click.argument("doc")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def doc_status(state, kb, doc, as_json) -> None:
    """Status of DOC (id, id prefix or filename) in KB: the seed's polling view."""
    desk = state.desk()
    found = desk.store.find_document(desk.kb(kb).id, doc)
    view = {"id": found.id, "status": found.status, "chunk_count": found.chunk_count,
            "error": found.error, "filename": found.filename}
    if as_json:
        print_json(view)
    else:
        line = f"{found.filename}: {found.status}, {found.chunk_count} chunks"
        stdout().print(plain(line + (f" — {found.error}" if found.error else "")))


@doc_group.command("rm")
@click.argument("kb")
@click.argument("doc")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def doc_rm(state, kb, doc, as_json) -> None:
    """Delete DOC from KB with its chunks, vectors and stored file."""
    desk = state.desk()
    found = desk.store.find_document(desk.kb(kb).id, doc)
    desk.delete_document(found.id)
    if as_json:
        print_json({"deleted": True, "id": found.id, "filename": found.filename})
    else:
        stdout().print(plain(f"Deleted {found.filename}"))
