"""``kbdesk export KB --to …`` and ``kbdesk import --from … KB``."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kbdesk.cli.output import plain, print_json, stdout
from kbdesk.cli.state import CliState
from kbdesk.transfer.report import TransferEvent


class TransferProgress:
    """One bar of chunks copied (documents in its label), on stderr."""

    def __init__(self, enabled: bool) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[docs]}", style="dim"),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr, highlight=False),
            disable=not enabled,
        )
        self.task: Any = None

    def __enter__(self) -> TransferProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def __call__(self, event: TransferEvent) -> None:
        docs = f"{event.docs_done}/{event.docs_total} documents"
        if event.kind == "plan":
            self.task = self.progress.add_task(f"copying '{event.kb}'", total=event.chunks_total or None, docs=docs)
        elif self.task is not None:
            self.progress.update(self.task, completed=event.chunks_done, docs=docs)


def _options(func: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--scope",
                type=click.Choice(["personal", "team", "global"]),
                help="Scope of the KB when it is created on the target (default: personal).",
            ),
            click.option("--team", "team_id", metavar="TEAM", help="Team (id or name) of a --scope team KB."),
            click.option("--prune", is_flag=True, help="Remove target documents the source does not have."),
            click.option(
                "--batch-size",
                type=click.IntRange(1, 10_000),
                default=200,
                show_default=True,
                help="Documents per batch (each batch is one transaction).",
            ),
            click.option("-q", "--quiet", is_flag=True, help="No progress bar."),
            click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
        ]
    ):
        func = option(func)
    return func


def _run(action: Any, as_json: bool, quiet: bool, **options: Any) -> None:
    show = not as_json and not quiet and sys.stderr.isatty()
    with TransferProgress(show) as progress:
        report = action(on_event=progress, **options)
    if as_json:
        print_json({**report.to_dict(), "summary": report.summary()})
        return
    out = stdout()
    out.print(plain(report.summary()))
    if report.seconds and report.copied_chunks:
        out.print(
            plain(
                f"{report.copied_chunks / report.seconds:,.0f} chunks/s over {report.batches} batches, "
                f"{report.copied_files} original files"
            )
        )
    for item in report.skipped:
        out.print(plain(f"  skipped {item['document']}: {item['reason']}"), style="dim")
    if report.extra_on_target and not report.pruned_documents:
        out.print(
            plain(
                f"  {report.extra_on_target} documents on the target are not in the source (kept; --prune removes them)"
            ),
            style="dim",
        )


@click.command("export")
@click.argument("kb")
@click.option(
    "--to",
    "to",
    required=True,
    metavar="URI_OR_PATH",
    help="Target: a postgresql:// URI or a kbdesk SQLite file (created if missing).",
)
@_options
@click.pass_obj
def export_command(
    state: CliState,
    kb: str,
    to: str,
    scope: str | None,
    team_id: str | None,
    prune: bool,
    batch_size: int,
    quiet: bool,
    as_json: bool,
) -> None:
    """Copy KB (documents, text, chunks, vectors, files) to another store.

    Running it again copies only what changed; an interrupted export is finished by
    running it again. A target KB with another embedding model is refused.
    """
    from kbdesk.transfer import export_kb

    desk = state.desk()
    _run(
        lambda **kw: export_kb(desk, kb, to, **kw),
        as_json,
        quiet,
        scope=scope,
        team_id=team_id,
        prune=prune,
        batch_docs=batch_size,
    )


@click.command("import")
@click.option(
    "--from",
    "source",
    required=True,
    metavar="URI_OR_PATH",
    help="Source: a postgresql:// URI or a kbdesk SQLite file.",
)
@click.argument("kb")
@_options
@click.pass_obj
def import_command(
    state: CliState,
    source: str,
    kb: str,
    scope: str | None,
    team_id: str | None,
    prune: bool,
    batch_size: int,
    quiet: bool,
    as_json: bool,
) -> None:
    """Copy KB from another store into this one (the same rules as export)."""
    from kbdesk.transfer import import_kb

    desk = state.desk()
    _run(
        lambda **kw: import_kb(desk, source, kb, **kw),
        as_json,
        quiet,
        scope=scope,
        team_id=team_id,
        prune=prune,
        batch_docs=batch_size,
    )
