"""``kbdesk ask`` and ``kbdesk chat …``: questions answered from the KBs, headless.

The turn runs in a worker thread and its events come back through a queue, so Ctrl-C
cancels the turn cleanly (the partial answer is saved as cancelled) instead of
killing it mid-write. Answer text is printed as plain text, never as markup.
"""

from __future__ import annotations

import queue
import sys
import threading
from typing import Any

import click
from rich.text import Text

from kbdesk.chat.events import Answer, Notice, TextDelta, ToolCallFinished, ToolCallStarted, TurnFinished
from kbdesk.chat.safety import clean, one_line
from kbdesk.cli.output import passage, plain, print_json, stdout, table
from kbdesk.providers.chat import CancelToken
from kbdesk.textsafe import inert

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def _run_turn(chat: Any, conversation: str | None, question: str, on_event: Any, **kwargs: Any) -> Answer:
    """Run the turn in a thread; Ctrl-C here cancels it and waits for it to wind up."""
    events: queue.Queue[Any] = queue.Queue()
    token = CancelToken()

    def work() -> None:
        try:
            chat.ask(conversation, question, on_event=events.put, cancel=token, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, raised there
            events.put(exc)
        finally:
            events.put(None)

    thread = threading.Thread(target=work, name="kbdesk-ask", daemon=True)
    thread.start()
    answer = None
    while True:
        try:
            event = events.get(timeout=0.1)
        except queue.Empty:
            continue
        except KeyboardInterrupt:
            token.cancel()
            continue
        if event is None:
            break
        if isinstance(event, BaseException):
            raise event
        on_event(event)
        if isinstance(event, TurnFinished):
            answer = event.answer
    thread.join()
    assert answer is not None
    return answer


class _Printer:
    """Streams a turn to the terminal: answer on stdout, tool calls and notices on stderr."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.started = False

    def __call__(self, event: Any) -> None:
        if self.quiet:
            return
        if isinstance(event, TextDelta):
            # a model may repeat a document's escape sequences: shown, never obeyed
            # (each control character is escaped alone, so a sequence split across
            # deltas is as inert as a whole one)
            sys.stdout.write(inert(event.text))
            sys.stdout.flush()
            self.started = self.started or bool(event.text.strip())
        elif isinstance(event, ToolCallStarted):
            self._side(f"[{event.call.name}] {one_line(_query_of(event.call.arguments), 120)}")
        elif isinstance(event, ToolCallFinished):
            self._side(f"[{event.call.name}] {event.call.summary}")
        elif isinstance(event, Notice):
            self._side(f"{'error' if event.level == 'error' else 'note'}: {event.text}")

    def _side(self, text: str) -> None:
        if self.started:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.started = False
        click.echo(clean(text), err=True)


def _query_of(arguments: str) -> str:
    import json

    try:
        value = json.loads(arguments)
        return str(value.get("query", arguments)) if isinstance(value, dict) else arguments
    except ValueError:
        return arguments


def print_sources(answer: Answer) -> None:
    if not answer.sources:
        return
    console = stdout()
    console.print(Text("\nSources:", style="bold"))
    for source in answer.sources:
        console.print(plain(f"  [{source.n}] {source.label}"))


@click.command("ask")
@click.argument("question")
@click.option("--kb", "kbs", multiple=True, metavar="KB",
              help="Use exactly these KBs in the conversation (repeatable; default: your personal KBs).")
@click.option("--persona", metavar="NAME", help="Answer as this persona (its prompt, model and KBs).")
@click.option("--project", metavar="NAME", help="Put the conversation in this project (its KBs apply).")
@click.option("-c", "--conversation", metavar="ID", help="Continue this conversation (id, prefix or title).")
@click.option("--model", metavar="MODEL", help="Chat model for this question (default: roles.chat.model).")
@click.option("--provider", metavar="NAME", help="Provider of the chat model (default: roles.chat.provider).")
@click.option("--max-rounds", type=click.IntRange(1, 20), default=5, show_default=True,
              help="Most rounds of tool calls before the answer.")
@json_option
@click.pass_obj
def ask_command(state, question, kbs, persona, project, conversation, model, provider, max_rounds, as_json) -> None:
    """Ask QUESTION; the answer streams in, then its sources. A new conversation is saved
    unless --conversation continues one."""
    chat = state.desk().chat()
    answer = _run_turn(chat, conversation, question, _Printer(quiet=as_json), persona=persona, project=project,
                       kbs=list(kbs) or None, model=model, provider=provider, max_rounds=max_rounds)
    if as_json:
        print_json(answer.to_dict())
    else:
        if answer.text and not answer.text.endswith("\n"):
            sys.stdout.write("\n")
        print_sources(answer)
    if answer.status != "complete":
        raise SystemExit(1)


@click.group("chat")
def chat_group() -> None:
    """Saved conversations: list, show, rename, delete, KB toggles, sources."""


@chat_group.command("list")
@click.option("--project", metavar="NAME", help="Only this project's conversations.")
@json_option
@click.pass_obj
def chat_list(state, project, as_json) -> None:
    """List conversations, newest first."""
    convs = state.desk().chat().conversations(project)
    if as_json:
        print_json({"data": [c.to_dict() for c in convs], "total": len(convs)})
        return
    t = table("id", "title", "messages", "updated")
    for c in convs:
        t.add_row(c.id[:8], plain(c.title or "(untitled)"), str(c.message_count), c.updated_at[:16])
    stdout().print(t)


@chat_group.command("show")
@click.argument("conversation")
@json_option
@click.pass_obj
def chat_show(state, conversation, as_json) -> None:
    """Print a conversation: questions, answers, tool calls, notices and sources."""
    chat = state.desk().chat()
    conv = chat.conversation(conversation)
    messages = chat.messages(conv.id)
    if as_json:
        print_json({**conv.to_dict(), "messages": [m.to_dict() for m in messages],
                    "knowledge_bases": [t.to_dict() for t in chat.kb_toggles(conv.id)]})
        return
    console = stdout()
    console.print(Text(conv.title or "(untitled)", style="bold"))
    for m in messages:
        if m.role == "tool":
            continue
        label = {"user": "you", "assistant": "assistant", "notice": "note"}[m.role]
        status = "" if m.status == "complete" else f" ({m.status})"
        console.print(Text(f"\n{label}{status}:", style="bold"))
        if m.content:
            console.print(Text(clean(m.content)))
        for call in m.tool_calls:
            console.print(Text(f"  [{call.name}] {one_line(call.arguments, 120)} → {call.status}", style="dim"))
        for s in m.sources:
            console.print(Text(f"  [{s.get('n')}] {clean(s.get('label', ''))}", style="dim"))


@chat_group.command("rename")
@click.argument("conversation")
@click.argument("title")
@click.pass_obj
def chat_rename(state, conversation, title) -> None:
    """Give a conversation a new title."""
    conv = state.desk().chat().rename(conversation, title)
    stdout().print(plain(f"Renamed {conv.id[:8]} to '{conv.title}'"))


@chat_group.command("rm")
@click.argument("conversation")
@click.pass_obj
def chat_rm(state, conversation) -> None:
    """Delete a conversation with its messages."""
    conv = state.desk().chat().delete(conversation)
    stdout().print(plain(f"Deleted conversation '{conv.title or conv.id[:8]}'"))


@chat_group.command("kbs")
@click.argument("conversation")
@click.option("--on", "on", multiple=True, metavar="KB", help="Switch this KB on (repeatable).")
@click.option("--off", "off", multiple=True, metavar="KB", help="Switch this KB off (repeatable).")
@json_option
@click.pass_obj
def chat_kbs(state, conversation, on, off, as_json) -> None:
    """The conversation's KBs with their document counts; --on/--off toggle them."""
    chat = state.desk().chat()
    for ref, enabled in [(r, True) for r in on] + [(r, False) for r in off]:
        chat.set_kb_enabled(conversation, ref, enabled)
    toggles = chat.kb_toggles(conversation)
    if as_json:
        print_json({"data": [t.to_dict() for t in toggles]})
        return
    for t in toggles:
        mark = "☑" if t.enabled else "☐"
        why = f"  ({t.origin}{', auto-search' if t.auto_search else ''})" if t.enabled else ""
        stdout().print(plain(f"{mark} {t.name} ({t.document_count} docs){why}"))


@chat_group.command("source")
@click.argument("conversation")
@click.argument("number", type=click.IntRange(1))
@click.pass_obj
def chat_source(state, conversation, number) -> None:
    """Print source NUMBER of the conversation's last answer with its neighbours."""
    chat = state.desk().chat()
    answers = [m for m in chat.messages(conversation) if m.role == "assistant" and m.sources]
    sources = answers[-1].sources if answers else []
    source = next((s for s in sources if s.get("n") == number), None)
    if source is None:
        raise click.ClickException(f"the last answer has no source [{number}]")
    console = stdout()
    console.print(Text(f"[{number}] {clean(source.get('label', ''))}", style="bold"))
    for part in chat.open_source(source):
        console.print(passage(part["content"], style="" if part.get("current") else "dim"))
