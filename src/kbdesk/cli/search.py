"""``kbdesk search KB... QUERY``."""

from __future__ import annotations

import click
from rich.text import Text

from kbdesk.cli.output import print_json, stdout
from kbdesk.search import MAX_LIMIT, MODES

SNIPPET = 400


@click.command("search")
@click.argument("kbs", nargs=-1, required=True, metavar="KB...")
@click.argument("query")
@click.option("-n", "--limit", type=int, help=f"Results to return (1-{MAX_LIMIT}, default 5).")
@click.option("-t", "--threshold", type=float, help="Minimum cosine similarity (default 0.3).")
@click.option("-m", "--mode", type=click.Choice(MODES), help="auto (default), vector, keyword or hybrid.")
@click.option("--full", is_flag=True, help="Print whole chunks, not snippets.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the seed's result shape).")
@click.pass_obj
def search_command(state, kbs, query, limit, threshold, mode, full, as_json) -> None:
    """Search one or more knowledge bases (KB... names or ids) for QUERY."""
    response = state.desk().search(list(kbs), query, limit=limit, threshold=threshold, mode=mode)
    for note in response.notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        print_json(response.to_dict())
        return
    console = stdout()
    if not response.results:
        console.print(Text(f"No results in {', '.join(response.searched_kbs)} ({response.mode} search)."))
        return
    for rank, result in enumerate(response.results, start=1):
        where = ", ".join(f"{k} {v}" for k, v in result.metadata.items() if k in ("page", "headings", "section"))
        head = Text(f"{rank}. ", style="bold")
        head.append(f"{result.similarity:.3f}", style="cyan")
        head.append(f"  {result.kb} / {result.source}")
        if where:
            head.append(f"  ({where})", style="dim")
        console.print(head)
        body = result.content if full or len(result.content) <= SNIPPET else result.content[:SNIPPET].rstrip() + "…"
        console.print(Text(body), style="")
        console.print()
    console.print(Text(f"{len(response.results)} results, {response.mode} search", style="dim"))
