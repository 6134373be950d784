"""``kbdesk note …``, ``kbdesk persona …`` and ``kbdesk project …``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.text import Text

from kbdesk.chat.safety import one_line
from kbdesk.cli.chat_turn import RETRIEVAL_POLICIES
from kbdesk.cli.filter_options import pop_filters, with_filter_options
from kbdesk.cli.output import plain, print_json, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.filters import Filters
from kbdesk.store.chat import UNSET, Persona, Project

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def _text(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


def _warn(warning: str | None) -> None:
    if warning:
        click.echo(f"note: {warning}", err=True)


# ── notes ──────────────────────────────────────────────────────────────────────
@click.group("note")
def note_group() -> None:
    """Short notes, searchable by keyword and by meaning (note_search in chat)."""


@note_group.command("add")
@click.argument("text")
@click.option("-t", "--title", default="", help="A title for the note.")
@json_option
@click.pass_obj
def note_add(state: CliState, text: str, title: str, as_json: bool) -> None:
    """Add a note (TEXT, or - to read it from stdin)."""
    note, warning = state.desk().chat().notes.add(_text(text), title)
    _warn(warning)
    print_json(note.to_dict()) if as_json else stdout().print(plain(f"Added note {note.id[:8]}"))


@note_group.command("edit")
@click.argument("note")
@click.argument("text", required=False)
@click.option("-t", "--title", default=None, help="A new title.")
@json_option
@click.pass_obj
def note_edit(state: CliState, note: str, text: str | None, title: str | None, as_json: bool) -> None:
    """Change a note's TEXT (or - for stdin) and/or title."""
    updated, warning = state.desk().chat().notes.edit(note, content=None if text is None else _text(text), title=title)
    _warn(warning)
    print_json(updated.to_dict()) if as_json else stdout().print(plain(f"Updated note {updated.id[:8]}"))


@note_group.command("list")
@json_option
@click.pass_obj
def note_list(state: CliState, as_json: bool) -> None:
    """List notes, newest first."""
    notes = state.desk().chat().notes.list()
    if as_json:
        print_json({"data": [n.to_dict() for n in notes], "total": len(notes)})
        return
    t = table("id", "title", "text", "updated")
    for n in notes:
        t.add_row(n.id[:8], plain(one_line(n.title, 40)), plain(one_line(n.content, 60)), n.updated_at[:16])
    stdout().print(t)


@note_group.command("show")
@click.argument("note")
@json_option
@click.pass_obj
def note_show(state: CliState, note: str, as_json: bool) -> None:
    """Print one note."""
    found = state.desk().chat().notes.get(note)
    if as_json:
        print_json(found.to_dict())
        return
    if found.title:
        stdout().print(Text(found.title, style="bold"))
    stdout().print(Text(found.content))


@note_group.command("search")
@click.argument("query")
@click.option("--semantic", is_flag=True, help="Also match by meaning (needs roles.embedding).")
@click.option("-n", "--limit", type=click.IntRange(1, 20), default=5, show_default=True)
@json_option
@click.pass_obj
def note_search(state: CliState, query: str, semantic: bool, limit: int, as_json: bool) -> None:
    """Search notes by keyword (and by meaning with --semantic), merged without duplicates."""
    found = state.desk().chat().notes.search(query, semantic=semantic, limit=limit)
    for note in found.notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        print_json(found.to_dict())
        return
    if not found.hits:
        stdout().print(plain("No matching notes."))
    for hit in found.hits:
        head = Text(f"{hit.note.id[:8]}  ", style="bold")
        head.append(f"{hit.score:.3f} ({'+'.join(hit.matched)})  ", style="cyan")
        head.append(one_line(hit.note.title or hit.note.content, 80))
        stdout().print(head)


@note_group.command("rm")
@click.argument("note")
@json_option
@click.pass_obj
def note_rm(state: CliState, note: str, as_json: bool) -> None:
    """Delete a note."""
    removed = state.desk().chat().notes.remove(note)
    if as_json:
        print_json({"deleted": removed.to_dict()})
    else:
        stdout().print(plain(f"Deleted note {removed.id[:8]}"))


# ── personas ───────────────────────────────────────────────────────────────────
F = TypeVar("F", bound=Callable[..., Any])


@click.group("persona")
def persona_group() -> None:
    """Personas: a system prompt, a chat model and bound KBs (with auto-search)."""


