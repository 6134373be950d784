"""``kbdesk conversations …`` (alias ``conv``): saved conversations, headless.

List, show, rename, delete, switch KBs, set the retrieval policy and default filters,
open a source. These
lived under ``kbdesk chat …`` before ``kbdesk chat`` became the interactive chat; those
spellings still work, hidden, with a note (:data:`LEGACY`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from kbdesk.chat.safety import clean, one_line
from kbdesk.cli.chat_turn import RETRIEVAL_POLICIES
from kbdesk.cli.filter_options import pop_filters, with_filter_options
from kbdesk.cli.output import passage, plain, print_json, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.errors import InvalidInputError

if TYPE_CHECKING:
    from kbdesk.chat.service import ChatService

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.group("conversations")
def conversations_group() -> None:
    """Saved conversations: list, show, rename, delete, KB toggles, retrieval, filters, sources.

    Chat in them with 'kbdesk chat CONVERSATION' or 'kbdesk ask -c CONVERSATION'.
    """


@conversations_group.command("list")
@click.option("--project", metavar="NAME", help="Only this project's conversations.")
@json_option
@click.pass_obj
def conversations_list(state: CliState, project: str | None, as_json: bool) -> None:
    """List conversations, newest first."""
    convs = state.desk().chat().conversations(project)
    if as_json:
        print_json({"data": [c.to_dict() for c in convs], "total": len(convs)})
        return
    t = table("id", "title", "messages", "updated")
    for c in convs:
        t.add_row(c.id[:8], plain(c.title or "(untitled)"), str(c.message_count), c.updated_at[:16])
    stdout().print(t)


@conversations_group.command("show")
@click.argument("conversation")
@json_option
@click.pass_obj
def conversations_show(state: CliState, conversation: str, as_json: bool) -> None:
    """Print a conversation: questions, answers, tool calls, notices and sources."""
    chat = state.desk().chat()
    conv = chat.conversation(conversation)
    if as_json:
        print_json(
            {
                **conv.to_dict(),
                "messages": [m.to_dict() for m in chat.messages(conv.id)],
                "knowledge_bases": [t.to_dict() for t in chat.kb_toggles(conv.id)],
            }
        )
        return
    stdout().print(Text(clean(conv.title) or "(untitled)", style="bold"))
    print_messages(chat, conv.id)


def print_messages(chat: ChatService, conversation_id: str) -> None:
    """Every question, answer, tool call, notice and source of a conversation, in order."""
    console = stdout()
    for m in chat.messages(conversation_id):
        if m.role == "tool":
            continue
        label = {"user": "you", "assistant": "assistant", "notice": "note"}.get(m.role, m.role)
        status = "" if m.status == "complete" else f" ({m.status})"
        console.print(Text(f"\n{label}{status}:", style="bold"))
        if m.content:
            console.print(passage(clean(m.content)))
        for call in m.tool_calls:
            console.print(plain(f"  [{call.name}] {one_line(call.arguments, 120)} → {call.status}", style="dim"))
        for s in m.sources:
            console.print(plain(f"  [{s.get('n')}] {s.get('label', '')}", style="dim"))


@conversations_group.command("rename")
@click.argument("conversation")
@click.argument("title")
@json_option
@click.pass_obj
def conversations_rename(state: CliState, conversation: str, title: str, as_json: bool) -> None:
    """Give a conversation a new title."""
    conv = state.desk().chat().rename(conversation, title)
    if as_json:
        print_json(conv.to_dict())
    else:
        stdout().print(plain(f"Renamed {conv.id[:8]} to '{conv.title}'"))


@conversations_group.command("rm")
@click.argument("conversation")
@json_option
@click.pass_obj
def conversations_rm(state: CliState, conversation: str, as_json: bool) -> None:
    """Delete a conversation with its messages."""
    conv = state.desk().chat().delete(conversation)
    if as_json:
        print_json({"deleted": conv.to_dict()})
    else:
        stdout().print(plain(f"Deleted conversation '{conv.title or conv.id[:8]}'"))


@conversations_group.command("kbs")
@click.argument("conversation")
@click.option("--on", "on", multiple=True, metavar="KB", help="Switch this KB on (repeatable).")
@click.option("--off", "off", multiple=True, metavar="KB", help="Switch this KB off (repeatable).")
@json_option
@click.pass_obj
def conversations_kbs(
    state: CliState, conversation: str, on: tuple[str, ...], off: tuple[str, ...], as_json: bool
) -> None:
    """The conversation's KBs with their document counts; --on/--off toggle them."""
    chat = state.desk().chat()
    for ref, enabled in [(r, True) for r in on] + [(r, False) for r in off]:
        chat.set_kb_enabled(conversation, ref, enabled)
    toggles = chat.kb_toggles(conversation)
    if as_json:
        print_json({"data": [t.to_dict() for t in toggles]})
        return
    for line in toggle_lines(toggles, numbered=False):
        stdout().print(plain(line))


