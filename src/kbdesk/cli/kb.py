"""``kbdesk kb …``: create, list, show, rename, describe, recount and delete KBs."""

from __future__ import annotations

import sys

import click

from kbdesk.cli.output import human_bytes, plain, print_json, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.errors import ConflictError, InvalidInputError
from kbdesk.models import KnowledgeBase
from kbdesk.store.api import TEAM
from kbdesk.textsafe import inert_line

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def _model(kb: KnowledgeBase) -> str:
    if not kb.model_id:
        return "none (keyword search only)"
    provider = kb.embedding_config.get("provider")
    dims = f", {kb.dimensions} dims" if kb.dimensions else ""
    return f"{provider + ' / ' if provider else ''}{kb.model_id}{dims}"


@click.group("kb")
def kb_group() -> None:
    """Manage knowledge bases."""


@kb_group.command("create")
@click.argument("name")
@click.option("-d", "--description", default="", help="What the KB holds.")
@click.option(
    "--model",
    "model_id",
    metavar="MODEL_ID",
    help="Embedding model, fixed at creation (default: the embedding role's, if set).",
)
@click.option("--keyword-only", is_flag=True, help="No embeddings: keyword search only.")
@click.option("--provider", metavar="NAME", help="Provider that serves the embedding model.")
@click.option("--dimensions", type=click.IntRange(1, 16000), help="Vector dimensions, if known in advance.")
@click.option("--chunk-size", type=click.IntRange(1), help="Characters per chunk (default 1000).")
@click.option("--chunk-overlap", type=click.IntRange(0), help="Characters shared by neighbouring chunks (default 200).")
@click.option(
    "--scope",
    type=click.Choice(["personal", "team", "global"]),
    help="Who sees it (a team server): yours alone (default), a team's (--team; its admins create it), "
    "or everyone's (system admins create it).",
)
@click.option("--team", "team", metavar="TEAM", help="The team of a team KB, by name or id (implies --scope team).")
@click.option(
    "--exist-ok",
    is_flag=True,
    help="A KB of that name already there is fine (scripts that run twice), unless it embeds with "
    "another model than --model or --keyword-only asks for.",
)
@json_option
@click.pass_obj
def create(
    state: CliState,
    name: str,
    description: str,
    model_id: str | None,
    keyword_only: bool,
    provider: str | None,
    dimensions: int | None,
    chunk_size: int | None,
    chunk_overlap: int | None,
    scope: str | None,
    team: str | None,
    exist_ok: bool,
    as_json: bool,
) -> None:
    """Create a knowledge base called NAME."""
    if provider and not model_id:
        raise InvalidInputError("--provider needs --model")
    if keyword_only and model_id:
        raise InvalidInputError("--keyword-only and --model exclude each other")
    scope = scope or ("team" if team else "personal")
    if scope == "team" and not team:
        raise InvalidInputError("a team knowledge base needs --team NAME")
    if team and scope != "team":
        raise InvalidInputError(f"--team is for team knowledge bases, not {scope} ones")
    desk = state.desk()
    if scope != "personal" and TEAM not in desk.capabilities:
        raise InvalidInputError(f"{scope} knowledge bases live on a team server (kbdesk --db postgresql://…)")
    existing = desk.kb_named(name) if exist_ok else None
    if existing is not None:
        _same_model(existing, model_id, keyword_only)
        if as_json:
            print_json({**existing.to_dict(), "existed": True})
        else:
            stdout().print(plain(f"Knowledge base '{existing.name}' ({existing.id}) already exists"))
        return
    kb = desk.create_kb(
        name,
        description,
        model_id=model_id,
        provider=provider,
        dimensions=dimensions,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        keyword_only=keyword_only,
        scope=scope,
        team_id=desk.resolve_team(team) if team else None,
    )
    if as_json:
        print_json({**kb.to_dict(), "existed": False} if exist_ok else kb.to_dict())
    else:
        stdout().print(plain(f"Created knowledge base '{kb.name}' ({kb.id})"))