def _print_persona(state: CliState, persona: Persona, as_json: bool) -> None:
    if as_json:
        print_json(persona.to_dict())
        return
    names = {kb.id: kb.name for kb in state.desk().list_kbs()}
    console = stdout()
    console.print(Text(persona.name, style="bold"))
    console.print(
        plain(f"model: {persona.model or '(roles.chat)'}{' via ' + persona.provider if persona.provider else ''}")
    )
    if persona.retrieval or persona.max_tokens:
        console.print(
            plain(f"retrieval: {persona.retrieval or '(default)'}, max_tokens: {persona.max_tokens or '(default)'}")
        )
    if persona.filters:
        console.print(plain(f"filters: {Filters.from_dict(persona.filters).describe()}"))
    for kb_id, auto in persona.kbs:
        console.print(plain(f"KB: {names.get(kb_id, kb_id)}{'  (auto-search)' if auto else ''}"))
    if persona.system_prompt:
        console.print(Text(persona.system_prompt, style="dim"))


RETRIEVAL_HELP = (
    "How its chats consult the KBs: auto (the model may search; if it does not, kbdesk does), "
    "tool (only when the model searches), always (kbdesk searches first) or off"
)

persona_kb_options = [
    click.option("--kb", "kbs", multiple=True, metavar="KB", help="Bind this KB (repeatable)."),
    click.option(
        "--auto-search",
        "auto",
        multiple=True,
        metavar="KB",
        help="Bind this KB with auto-search: its top passages go into every prompt (repeatable).",
    ),
]


def _with(options: list[Callable[[F], F]]) -> Callable[[F], F]:
    def wrap(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return wrap


@persona_group.command("create")
@click.argument("name")
@click.option("-p", "--prompt", default="", help="System prompt (- reads stdin).")
@click.option("--model", help="Chat model (default: roles.chat.model).")
@click.option("--provider", help="Provider of the model (default: roles.chat.provider).")
@click.option(
    "--retrieval", type=click.Choice(RETRIEVAL_POLICIES), help=RETRIEVAL_HELP + " (default: [chat] retrieval)."
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1, 1_000_000),
    metavar="N",
    help="Longest answer in tokens (default: [chat] max_tokens).",
)
@_with(persona_kb_options)
@with_filter_options
@json_option
@click.pass_obj
def persona_create(
    state: CliState,
    name: str,
    prompt: str,
    model: str | None,
    provider: str | None,
    retrieval: str | None,
    max_tokens: int | None,
    kbs: tuple[str, ...],
    auto: tuple[str, ...],
    as_json: bool,
    **flags: Any,
) -> None:
    """Create a persona. The filters (--path, --type, --tag, …) are the default filters of
    its conversations' searches."""
    limits: dict[str, Any] = {k: v for k, v in (("retrieval", retrieval), ("max_tokens", max_tokens)) if v is not None}
    filters = pop_filters(flags)
    if filters:
        limits["filters"] = filters
    persona = (
        state.desk()
        .chat()
        .create_persona(name, _text(prompt), model=model, provider=provider, kbs=kbs, auto_search=auto, **limits)
    )
    _print_persona(state, persona, as_json)


@persona_group.command("edit")
@click.argument("persona")
@click.option("--name", help="New name.")
@click.option("-p", "--prompt", default=None, help="New system prompt (- reads stdin).")
@click.option("--model", default=None, help="New chat model ('' for roles.chat).")
@click.option("--provider", default=None, help="New provider ('' for roles.chat).")
@click.option(
    "--retrieval",
    type=click.Choice([*RETRIEVAL_POLICIES, "default"]),
    help=RETRIEVAL_HELP + "; default: [chat] retrieval.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(0, 1_000_000),
    metavar="N",
    help="Longest answer in tokens (0: [chat] max_tokens).",
)
@_with(persona_kb_options)
@click.option("--no-kbs", is_flag=True, help="Remove every KB binding.")
@with_filter_options
@click.option("--no-filters", is_flag=True, help="Remove its default filters.")
@json_option
@click.pass_obj
def persona_edit(
    state: CliState,
    persona: str,
    name: str | None,
    prompt: str | None,
    model: str | None,
    provider: str | None,
    retrieval: str | None,
    max_tokens: int | None,
    kbs: tuple[str, ...],
    auto: tuple[str, ...],
    no_kbs: bool,
    no_filters: bool,
    as_json: bool,
    **flags: Any,
) -> None:
    """Change a persona; --kb/--auto-search replace its KB bindings, the filters (--path,
    --type, --tag, …) its default filters."""
    limits: dict = {}
    filters = pop_filters(flags)
    if no_filters and filters:
        raise click.UsageError("give filters or --no-filters, not both")
    if filters or no_filters:
        limits["filters"] = filters if filters else None
    if retrieval is not None:
        limits["retrieval"] = None if retrieval == "default" else retrieval
    if max_tokens is not None:
        limits["max_tokens"] = max_tokens or None
    updated = (
        state.desk()
        .chat()
        .edit_persona(
            persona,
            name=name,
            system_prompt=None if prompt is None else _text(prompt),
            model=UNSET if model is None else model,
            provider=UNSET if provider is None else provider,
            kbs=[] if no_kbs else (list(kbs) if kbs or auto else None),
            auto_search=auto,
            **limits,
        )
    )
    _print_persona(state, updated, as_json)


