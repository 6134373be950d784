"""``kbdesk search KB... QUERY``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from kbdesk.cli.filter_options import pop_filters, with_filter_options
from kbdesk.cli.output import passage, plain, print_json, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.search import MAX_LIMIT, MODES, NeedsVectorsError
from kbdesk.textsafe import inert_line

if TYPE_CHECKING:
    from rich.console import Console

    from kbdesk.models import SearchResult
    from kbdesk.search import SearchResponse

SNIPPET = 400


@click.command("search")
@click.argument("kbs", nargs=-1, required=True, metavar="KB...")
@click.argument("query")
@click.option("-n", "--limit", type=int, help=f"Results to return (1-{MAX_LIMIT}, default 5).")
@click.option(
    "-t",
    "--threshold",
    type=float,
    help="Vector: minimum cosine; hybrid: floor on the fused score (default 0.3). Not in keyword mode.",
)
@click.option("-m", "--mode", type=click.Choice(MODES), help="auto (default), vector, keyword or hybrid.")
@click.option("--full", is_flag=True, help="Print whole chunks, not snippets.")
@click.option(
    "--explain", is_flag=True, help="Show every candidate: vector and keyword rank, fused score, and what cut it."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON: results as {content, source, kb, similarity, metadata}."
)
@with_filter_options
@click.pass_obj
def search_command(
    state: CliState,
    kbs: tuple[str, ...],
    query: str,
    limit: int | None,
    threshold: float | None,
    mode: str | None,
    full: bool,
    explain: bool,
    as_json: bool,
    **flags: Any,
) -> None:
    """Search one or more knowledge bases (KB... names or ids) for QUERY.

    The filters (--path, --exclude, --type, --since, --until, --tag, --any-tag) narrow the
    search to matching documents before ranking: the best results among them come back."""
    if mode == "keyword" and threshold is not None:
        raise click.UsageError("--threshold applies to vector and hybrid search (keyword search has no cosine)")
    filters = pop_filters(flags)
    try:
        response = state.desk().search(
            list(kbs), query, limit=limit, threshold=threshold, mode=mode, explain=explain, filters=filters or None
        )
    except NeedsVectorsError as exc:
        raise NeedsVectorsError(f"{exc} (--mode keyword)") from None
    if response.notice:
        click.echo(f"notice: {inert_line(response.notice)}", err=True)
    for note in response.notes:
        click.echo(f"note: {inert_line(note)}", err=True)
    if as_json:
        body = response.to_dict()
        body["filters"] = filters.to_dict()
        if explain:
            body["explain"] = response.explain
        print_json(body)
        return
    console = stdout()
    if explain:
        _print_explain(console, response)
        return
    within = f", {filters.describe()}" if filters else ""
    if not response.results:
        console.print(plain(f"No results in {', '.join(response.searched_kbs)} ({response.mode} search{within})."))
        return
    for rank, result in enumerate(response.results, start=1):
        where = ", ".join(
            f"{k} {v}" for k, v in result.metadata.items() if k in ("page", "slide", "sheet", "headings", "section")
        )
        head = Text(f"{rank}. ", style="bold")
        head.append(f"{_score_label(result)} {result.similarity:.2f}", style="cyan")
        head.append(plain(f"  {result.kb} / {result.source}"))
        if where:
            head.append(plain(f"  ({where})", style="dim"))
        console.print(head)
        shown = result.content if full or len(result.content) <= SNIPPET else result.content[:SNIPPET].rstrip() + "…"
        console.print(passage(shown), style="")
        console.print()
    kinds = sorted(
        {SCORE_LABELS.get(str(r.metadata.get("score_kind") or "cosine"), "cosine") for r in response.results}
    )
    console.print(
        plain(
            f"{len(response.results)} results, {response.mode} search{within}, ranked by "
            f"{RANKED_BY.get(response.mode, 'score')}; {'; '.join(LEGEND[k] for k in kinds)} "
            "(--explain shows every score)",
            style="dim",
        )
    )


SCORE_LABELS = {"cosine": "cosine", "keyword coverage": "words"}
"""What a result's number is (its ``score_kind``): the cosine of its vector and the
query's, or the share of the query's words it holds ("words")."""
LEGEND = {"cosine": "cosine: closeness in meaning", "words": "words: the share of the query's words it holds"}
RANKED_BY = {
    "hybrid": "the fused score (cosine and keyword rank together)",
    "keyword": "keyword relevance (BM25)",
    "vector": "cosine",
}


def _score_label(result: SearchResult) -> str:
    return SCORE_LABELS.get(str(result.metadata.get("score_kind") or "cosine"), "cosine")


def _rank(value: object) -> str:
    return "—" if value is None else str(value)


def _print_explain(console: Console, response: SearchResponse) -> None:
    t = table(
        "#",
        "sim",
        "vec rank",
        "kw rank",
        "fused",
        "verdict",
        "source",
        title=f"{response.mode} search: every candidate",
    )
    for i, c in enumerate(response.explain or [], start=1):
        verdict = "result" if c["cut"] is None else f"cut: {c['cut']}"
        snippet = c["content"][:40].replace("\n", " ")
        t.add_row(
            str(i),
            f"{c['similarity']:.3f}",
            _rank(c["vector_rank"]),
            _rank(c["keyword_rank"]),
            "—" if c["fused"] is None else f"{c['fused']:.4f}",
            verdict,
            plain(f"{c['kb']} / {c['source']} #{c['chunk_index']}: {snippet}"),
        )
    console.print(t)
