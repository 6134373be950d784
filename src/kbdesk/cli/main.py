"""``kbdesk``: the entry point and the shared options of every command."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from kbdesk import __version__
from kbdesk.errors import KbdeskError
from kbdesk.textsafe import inert, inert_line


class CliState:
    """Holds the global options; opens the desk on first use, closes it at exit."""

    def __init__(self, db: str | None, home: str | None) -> None:
        self.db = db
        self.home = home
        self._desk: Any = None

    def desk(self) -> Any:
        if self._desk is None:
            from kbdesk.desk import open_desk

            self._desk = open_desk(self.db, home=self.home)
        return self._desk

    def close(self) -> None:
        if self._desk is not None:
            self._desk.close()
            self._desk = None


class KbdeskGroup(click.Group):
    """Turns every kbdesk error into one line on stderr and a non-zero exit.

    Messages often quote file names and document text: control characters in them are
    shown as escapes (:func:`kbdesk.textsafe.inert_line`), never sent to the terminal.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KbdeskError as exc:
            raise click.ClickException(inert_line(str(exc))) from None
        except click.ClickException as exc:
            exc.message = inert(exc.message)  # usage errors may span lines: those stay
            raise
        except (click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:  # Ctrl-C outside an ingestion (those say more): 130, like a shell
            click.echo("Interrupted.", err=True)
            raise SystemExit(130) from None
        except Exception as exc:
            if os.environ.get("KBDESK_DEBUG"):
                raise
            raise click.ClickException(
                inert_line(f"internal error: {type(exc).__name__}: {exc} (set KBDESK_DEBUG=1 for the traceback)")
            ) from None


@click.group(cls=KbdeskGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    metavar="PATH",
    envvar="KBDESK_DB",
    help="Database file, or a postgresql:// URI (default: kbdesk.db in the data directory; env KBDESK_DB).",
)
@click.option(
    "--home", metavar="DIR", envvar="KBDESK_HOME", help="Put config, data and cache under DIR (env KBDESK_HOME)."
)
@click.version_option(__version__, prog_name="kbdesk")
@click.pass_context
def cli(ctx: click.Context, db: str | None, home: str | None) -> None:
    """kbdesk: knowledge bases in one SQLite file, searched by meaning and by keyword.

    Without a command, opens the terminal UI.
    """
    state = CliState(db, home)
    ctx.obj = state
    ctx.call_on_close(state.close)
    if ctx.invoked_subcommand is None:
        from kbdesk.tui.app import run  # Textual is imported only here, never by the CLI itself

        run(db, home)


def _register() -> None:
    from kbdesk.cli import doctor, ingest, kb, providers, search

    cli.add_command(kb.kb_group)
    cli.add_command(search.search_command)
    cli.add_command(doctor.doctor_command)
    for command in (
        ingest.add_command,
        ingest.resume_command,
        ingest.rebuild_command,
        ingest.watch_command,
        ingest.docs_command,
        ingest.doc_group,
        providers.provider_group,
    ):
        cli.add_command(command)
    from kbdesk.cli import chat, chat_manage, conversations, model

    for command in (
        chat.ask_command,
        chat.chat_command,
        conversations.conversations_group,
        conversations.conv_alias,
        chat_manage.note_group,
        chat_manage.persona_group,
        chat_manage.project_group,
        model.model_group,
    ):
        cli.add_command(command)

    from kbdesk.cli import pg, teams, transfer

    cli.add_command(transfer.export_command)
    cli.add_command(transfer.import_command)
    cli.add_command(pg.pg_group)
    cli.add_command(teams.team_group)

    from kbdesk.cli import serve, tokens

    for command in (serve.serve_command, serve.mcp_command, tokens.token_group):
        cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="kbdesk")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