@persona_group.command("list")
@json_option
@click.pass_obj
def persona_list(state: CliState, as_json: bool) -> None:
    """List personas."""
    personas = state.desk().chat().personas()
    if as_json:
        print_json({"data": [p.to_dict() for p in personas], "total": len(personas)})
        return
    t = table("name", "model", "KBs", "prompt")
    for p in personas:
        t.add_row(
            plain(p.name), plain(p.model or "(roles.chat)"), str(len(p.kbs)), plain(one_line(p.system_prompt, 50))
        )
    stdout().print(t)


@persona_group.command("show")
@click.argument("persona")
@json_option
@click.pass_obj
def persona_show(state: CliState, persona: str, as_json: bool) -> None:
    """Show a persona."""
    _print_persona(state, state.desk().chat().persona(persona), as_json)


@persona_group.command("rm")
@click.argument("persona")
@json_option
@click.pass_obj
def persona_rm(state: CliState, persona: str, as_json: bool) -> None:
    """Delete a persona (its conversations stay, without it)."""
    removed = state.desk().chat().delete_persona(persona)
    if as_json:
        print_json({"deleted": removed.to_dict()})
    else:
        stdout().print(plain(f"Deleted persona '{removed.name}'"))


# ── projects ───────────────────────────────────────────────────────────────────
@click.group("project")
def project_group() -> None:
    """Projects: group conversations and bind KBs to all of them."""


def _print_project(state: CliState, project: Project, as_json: bool) -> None:
    if as_json:
        print_json(project.to_dict())
        return
    names = {kb.id: kb.name for kb in state.desk().list_kbs()}
    stdout().print(Text(project.name, style="bold"))
    if project.description:
        stdout().print(plain(project.description))
    for kb_id in project.kbs:
        stdout().print(plain(f"KB: {names.get(kb_id, kb_id)}"))


@project_group.command("create")
@click.argument("name")
@click.option("-d", "--description", default="")
@click.option("--kb", "kbs", multiple=True, metavar="KB", help="Bind this KB (repeatable).")
@json_option
@click.pass_obj
def project_create(state: CliState, name: str, description: str, kbs: tuple[str, ...], as_json: bool) -> None:
    """Create a project."""
    _print_project(state, state.desk().chat().create_project(name, description, kbs=kbs), as_json)


@project_group.command("edit")
@click.argument("project")
@click.option("--name")
@click.option("-d", "--description", default=None)
@click.option("--kb", "kbs", multiple=True, metavar="KB", help="Replace the bound KBs with these (repeatable).")
@click.option("--no-kbs", is_flag=True, help="Remove every KB binding.")
@json_option
@click.pass_obj
def project_edit(
    state: CliState,
    project: str,
    name: str | None,
    description: str | None,
    kbs: tuple[str, ...],
    no_kbs: bool,
    as_json: bool,
) -> None:
    """Change a project."""
    updated = (
        state.desk()
        .chat()
        .edit_project(project, name=name, description=description, kbs=[] if no_kbs else (list(kbs) if kbs else None))
    )
    _print_project(state, updated, as_json)


@project_group.command("list")
@json_option
@click.pass_obj
def project_list(state: CliState, as_json: bool) -> None:
    """List projects."""
    projects = state.desk().chat().projects()
    if as_json:
        print_json({"data": [p.to_dict() for p in projects], "total": len(projects)})
        return
    t = table("name", "KBs", "description")
    for p in projects:
        t.add_row(plain(p.name), str(len(p.kbs)), plain(one_line(p.description, 60)))
    stdout().print(t)


@project_group.command("show")
@click.argument("project")
@json_option
@click.pass_obj
def project_show(state: CliState, project: str, as_json: bool) -> None:
    """Show a project."""
    _print_project(state, state.desk().chat().project(project), as_json)


@project_group.command("rm")
@click.argument("project")
@json_option
@click.pass_obj
def project_rm(state: CliState, project: str, as_json: bool) -> None:
    """Delete a project (its conversations stay, without it)."""
    removed = state.desk().chat().delete_project(project)
    if as_json:
        print_json({"deleted": removed.to_dict()})
    else:
        stdout().print(plain(f"Deleted project '{removed.name}'"))
