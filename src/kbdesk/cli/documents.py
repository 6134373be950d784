"""``kbdesk docs`` (a KB's documents with their status) and ``kbdesk doc status | rm``."""

from __future__ import annotations

from typing import Any

import click

from kbdesk.cli.output import human_bytes, plain, print_json, stdout, table
from kbdesk.cli.state import CliState


@click.command("docs")
@click.argument("kb")
@click.option(
    "--status",
    type=click.Choice(["pending", "extracting", "chunking", "embedding", "ready", "error"]),
    help="Only documents in this status.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def docs_command(state: CliState, kb: str, status: str | None, as_json: bool) -> None:
    """List the documents of KB with status, chunks, size and error."""
    desk = state.desk()
    found = desk.kb(kb)
    docs = desk.documents(found.id, status)
    if as_json:
        print_json({"data": [d.to_dict() for d in docs], "total": len(docs)})
        return
    if not docs:
        stdout().print(plain(f"No documents in '{found.name}'. Add some: kbdesk add '{found.name}' PATH"))
        return
    t = table("filename", "id", "status", "chunks", "size", "error")
    for d in docs:
        t.add_row(
            plain(d.filename), d.id[:8], _status(d), str(d.chunk_count), human_bytes(d.size_bytes), plain(d.error or "")
        )
    stdout().print(t)


@click.group("doc")
def doc_group() -> None:
    """One document: its status, or removing it."""


@doc_group.command("status")
@click.argument("kb")
@click.argument("doc")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def doc_status(state: CliState, kb: str, doc: str, as_json: bool) -> None:
    """Status of DOC (id, id prefix or filename) in KB: id, status, chunk count, error."""
    desk = state.desk()
    found = desk.document(kb, doc)
    view = {
        "id": found.id,
        "status": found.status,
        "chunk_count": found.chunk_count,
        "error": found.error,
        "filename": found.filename,
    }
    if as_json:
        print_json(view)
    else:
        line = f"{found.filename}: {_status(found)}, {found.chunk_count} chunks"
        stdout().print(plain(line + (f" — {found.error}" if found.error else "")))


def _status(doc: Any) -> str:
    """A document's status, saying when search still serves an older version."""
    if doc.stale:
        return f"{doc.status} (search has the version of {(doc.indexed_at or '')[:16].replace('T', ' ')})"
    return doc.status


@doc_group.command("rm")
@click.argument("kb")
@click.argument("doc")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def doc_rm(state: CliState, kb: str, doc: str, as_json: bool) -> None:
    """Delete DOC from KB with its chunks, vectors and stored file."""
    desk = state.desk()
    found = desk.document(kb, doc)
    desk.delete_document(found.id)
    if as_json:
        print_json({"deleted": True, "id": found.id, "filename": found.filename})
    else:
        stdout().print(plain(f"Deleted {found.filename}"))