def _same_model(kb: KnowledgeBase, model_id: str | None, keyword_only: bool) -> None:
    """--exist-ok takes a KB that is already there only if it embeds as asked."""
    if model_id and kb.model_id != model_id:
        has = f"embeds with {kb.model_id}" if kb.model_id else "has no embedding model"
        raise ConflictError(f"a knowledge base named '{kb.name}' already exists and {has}, not {model_id}")
    if keyword_only and kb.model_id:
        raise ConflictError(
            f"a knowledge base named '{kb.name}' already exists and embeds with {kb.model_id} (not keyword only)"
        )


@kb_group.command("list")
@json_option
@click.option("--local", "local_only", is_flag=True, help="Only the local KBs (no remote is asked).")
@click.pass_obj
def list_(state: CliState, as_json: bool, local_only: bool) -> None:
    """List knowledge bases: the local ones, then each remote's (REMOTE:NAME, read-only)."""
    desk = state.desk()
    kbs = desk.list_kbs()
    remote_kbs, remote_states = ([], []) if local_only or not desk.config.remotes else desk.remotes.list_all()
    for s in remote_states:
        if s.state != "searched":
            click.echo(f"notice: remote '{s.remote}' not listed ({inert_line(s.reason or s.state)})", err=True)
    if as_json:
        rows = [{**kb.to_dict(), "failed_documents": kb.failed_documents} for kb in kbs]
        body = {"data": rows, "total": len(kbs)}
        if desk.config.remotes and not local_only:
            body["remote"] = [kb.to_dict() for kb in remote_kbs]
            body["remotes"] = [s.to_dict() for s in remote_states]
        print_json(body)
        return
    if not kbs and not remote_kbs:
        stdout().print(plain("No knowledge bases yet. Create one: kbdesk kb create NAME"))
        return
    t = table("name", "id", "scope", "docs", "chunks", "size", "status", "embedding")
    for kb in kbs:
        t.add_row(
            plain(kb.name),
            plain(kb.id[:8]),
            plain(kb.scope),
            str(kb.document_count),
            str(kb.chunk_count),
            human_bytes(kb.total_bytes),
            plain(f"{kb.health} ({kb.failed_documents} failed)" if kb.failed_documents else kb.status),
            plain(_model(kb)),
        )
    for rkb in remote_kbs:
        t.add_row(
            plain(rkb.display),
            plain(rkb.id[:8]),
            plain("remote"),
            str(rkb.document_count),
            str(rkb.chunk_count),
            "—",
            plain(rkb.status),
            plain(rkb.model_id or "keyword only"),
        )
    stdout().print(t)


@kb_group.command("show")
@click.argument("kb")
@json_option
@click.pass_obj
def show(state: CliState, kb: str, as_json: bool) -> None:
    """Show a knowledge base (by name, id or id prefix)."""
    found = state.desk().kb(kb)
    if as_json:
        print_json(found.to_dict())
        return
    t = table("field", "value")
    rows = [
        ("name", found.name),
        ("id", found.id),
        ("description", found.description or "—"),
        ("scope", found.scope),
        ("status", found.status),
        ("embedding", _model(found)),
        ("chunking", f"{found.chunk_size} chars, overlap {found.chunk_overlap}"),
        ("documents", found.document_count),
        ("chunks", found.chunk_count),
        ("size", human_bytes(found.total_bytes)),
        ("created", found.created_at),
        ("updated", found.updated_at),
    ]
    for key, value in rows:
        t.add_row(key, plain(value))  # a description may hold line breaks: shown as \n
    stdout().print(t)


