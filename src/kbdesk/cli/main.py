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


# Every command: where it lives and its one-line help. A command's module is imported only
# when it runs (or its own --help is asked for), so `kbdesk --version`, `--help` and shell
# completion start in a blink; tests/test_cli_startup.py checks this table against the
# commands themselves.
COMMANDS: dict[str, tuple[str, str]] = {
    "add": ("kbdesk.cli.ingest:add_command", "Add files and folders (recursively) to KB; unchanged files are skipped."),
    "ask": ("kbdesk.cli.chat:ask_command", "Ask QUESTION; the answer streams to stdout, then its sources."),
    "chat": (
        "kbdesk.cli.chat:chat_command",
        "Chat in the terminal: a new conversation, the latest (--continue) or CONVERSATION (id, prefix or title).",
    ),
    "conversations": (
        "kbdesk.cli.conversations:conversations_group",
        "Saved conversations: list, show, rename, delete, KB toggles, retrieval, filters, sources.",
    ),
    "conv": ("kbdesk.cli.conversations:conv_alias", ""),  # hidden: short for conversations
    "doc": ("kbdesk.cli.ingest:doc_group", "One document: its status, or removing it."),
    "docs": ("kbdesk.cli.ingest:docs_command", "List the documents of KB with status, chunks, size and error."),
    "doctor": (
        "kbdesk.cli.doctor:doctor_command",
        "Report paths, SQLite, the vector backend in use and why, FTS5, and whether the database file is "
        "sound (exit 1 when something is wrong).",
    ),
    "export": (
        "kbdesk.cli.transfer:export_command",
        "Copy KB (documents, text, chunks, vectors, files) to another store.",
    ),
    "import": (
        "kbdesk.cli.transfer:import_command",
        "Copy KB from another store into this one (the same rules as export).",
    ),
    "kb": ("kbdesk.cli.kb:kb_group", "Manage knowledge bases."),
    "mcp": (
        "kbdesk.cli.serve:mcp_command",
        "Run an MCP server over stdio (for editors, agents and desktop assistants).",
    ),
    "model": (
        "kbdesk.cli.model:model_group",
        "Chat and embedding models: what the providers offer, and which model each role uses ([roles.chat] "
        "and [roles.embedding] in config.toml; Settings → Model roles in the TUI).",
    ),
    "note": (
        "kbdesk.cli.chat_manage:note_group",
        "Short notes, searchable by keyword and by meaning (note_search in chat).",
    ),
    "persona": (
        "kbdesk.cli.chat_manage:persona_group",
        "Personas: a system prompt, a chat model and bound KBs (with auto-search).",
    ),
    "pg": ("kbdesk.cli.pg:pg_group", "Team servers: prepare a PostgreSQL database and make logins kbdesk users."),
    "project": ("kbdesk.cli.chat_manage:project_group", "Projects: group conversations and bind KBs to all of them."),
    "provider": (
        "kbdesk.cli.providers:provider_group",
        "Embedding and chat providers (any OpenAI-compatible server, or in-process embeddings).",
    ),
    "remote": (
        "kbdesk.cli.remotes:remote_group",
        "Team servers (kbdesk serve) whose knowledge bases are searched beside the local ones, read-only.",
    ),
    "rebuild": (
        "kbdesk.cli.ingest:rebuild_command",
        "Re-chunk and re-embed every document of KB that has stored text.",
    ),
    "resume": (
        "kbdesk.cli.ingest:resume_command",
        "Finish documents that a crash or kill left half-way (all KBs, or KB).",
    ),
    "search": (
        "kbdesk.cli.search:search_command",
        "Search one or more knowledge bases (KB... names or ids) for QUERY.",
    ),
    "team": (
        "kbdesk.cli.teams:team_group",
        "Your teams on a team server: their knowledge bases, and (for their admins) their members.",
    ),
    "serve": (
        "kbdesk.cli.serve:serve_command",
        "Serve the knowledge bases over HTTP under /api (OpenAPI at /api/docs).",
    ),
    "token": (
        "kbdesk.cli.tokens:token_group",
        "Tokens for kbdesk serve: each acts as one user, with its permissions.",
    ),
    "watch": (
        "kbdesk.cli.ingest:watch_command",
        "Keep KB in step with FOLDER until Ctrl-C: new, changed and deleted files.",
    ),
}
HIDDEN = {"conv"}


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
        shown = [(name, help_text) for name, (_, help_text) in sorted(COMMANDS.items()) if name not in HIDDEN]
        limit = formatter.width - 6 - max(len(name) for name, _ in shown)  # as click cuts them
        with formatter.section("Commands"):
            # a stand-in command cuts each help the way click's own command list does
            formatter.write_dl(
                [(name, click.Command(name, help=text).get_short_help_str(limit)) for name, text in shown]
            )


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
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


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="kbdesk")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