def toggle_lines(toggles: list[Any], *, numbered: bool) -> list[str]:
    """``☑ Docs (3 docs)  (personal)`` for each KB a conversation may use."""
    lines = []
    for n, t in enumerate(toggles, 1):
        mark = "☑" if t.enabled else "☐"
        why = ""
        if t.enabled:
            why = f"  ({t.origin}{', locked' if t.locked else ''}{', auto-search' if t.auto_search else ''})"
        docs = f"{t.document_count} doc{'' if t.document_count == 1 else 's'}"
        lines.append(f"{f'{n:>2} ' if numbered else ''}{mark} {t.name} ({docs}){why}")
    return lines


@conversations_group.command("retrieval")
@click.argument("conversation")
@click.argument("policy", type=click.Choice([*RETRIEVAL_POLICIES, "default"]), required=False)
@json_option
@click.pass_obj
def conversations_retrieval(state: CliState, conversation: str, policy: str | None, as_json: bool) -> None:
    """Show or set how the conversation consults its KBs: auto (the model may search; if it
    does not, kbdesk does), tool (only when the model searches), always (kbdesk searches
    before every answer), off, or default (the persona's, else [chat] retrieval)."""
    chat = state.desk().chat()
    if policy is not None:
        chat.set_retrieval(conversation, None if policy == "default" else policy)
    conv = chat.conversation(conversation)
    if as_json:
        print_json({"conversation": conv.id, "retrieval": conv.retrieval})
    else:
        stdout().print(plain(f"retrieval: {conv.retrieval or 'default (the persona’s, else [chat] retrieval)'}"))


@conversations_group.command("filter")
@click.argument("conversation")
@with_filter_options
@click.option("--clear", is_flag=True, help="Remove the conversation's own filters (its persona's apply, if any).")
@json_option
@click.pass_obj
def conversations_filter(state: CliState, conversation: str, clear: bool, as_json: bool, **flags: Any) -> None:
    """Show or set the default filters every search of the conversation keeps to (e.g.
    --path 'projects/atlas/**'): kbdesk's own search with the question and the model's
    kb_search. The flags given replace the conversation's filters; none shows them;
    --clear removes them. Without filters of its own, a conversation keeps to its
    persona's."""
    chat = state.desk().chat()
    filters = pop_filters(flags)
    if clear and filters:
        raise click.UsageError("give filters or --clear, not both")
    if clear or filters:
        chat.set_filters(conversation, filters if filters else None)
    conv = chat.conversation(conversation)
    applied = chat.filters(conv.id)
    if as_json:
        print_json({"conversation": conv.id, "filters": conv.filters or {}, "applied": applied.to_dict()})
        return
    own = conv.filters is not None
    line = applied.describe() if applied else "none"
    stdout().print(plain(f"filters: {line}{'' if own or not applied else ' (the persona’s)'}"))


@conversations_group.command("source")
@click.argument("conversation")
@click.argument("number", type=click.IntRange(1))
@json_option
@click.pass_obj
def conversations_source(state: CliState, conversation: str, number: int, as_json: bool) -> None:
    """Print source NUMBER of the conversation's last answer with its neighbours."""
    print_source(state.desk().chat(), conversation, number, as_json=as_json)


def print_source(chat: ChatService, conversation: str, number: int, *, as_json: bool = False) -> None:
    answers = [m for m in chat.messages(conversation) if m.role == "assistant" and m.sources]
    sources = answers[-1].sources if answers else []
    source = next((s for s in sources if s.get("n") == number), None)
    if source is None:
        raise InvalidInputError(f"the last answer has no source [{number}]")
    if as_json:
        print_json({"source": source, "passages": chat.open_source(source)})
        return
    console = stdout()
    console.print(plain(f"[{number}] {source.get('label', '')}", style="bold"))
    for part in chat.open_source(source):
        console.print(passage(part["content"], style="" if part.get("current") else "dim"))


# ``kbdesk conv …``: the same commands under a short name, not listed in --help
conv_alias = click.Group(
    "conv", commands=conversations_group.commands, hidden=True, help="Short for 'kbdesk conversations'."
)

LEGACY = ("list", "show", "rename", "rm", "kbs", "source")
"""``kbdesk chat NAME …`` spellings kept for scripts written before ``kbdesk chat`` chatted."""