@kb_group.command("rename")
@click.argument("kb")
@click.argument("new_name")
@json_option
@click.pass_obj
def rename(state: CliState, kb: str, new_name: str, as_json: bool) -> None:
    """Rename a knowledge base."""
    updated = state.desk().rename_kb(kb, new_name)
    if as_json:
        print_json(updated.to_dict())
    else:
        stdout().print(plain(f"Renamed to '{updated.name}'"))


@kb_group.command("describe")
@click.argument("kb")
@click.argument("description")
@json_option
@click.pass_obj
def describe(state: CliState, kb: str, description: str, as_json: bool) -> None:
    """Set a knowledge base's description."""
    updated = state.desk().describe_kb(kb, description)
    if as_json:
        print_json(updated.to_dict())
    else:
        stdout().print(plain(f"Description of '{updated.name}' updated"))


@kb_group.command("discoverable")
@click.argument("kb")
@click.argument("shown", metavar="yes|no", type=click.Choice(["yes", "no"]))
@json_option
@click.pass_obj
def discoverable(state: CliState, kb: str, shown: str, as_json: bool) -> None:
    """Show (yes) or hide (no) a knowledge base. On a team server a hidden global KB is
    there for system admins only; only its owner or a system admin may change this."""
    updated = state.desk().edit_kb(kb, discoverable=shown == "yes")
    if as_json:
        print_json({**updated.to_dict(), "discoverable": updated.discoverable})
    else:
        stdout().print(plain(f"'{updated.name}' is {'discoverable' if updated.discoverable else 'hidden'}"))


@kb_group.command("recount")
@click.argument("kb")
@json_option
@click.pass_obj
def recount(state: CliState, kb: str, as_json: bool) -> None:
    """Recount a knowledge base's document, chunk and byte totals."""
    updated = state.desk().recount(kb)
    if as_json:
        print_json(updated.to_dict())
    else:
        stdout().print(
            plain(
                f"'{updated.name}': {updated.document_count} documents, "
                f"{updated.chunk_count} chunks, {human_bytes(updated.total_bytes)}"
            )
        )


@kb_group.command("rm")
@click.argument("kb")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def remove(state: CliState, kb: str, yes: bool, as_json: bool) -> None:
    """Delete a knowledge base with all its documents, chunks, vectors and files."""
    desk = state.desk()
    found = desk.kb(kb)
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidInputError(f"deleting '{found.name}' needs confirmation: add --yes")
        click.confirm(
            f"Delete '{inert_line(found.name)}' with {found.document_count} documents and {found.chunk_count} chunks?",
            abort=True,
        )
    deleted = desk.delete_kb(found.id)
    if as_json:
        print_json({"deleted": True, "id": deleted.id, "name": deleted.name})
    else:
        stdout().print(plain(f"Deleted '{deleted.name}'"))


@kb_group.command("set-model")
@click.argument("kb")
@click.option("--model", "model_id", required=True, metavar="MODEL_ID", help="The new embedding model.")
@click.option("--provider", required=True, metavar="NAME", help="Provider serving it (kbdesk provider list).")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def set_model(state: CliState, kb: str, model_id: str, provider: str, yes: bool, as_json: bool) -> None:
    """Re-embed every chunk of KB with another model, then switch to it in one step."""
    from kbdesk.cli.progress import IngestProgress

    desk = state.desk()
    found = desk.kb(kb)
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidInputError(f"re-embedding '{found.name}' needs confirmation: add --yes")
        click.confirm(f"Re-embed {found.chunk_count} chunks of '{inert_line(found.name)}' with {model_id}?", abort=True)
    with IngestProgress(enabled=not as_json and sys.stderr.isatty()) as progress:
        updated, report = desk.ingestor(on_event=progress).reembed(found.id, provider, model_id)
    if as_json:
        print_json({"kb": updated.to_dict(), **report.to_dict()})
    else:
        stdout().print(
            plain(
                f"'{updated.name}' now embeds with {_model(updated)}: {report.embedded_chunks} "
                f"chunks embedded, {report.cached_chunks} from cache"
            )
        )
