"""``kbdesk ask`` (one question) and ``kbdesk chat`` (an interactive chat in the terminal).

Both run each turn in a worker thread (:mod:`kbdesk.cli.chat_turn`): Ctrl-C stops the
answer (the partial answer is saved as cancelled) instead of killing the process
mid-write. The interactive session itself lives in :mod:`kbdesk.cli.chat_repl`; saved
conversations are managed with ``kbdesk conversations`` (:mod:`kbdesk.cli.conversations`).
"""

from __future__ import annotations

from typing import Any

import click

from kbdesk.cli.chat_turn import RETRIEVAL_HELP, RETRIEVAL_POLICIES, TurnView, require_chat_model, run_turn
from kbdesk.cli.conversations import LEGACY, conversations_group
from kbdesk.cli.filter_options import pop_filters, with_filter_options
from kbdesk.cli.output import print_json
from kbdesk.cli.state import CliState

EXIT_INTERRUPTED = 130

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")

turn_options = [
    click.option(
        "--kb",
        "kbs",
        multiple=True,
        metavar="KB",
        help="Use exactly these KBs in the conversation (repeatable; default: your personal KBs).",
    ),
    click.option("--persona", metavar="NAME", help="Answer as this persona (its prompt, model and KBs)."),
    click.option("--project", metavar="NAME", help="Put the conversation in this project (its KBs apply)."),
    click.option(
        "--model",
        metavar="MODEL",
        help="Chat model (default: the persona's, else roles.chat; set it with 'kbdesk model set chat').",
    ),
    click.option("--provider", metavar="NAME", help="Provider of the chat model (default: roles.chat.provider)."),
    click.option(
        "--retrieval",
        type=click.Choice(RETRIEVAL_POLICIES),
        help=RETRIEVAL_HELP + " Default: the conversation's, persona's, else [chat] retrieval.",
    ),
    click.option(
        "--max-tokens",
        type=click.IntRange(1, 1_000_000),
        metavar="N",
        help="Longest answer in tokens (default: the persona's, else [chat] max_tokens).",
    ),
    click.option(
        "--max-rounds",
        type=click.IntRange(1, 20),
        default=5,
        show_default=True,
        help="Most rounds of tool calls before the answer.",
    ),
]


def with_options(options: list[Any]) -> Any:
    def wrap(fn: Any) -> Any:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return wrap


def turn_kwargs(
    *, model: str | None, provider: str | None, max_rounds: int, retrieval: str | None, max_tokens: int | None
) -> dict[str, Any]:
    """Keyword arguments of ``ChatService.ask`` for one turn (unset ones left to the engine)."""
    out: dict[str, Any] = {"model": model, "provider": provider, "max_rounds": max_rounds}
    if retrieval is not None:
        out["retrieval"] = retrieval
    if max_tokens is not None:
        out["max_tokens"] = max_tokens
    return out


@click.command("ask")
@click.argument("question")
@click.option("-c", "--conversation", metavar="ID", help="Continue this conversation (id, prefix or title).")
@with_options(turn_options)
@with_filter_options
@json_option
@click.pass_obj
def ask_command(
    state: CliState,
    question: str,
    conversation: str | None,
    kbs: tuple[str, ...],
    persona: str | None,
    project: str | None,
    model: str | None,
    provider: str | None,
    retrieval: str | None,
    max_tokens: int | None,
    max_rounds: int,
    as_json: bool,
    **flags: Any,
) -> None:
    """Ask QUESTION; the answer streams to stdout, then its sources. What was searched,
    tool calls and notes (an answer cut at the length limit, history left out to fit the
    model's context) go to stderr. A new conversation is saved unless --conversation
    continues one ('kbdesk conversations' lists them; 'kbdesk chat' chats interactively).
    The filters (--path, --type, --since, --tag, …) narrow this question's searches, over
    the conversation's own ('kbdesk conversations filter').

    Exit status: 0 answered, 1 failed, 130 stopped with Ctrl-C."""
    filters = pop_filters(flags)
    chat = state.desk().chat()
    require_chat_model(chat, model=model, persona=persona, conversation=conversation)
    view = TurnView(quiet=as_json)
    answer = run_turn(
        chat,
        conversation,
        question,
        view,
        on_interrupt=view.stopping,
        persona=persona,
        project=project,
        kbs=list(kbs) or None,
        filters=filters or None,
        **turn_kwargs(
            model=model, provider=provider, max_rounds=max_rounds, retrieval=retrieval, max_tokens=max_tokens
        ),
    )
    if as_json:
        print_json(answer.to_dict())
    if answer.status == "cancelled":
        raise SystemExit(EXIT_INTERRUPTED)
    if answer.status != "complete":
        raise SystemExit(1)


