"""The tools a chat model may call: ``kb_search`` (seed 000 §5) and ``note_search`` (§7).

A tool never raises into the loop: bad arguments, an unknown tool or a failed search
become an :class:`Outcome` whose ``content`` tells the model what went wrong (so it can
try again) and whose ``summary`` tells the user. Results are bounded: each passage is
cut to :data:`MAX_PASSAGE_CHARS`, the whole result to :data:`MAX_RESULT_CHARS`, and the
retrieved text reaches the model fenced as data (:func:`kbdesk.chat.safety.reference_block`).

``kb_search`` takes ``filters`` (:data:`FILTERS_SCHEMA`) so a model can narrow its own
search to some documents; they lie over the turn's default filters (the conversation's
or persona's, :func:`kbdesk.filters_text.overlay`), which every search keeps to. A bad
filter is a tool result naming the field, as any bad argument.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.chat.grounding import merge, usable
from kbdesk.chat.safety import bounded, clean, data_json, one_line, reference_block
from kbdesk.chat.tool_schemas import FILTERS_SCHEMA, KB_SEARCH_TOOL, NOTE_SEARCH_TOOL
from kbdesk.desk_api import DeskApi
from kbdesk.errors import InvalidInputError, KbdeskError
from kbdesk.filters import Filters
from kbdesk.filters_text import overlay
from kbdesk.models import KnowledgeBase
from kbdesk.remote.federation import unreached_remotes
from kbdesk.search import DEFAULT_LIMIT, MAX_LIMIT, SearchResponse

__all__ = [
    "FILTERS_SCHEMA",
    "KB_SEARCH_TOOL",
    "MAX_PASSAGE_CHARS",
    "MAX_RESULT_CHARS",
    "NOTE_SEARCH_TOOL",
    "BadArguments",
    "Outcome",
    "Toolbox",
    "parse_arguments",
]

log = logging.getLogger("kbdesk.chat")

MAX_PASSAGE_CHARS = 2_000
MAX_RESULT_CHARS = 12_000
_META_KEYS = (
    "page",
    "slide",
    "sheet",
    "chapter",
    "headings",
    "title",
    "author",
    "subject",
    "from",
    "date",
    "section",
    "heading",
    "stale",
    "indexed_at",
)


@dataclass
class Outcome:
    content: str
    """The role "tool" message for the model."""
    ok: bool
    summary: str
    """One line for the user."""
    sources: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    keyword_fallback: list[str] = field(default_factory=list)
    """KBs searched by keyword only: the query could not be embedded for them."""
    unreached: list[str] = field(default_factory=list)
    """Remotes the search could not reach, each with why: ``team (unreachable)``."""


class BadArguments(ValueError):
    pass


class Toolbox:
    """The tools of one turn, bound to its active KBs."""

    def __init__(
        self,
        desk: DeskApi,
        kbs: Sequence[KnowledgeBase],
        *,
        notes: Any = None,
        max_chars: int = MAX_RESULT_CHARS,
        filters: Filters | None = None,
    ) -> None:
        self.desk = desk
        self.kbs = list(kbs)
        self.filters = filters or Filters()  # the turn's default filters: every search keeps to them
        self.notes = notes  # a NoteService, or None when the user has no notes
        self.max_chars = min(MAX_RESULT_CHARS, max_chars)  # whole results dropped beyond (a small context)

    def definitions(self) -> list[dict[str, Any]]:
        tools = [KB_SEARCH_TOOL] if self.kbs else []
        if self.notes is not None:
            tools.append(NOTE_SEARCH_TOOL)
        return tools

    def run(self, name: str, arguments: str, *, ground: Sequence[str] = ()) -> Outcome:
        """Run tool ``name``. With ``ground`` (the turn's own queries, :mod:`.grounding`),
        a ``kb_search`` call also searches those and merges them in: a query the model
        wrote that is empty, punctuation, malformed or finds nothing still brings the
        passages for the question."""
        offered = [t["function"]["name"] for t in self.definitions()]
        try:
            if name not in offered:
                raise BadArguments(
                    f"there is no tool named {one_line(name, 60)!r}; the tools are: {', '.join(offered) or 'none'}"
                )
            if name == "kb_search" and ground:
                return self.grounded(arguments, list(ground))
            args = parse_arguments(arguments)
            if name == "kb_search":
                return self.kb_search(_query(args, name), _limit(args), filters=self.filters_of(args))
            return self.note_search(_query(args, name), _limit(args), _flag(args.get("semantic")))
        except BadArguments as exc:
            return _failed(name, str(exc))
        except KbdeskError as exc:
            return _failed(name, f"the search failed: {exc}")

    def run_auto(self, query: str | Sequence[str]) -> Outcome:
        """kbdesk's own search of these KBs for the question (``auto_search``); several
        queries (a follow-up and its standalone form) are searched and interleaved."""
        queries = [query] if isinstance(query, str) else list(query)
        try:
            refs = [kb.id for kb in self.kbs]
            responses = [self._search(refs, q, DEFAULT_LIMIT, self.filters) for q in queries]
            combined = _combine(responses, [r.results for r in responses], DEFAULT_LIMIT)
            return self.outcome(combined, "auto_search")
        except KbdeskError as exc:
            return _failed("auto_search", f"the search failed: {exc}")

    def grounded(self, arguments: str, ground: list[str]) -> Outcome:
        """A model's ``kb_search`` call merged with kbdesk's searches for the question."""
        refs = [kb.id for kb in self.kbs]
        model_query: str | None = None
        limit = DEFAULT_LIMIT
        own_filters = self.filters
        extra: dict[str, Any] = {"question": ground}
        try:
            args = parse_arguments(arguments)
            model_query = _query(args, "kb_search")
            limit = _limit(args)
        except BadArguments as exc:
            log.info("kb_search with unusable arguments (%s): searching with the question", exc)
        else:
            try:
                own_filters = self.filters_of(args)
            except BadArguments as exc:  # its query is not searched without its filter; the model reads why
                extra["filters_error"] = one_line(str(exc), 300)
                model_query = None
        if model_query is not None and (
            not usable(model_query) or (model_query in ground and own_filters == self.filters)
        ):
            model_query = None
        responses = [self._search(refs, q, DEFAULT_LIMIT, self.filters) for q in ground]
        vias: dict[tuple[Any, ...], str] = {}
        rankings = [r.results for r in responses]
        for r in responses:
            vias.update({_key(x): "auto_search" for x in r.results})
        if model_query is not None:
            own = self._search(refs, model_query, limit, own_filters)
            responses.append(own)
            rankings.append(own.results)
            vias.update({_key(x): "kb_search" for x in own.results if _key(x) not in vias})
        combined = _combine(responses, rankings, DEFAULT_LIMIT + (limit if model_query is not None else 0))
        combined.query = model_query or ""
        if model_query is not None and own_filters:
            extra["filters"] = own_filters.to_dict()
        elif self.filters:
            extra["filters"] = self.filters.to_dict()
        return self.outcome(combined, "kb_search", extra, vias=vias)

    # ── kb_search ──────────────────────────────────────────────────────────────
    def kb_search(
        self, query: str, limit: int = DEFAULT_LIMIT, via: str = "kb_search", *, filters: Filters | None = None
    ) -> Outcome:
        """Search the turn's KBs (within ``filters``, default: the turn's); a KB whose query
        cannot be embedded is searched by keyword, and the summary (and
        ``keyword_fallback`` in the result) says so."""
        filters = self.filters if filters is None else filters
        response = self._search([kb.id for kb in self.kbs], query, limit, filters)
        return self.outcome(response, via, {"filters": filters.to_dict()} if filters else None)

    def filters_of(self, args: dict[str, Any]) -> Filters:
        """The filters of a ``kb_search`` call: its ``filters`` argument over the turn's
        defaults. A bad one is :class:`BadArguments` naming the field, for the model."""
        value = args.get("filters")
        if value is None or value == "" or value == {}:
            return self.filters
        if isinstance(value, str):  # small models send the object as a string: JSON, or a filter line
            value = _filters_text(value)
        try:
            own = value if isinstance(value, Filters) else Filters.from_dict(value)
        except InvalidInputError as exc:
            raise BadArguments(
                f'{exc}; filters is an object such as {{"path": "projects/**", "type": "pdf", "tags": "q3"}}'
            ) from None
        return overlay(self.filters, own)

    def _search(self, refs: list[str], query: str, limit: int, filters: Filters) -> SearchResponse:
        response: SearchResponse = self.desk.search(refs, query, limit=limit, filters=filters or None)
        return response

    def outcome(
        self,
        response: Any,
        via: str,
        extra: dict[str, Any] | None = None,
        *,
        vias: dict[tuple[Any, ...], str] | None = None,
    ) -> Outcome:
        """The tool result of one search response (bounded, fenced as data); ``vias``
        says which search found each result when several were merged."""
        results, sources = [], []
        for result in response.results:
            metadata = {k: _clean_meta(v) for k, v in result.metadata.items() if k in _META_KEYS}
            results.append(
                {
                    "content": bounded(clean(result.content), MAX_PASSAGE_CHARS),
                    "source": clean(result.source),
                    "kb": result.kb,
                    "similarity": result.similarity,
                    "metadata": metadata,
                }
            )
            found_by = (vias or {}).get(_key(result), via)
            sources.append(_chunk_source(result, metadata, found_by, self.kbs))
        payload: dict[str, Any] = {"results": results, "query": response.query, "searched_kbs": response.searched_kbs}
        payload.update(extra or {})
        if response.keyword_fallback:
            payload["keyword_fallback"] = list(response.keyword_fallback)
        _fit(payload, self.max_chars)
        sources = sources[: len(payload["results"])]
        kbs = ", ".join(response.searched_kbs)
        summary = f"{len(payload['results'])} result{'' if len(payload['results']) == 1 else 's'} from {kbs}"
        notes = ([response.notice] if response.notice else []) + list(response.notes)
        if notes:
            summary += f" ({'; '.join(one_line(n, 160) for n in notes)})"
        return Outcome(
            reference_block(payload, label=f"{via} results"),
            True,
            summary,
            sources,
            keyword_fallback=list(response.keyword_fallback),
            unreached=unreached_remotes(response.notes),
        )

    # ── note_search ────────────────────────────────────────────────────────────
    def note_search(self, query: str, limit: int = DEFAULT_LIMIT, semantic: bool = False) -> Outcome:
        found = self.notes.search(query, semantic=semantic, limit=limit)
        results = [
            {
                "id": h.note.id,
                "title": clean(h.note.title),
                "content": bounded(clean(h.note.content), MAX_PASSAGE_CHARS),
                "score": round(h.score, 6),
                "matched": list(h.matched),
            }
            for h in found.hits
        ]
        payload: dict[str, Any] = {"results": results, "query": query, "semantic": semantic}
        _fit(payload, self.max_chars)
        sources = [
            {
                "kind": "note",
                "source": one_line(h.note.title or h.note.content, 60),
                "note_id": h.note.id,
                "similarity": round(h.score, 6),
                "via": "note_search",
            }
            for h in found.hits[: len(results)]
        ]
        summary = f"{len(payload['results'])} note{'' if len(payload['results']) == 1 else 's'}" + (
            " (keyword + meaning)" if semantic else ""
        )
        if found.notes:
            summary += f" ({'; '.join(found.notes)})"
        return Outcome(reference_block(payload, what="notes", label="note_search results"), True, summary, sources)


def _key(result: Any) -> tuple[Any, ...]:
    return (result.document_id, result.chunk_index, result.kb, result.source)


def _combine(responses: Sequence[SearchResponse], rankings: Sequence[Sequence[Any]], limit: int) -> SearchResponse:
    """One response of several searches of the same KBs: results interleaved, notes and
    keyword fallbacks of each kept once."""
    first = responses[0]
    notes = list(dict.fromkeys(n for r in responses for n in r.notes))
    fallback = list(dict.fromkeys(k for r in responses for k in r.keyword_fallback))
    return SearchResponse(
        merge(rankings, min(limit, MAX_LIMIT)),
        first.query,
        list(first.searched_kbs),
        first.mode,
        notes=notes,
        keyword_fallback=fallback,
    )


def parse_arguments(arguments: str) -> dict[str, Any]:
    text = (arguments or "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text, strict=False)  # a raw newline inside a string: small models write those
    except json.JSONDecodeError as exc:
        raise BadArguments(
            f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}); send a JSON "
            'object such as {"query": "..."}'
        ) from None
    if not isinstance(value, dict):
        raise BadArguments('the arguments must be a JSON object such as {"query": "..."}')
    return value


def _filters_text(text: str) -> Any:
    """A ``filters`` argument sent as a string: a JSON object, else a filter line
    (``tag:q3 path:work/**``)."""
    from kbdesk.filters_text import parse_line

    text = text.strip()
    if text.startswith("{"):
        try:
            return json.loads(text, strict=False)
        except json.JSONDecodeError:
            raise BadArguments(
                'filters is not valid JSON; send an object such as {"path": "projects/**", "tags": "q3"}'
            ) from None
    try:
        return parse_line(text)
    except InvalidInputError as exc:
        raise BadArguments(
            f'{exc}; filters is an object such as {{"path": "projects/**", "type": "pdf", "tags": "q3"}}'
        ) from None


def _query(args: dict[str, Any], tool: str) -> str:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadArguments(f"{tool} needs a non-empty 'query' string")
    return bounded(one_line(query, 1000), 1000)


def _limit(args: dict[str, Any]) -> int:
    value = args.get("max_results")
    if value is None or value == "":
        return DEFAULT_LIMIT
    try:
        number = int(float(value)) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None:
        raise BadArguments(f"max_results must be a whole number from 1 to {MAX_LIMIT}")
    return min(max(number, 1), MAX_LIMIT)


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _clean_meta(value: Any) -> Any:
    if isinstance(value, str):
        return one_line(value, 200)
    if isinstance(value, list):
        return [_clean_meta(v) for v in value[:8]]
    return value if isinstance(value, (int, float, bool)) or value is None else one_line(value, 200)


def _fit(payload: dict[str, Any], limit: int = MAX_RESULT_CHARS) -> None:
    """Drop trailing results until the payload fits ``limit`` characters."""
    omitted = 0
    while payload["results"] and len(data_json(payload)) > limit:
        payload["results"].pop()
        omitted += 1
    if omitted:
        payload["omitted_results"] = omitted


def _chunk_source(result: Any, metadata: dict[str, Any], via: str, kbs: Sequence[KnowledgeBase]) -> dict[str, Any]:
    headings = metadata.get("headings")
    heading = " › ".join(str(h) for h in headings) if isinstance(headings, list) and headings else None
    page = metadata.get("page") if isinstance(metadata.get("page"), int) else None
    kb_id = next((kb.id for kb in kbs if kb.name == result.kb), None)
    return {
        "kind": "chunk",
        "source": clean(result.source),
        "kb": result.kb,
        "kb_id": kb_id,
        "document_id": result.document_id,
        "chunk_index": result.chunk_index,
        "page": page,
        "heading": heading,
        "similarity": result.similarity,
        "via": via,
    }


def _failed(name: str, message: str) -> Outcome:
    text = one_line(message, 400)
    return Outcome(data_json({"error": text}), False, f"{one_line(name, 60) or 'tool'} failed: {text}", error=text)
