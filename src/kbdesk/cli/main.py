"""``kbdesk``: the entry point and the shared options of every command."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from kbdesk import __version__
from kbdesk.cli.commands import CLI_HELP, COMMANDS, DB_HELP, HOME_HELP
from kbdesk.cli.state import CliState
from kbdesk.errors import KbdeskError
from kbdesk.textsafe import inert, inert_line


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
            # made inert in place, so a usage error keeps its context and usage lines
            exc.message = inert(exc.message)  # type: ignore[misc]  # click types it Final
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


def load_command(name: str) -> click.Command:
    """The command ``name``, its module imported now."""
    import importlib

    module, _, attr = COMMANDS[name][0].partition(":")
    command = getattr(importlib.import_module(module), attr)
    assert isinstance(command, click.Command)
    return command


class LazyGroup(KbdeskGroup):
    """The top-level group: commands from :data:`COMMANDS`, imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load_command(cmd_name) if cmd_name in COMMANDS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help`` from the table, without importing any command."""
        from kbdesk.cli.help_page import command_rows

        with formatter.section("Commands"):
            formatter.write_dl(command_rows(formatter.width))


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    help=CLI_HELP,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option("--db", metavar="PATH", envvar="KBDESK_DB", help=DB_HELP)
@click.option("--home", metavar="DIR", envvar="KBDESK_HOME", help=HOME_HELP)
@click.version_option(__version__, prog_name="kbdesk")
@click.pass_context
def cli(ctx: click.Context, db: str | None, home: str | None) -> None:
    # the help is CLI_HELP (kbdesk.cli.commands), which `kbdesk --help` prints without click
    state = CliState(db, home)
    ctx.obj = state
    ctx.call_on_close(state.close)
    if ctx.invoked_subcommand is None:
        from kbdesk.tui.app import run  # Textual is imported only here, never by the CLI itself

        run(db, home)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="kbdesk")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