_LEGACY_ARGS = "kbdesk.chat.legacy"


class ChatCommand(click.Command):
    """``kbdesk chat [CONVERSATION]``; the old ``kbdesk chat list|show|rename|rm|kbs|source``
    still reach ``kbdesk conversations``, with a note."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in LEGACY:
            ctx.meta[_LEGACY_ARGS] = list(args)
            args = []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        legacy = ctx.meta.pop(_LEGACY_ARGS, None)
        if legacy is None:
            return super().invoke(ctx)
        click.echo(f"note: 'kbdesk chat {legacy[0]}' is now 'kbdesk conversations {legacy[0]}'", err=True)
        sub = conversations_group.make_context("conversations", legacy, parent=ctx.parent or ctx)
        with sub:
            return conversations_group.invoke(sub)


@click.command("chat", cls=ChatCommand)
@click.argument("conversation", required=False)
@click.option("-c", "--continue", "latest", is_flag=True, help="Continue the latest conversation.")
@with_options(turn_options)
@with_filter_options
@click.pass_obj
def chat_command(
    state: CliState,
    conversation: str | None,
    latest: bool,
    kbs: tuple[str, ...],
    persona: str | None,
    project: str | None,
    model: str | None,
    provider: str | None,
    retrieval: str | None,
    max_tokens: int | None,
    max_rounds: int,
    **flags: Any,
) -> None:
    """Chat in the terminal: a new conversation, the latest (--continue) or CONVERSATION
    (id, prefix or title). Answers stream in with their sources and what was searched.

    \b
    In the chat:
      /kbs [+KB -KB]       list the KBs (numbered) or switch them on/off
      /persona NAME|none   answer as a persona      /project NAME|none
      /retrieval auto|tool|always|off               /new   a new conversation
      /filter [tag:q3 path:work/** type:md since:2026-11-01|none]
      /history  /sources [N]  /help  /exit (or Ctrl-D)
      !multi … !end, or a trailing \\, for several lines
    Ctrl-C stops an answer (what came is kept) or clears the line.

    The filters (--path, --type, --since, --tag, …) become the conversation's default
    filters: every search keeps to them.

    With stdin not a terminal, reads one question (or /command) per line, answers each
    and exits (status 1 when an answer or a command failed). Saved conversations:
    'kbdesk conversations'.
    """
    import sys

    from kbdesk.cli.chat_repl import ChatSession

    if conversation and latest:
        raise click.UsageError("give a CONVERSATION or --continue, not both")
    filters = pop_filters(flags)
    desk = state.desk()
    chat = desk.chat()
    conv_id = None
    if latest:
        convs = chat.conversations()
        if convs:
            conv_id = convs[0].id
        else:
            click.echo("note: no saved conversation yet; starting a new one", err=True)
    elif conversation:
        conv_id = chat.conversation(conversation).id
    require_chat_model(chat, model=model, persona=persona, conversation=conv_id)
    session = ChatSession(
        chat,
        conv_id,
        persona=persona,
        project=project,
        kbs=list(kbs),
        model=model,
        provider=provider,
        retrieval=retrieval,
        max_tokens=max_tokens,
        max_rounds=max_rounds,
        filters=filters or None,
        interactive=sys.stdin.isatty(),
        history_file=desk.paths.data_dir / "chat-history",
    )
    code = session.run()
    if code:
        raise SystemExit(code)
