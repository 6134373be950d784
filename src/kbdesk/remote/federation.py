"""Local and remote KBs searched at once, merged into one ranking, within a budget.

:func:`federated_search` runs the local search in the calling thread and each remote's
in a thread of its own (:mod:`kbdesk.remote.registry`); a remote that has not answered
when the budget is spent (2 s by default), that is unreachable, refuses the token or
failed a moment ago (its breaker is open) is left out, and the answer says which and
why in its notes — local results never wait longer than that. The merge rule is
:func:`kbdesk.remote.ranking.merge`.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbdesk.desk_api import DeskApi
from kbdesk.errors import InvalidInputError, KbdeskError, NotFoundError
from kbdesk.models import KnowledgeBase, SearchResult
from kbdesk.remote.names import RemoteRef, display_name
from kbdesk.remote.ranking import BY_RANK, Ranked, Ranking, explain_entry, merge_scored, ranking_of
from kbdesk.remote.registry import (
    GRACE,
    SLOW,
    MalformedEntry,
    RemoteKb,
    Remotes,
    RemoteState,
    reason_of,
    run_within,
    state_of,
)
from kbdesk.search import MAX_LIMIT, SearchResponse, check_limit
from kbdesk.store.keywords import KeywordParts
from kbdesk.textnorm import nfkc


@dataclass
class FederatedResponse(SearchResponse):
    """A search's answer when remote KBs took part: which remotes answered, and how the
    lists were merged (``merged_by``: "score" or "rank")."""

    remotes: list[RemoteState] = field(default_factory=list)
    merged_by: str = "score"

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["remotes"] = [r.to_dict() for r in self.remotes]
        out["merged_by"] = self.merged_by
        return out


# ── the federated search ───────────────────────────────────────────────────────
def federated_search(
    desk: DeskApi,
    local_refs: Sequence[str],
    remote_refs: Sequence[RemoteRef],
    query: str,
    *,
    query_vector: Any = None,
    limit: int | None = None,
    threshold: float | None = None,
    mode: str | None = None,
    explain: bool = False,
    filters: Any = None,
) -> FederatedResponse:
    """Search local KBs (``local_refs``) and remote ones at once; one ranking (module docstring)."""
    cfg = desk.config.search
    limit = check_limit(limit if limit is not None else cfg.limit)
    depth = min(MAX_LIMIT, 2 * limit)  # each side's share: the merge then picks the best ``limit``
    used_threshold = threshold if threshold is not None else cfg.threshold
    remotes: Remotes = desk.remotes
    wanted: dict[str, list[str]] = {}
    for ref in remote_refs:
        wanted.setdefault(ref.remote, []).append(ref.kb)
    options = {
        "limit": depth,
        "mode": mode,
        "threshold": threshold if mode != "keyword" else None,
        "filters": filters.to_dict() if filters else None,  # the same filter on both sides
    }
    calls = {name: functools.partial(_remote_leg, remotes, name, wanted[name], query, options) for name in wanted}
    answers: dict[str, Any] = {}
    started = time.monotonic()

    def remote_side() -> None:  # each remote in a thread of its own, all within the budget
        answers.update(run_within(calls, max(remotes.budget(n) for n in wanted)))

    side = threading.Thread(target=remote_side, daemon=True, name="remote-legs")
    side.start()
    local: SearchResponse | None = None
    rankings: list[Ranking] = []
    if local_refs:
        local = desk.search(
            list(local_refs),
            query,
            query_vector=query_vector,
            limit=depth,
            threshold=threshold,
            mode=mode,
            explain=True,
            filters=filters,
        )
        kbs = [desk.kb(ref) for ref in local_refs]
        rankings.append(local_ranking(desk, kbs, query, local, threshold=used_threshold))
    side.join(max(0.0, max(remotes.budget(n) for n in wanted) - (time.monotonic() - started)) + GRACE + 0.05)
    states: list[RemoteState] = []
    notes: list[str] = list(local.notes) if local else []
    fallback: list[str] = list(local.keyword_fallback) if local else []
    searched = list(local.searched_kbs) if local else []
    errors: list[BaseException] = []
    for name in wanted:
        outcome = answers.get(name, SLOW)
        if outcome is SLOW:
            state = RemoteState(name, "slow", f"no answer within {remotes.budget(name):g} s")
        elif isinstance(outcome, BaseException):
            if not isinstance(outcome, KbdeskError):
                raise outcome
            errors.append(outcome)
            state = RemoteState(name, state_of(outcome), reason_of(outcome, name))
        else:
            ranking, body, kbs_searched = outcome
            rankings.append(ranking)
            state = RemoteState(name, "searched", None, [kb.display for kb in kbs_searched])
            searched.extend(state.kbs)
            notes.extend(f"remote '{name}': {n}" for n in _strings(body.get("notes")))
            fallback.extend(display_name(name, k) for k in _strings(body.get("keyword_fallback")))
            left_out = body.get("left_out") or []
            if left_out:
                many = f"{len(left_out)} results" if len(left_out) > 1 else "a result"
                notes.append(f"remote '{name}': {many} left out: its answer gave {left_out[0]}")
        dropped = remotes.dropped(name)
        if dropped:
            notes.append(dropped)
        if state.state != "searched":
            notes.append(state.note)
        states.append(state)
    if local is None and not any(s.state == "searched" for s in states):
        if errors:
            raise errors[0]
        raise _TimedOut(states[0].note)
    scored, rule = merge_scored(rankings, limit)
    results = [x.result for _, x in scored]
    if rule == BY_RANK:
        notes.append(
            "local and remote results merged by rank: their scores are not comparable "
            "(another embedding model, mode or fusion)"
        )
    modes = {r.mode for r in rankings if r.ranked} or {r.mode for r in rankings}
    response = FederatedResponse(
        results,
        (query or "").strip(),
        searched,
        modes.pop() if len(modes) == 1 else "mixed",
        notes=notes,
        keyword_fallback=fallback,
        remotes=states,
        merged_by=rule,
    )
    if explain:  # the merged results, then what the local search cut (the remote's cuts stay there)
        cut = [e for e in (local.explain or []) if e.get("cut") is not None] if local is not None else []
        response.explain = [explain_entry(score, x) for score, x in scored] + cut
    return response


def local_ranking(
    desk: DeskApi, kbs: Sequence[KnowledgeBase], query: str, response: SearchResponse, *, threshold: float
) -> Ranking:
    """The desk's own results (``response``, a search of ``kbs``) as one ranking to merge with
    other servers': each KB's model and vector dimensions, and its results' keyword parts."""
    cfg = desk.config.search
    dims = {kb.id: desk.store.kb_vector_dimensions(kb.id) for kb in kbs}
    models = [(kb.model_id, dim) for kb in kbs if kb.model_id and (dim := dims[kb.id])]
    parts = keyword_parts(desk.store, [kb.id for kb in kbs], query, response)
    return ranking_of(response, fusion=cfg.fusion, alpha=cfg.alpha, threshold=threshold, models=models, parts=parts)


def keyword_parts(store: Any, kb_ids: list[str], query: str, response: SearchResponse) -> KeywordParts | None:
    """What the keyword scores of ``response``'s results are made of (None: no keyword
    scores among them), so they can be put on one scale with other sides'."""
    chunks = [
        (e["document_id"], e["chunk_index"])
        for e in response.explain or []
        if e.get("cut") is None and e.get("keyword_score") is not None and e.get("document_id")
    ]
    return store.keyword_parts(kb_ids, nfkc((query or "").strip()), chunks) if chunks else None


class _TimedOut(KbdeskError):
    """Every source of a search was a remote, and none answered in time."""


def _remote_leg(
    remotes: Remotes, name: str, refs: list[str], query: str, options: dict[str, Any]
) -> tuple[Ranking, dict[str, Any], list[RemoteKb]]:
    deadline = time.monotonic() + remotes.budget(name)  # listing its KBs and searching them: one budget
    kbs = remotes.resolve(name, refs, deadline=deadline)
    if not kbs:
        raise NotFoundError(f"remote '{name}' has no knowledge base this token may read")
    client = remotes.client(name)
    body = remotes._guarded(name, lambda: client.search([kb.id for kb in kbs], query, deadline=deadline, **options))
    return ranking_from_wire(name, body, kbs), body, kbs


def ranking_from_wire(name: str, body: dict[str, Any], kbs: Sequence[RemoteKb]) -> Ranking:
    """A remote's ``POST /search`` answer as a :class:`Ranking`; each result cites the
    remote KB (``team:Product Docs``) and keeps the server's document, page and headings.
    The answer is data from a stranger: a result of the wrong shape is left out (and
    counted in ``body["left_out"]``, the search's notes say so), a bad ranking field reads
    as absent — never a crash that would lose the other sources' results."""
    by_id = {kb.id: kb for kb in kbs}
    raw_models = body.get("models")
    ranked: list[Ranked] = []
    left_out: list[str] = []
    data = body.get("data")
    for item in data if isinstance(data, list) else []:
        try:
            ranked.append(_ranked_from_wire(name, item, by_id, len(ranked) + 1))
        except MalformedEntry as exc:
            left_out.append(str(exc))
    body["left_out"] = left_out
    models = sorted(
        (m["model_id"], m["dimensions"])
        for m in (raw_models if isinstance(raw_models, list) else [])
        if isinstance(m, dict)
        and isinstance(m.get("model_id"), str)
        and m["model_id"]
        and isinstance(m.get("dimensions"), int)
        and not isinstance(m.get("dimensions"), bool)
    )
    mode, fusion = body.get("mode"), body.get("fusion")
    ranking = Ranking(
        name,
        ranked,
        mode if mode in ("vector", "keyword", "hybrid") else "keyword",
        fusion if isinstance(fusion, str) else "",
        _num(body.get("alpha")) or 0.0,
        _num(body.get("threshold")) or 0.0,
        _num(body.get("best_keyword")),
        models,
    )
    stats = body.get("keyword_stats")
    if isinstance(stats, dict) and _count(stats.get("rows")) and isinstance(stats.get("df"), dict):
        df = {w: n for w, n in stats["df"].items() if isinstance(w, str) and _count(n) is not None}
        ranking.keyword_rows, ranking.keyword_df = _count(stats.get("rows")), df
    return ranking


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _parts(value: Any) -> dict[str, float] | None:
    """A result's keyword score split by word, from the wire (None when malformed)."""
    if not isinstance(value, dict) or len(value) > 200:
        return None
    out: dict[str, float] = {}
    for word, part in value.items():
        number = _num(part)
        if not isinstance(word, str) or number is None:
            return None
        out[word] = number
    return out


def _ranked_from_wire(name: str, item: Any, by_id: dict[str, RemoteKb], rank: int) -> Ranked:
    if not isinstance(item, dict):
        raise MalformedEntry("a result that is not an object")
    content, source = item.get("content"), item.get("source")
    if not isinstance(content, str) or not isinstance(source, str):
        raise MalformedEntry("a result without its text and source")
    similarity = item.get("similarity", 0.0)
    if _num(similarity) is None and similarity is not None:
        raise MalformedEntry(f"a similarity that is not a number ({type(similarity).__name__})")
    raw = item.get("score")
    score: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kb_id = item.get("kb_id")
    kb = by_id.get(kb_id) if isinstance(kb_id, str) else None
    kb_name = kb.name if kb is not None else (item["kb"] if isinstance(item.get("kb"), str) else "")
    metadata = dict(item["metadata"]) if isinstance(item.get("metadata"), dict) else {}
    document_id = item.get("document_id")
    metadata.update(
        {
            "remote": name,
            "remote_kb_id": kb_id if isinstance(kb_id, str) else None,
            "remote_document_id": document_id if isinstance(document_id, str) else None,
        }
    )
    chunk_index = item.get("chunk_index")
    result = SearchResult(
        content,
        source,
        display_name(name, kb_name),
        _num(similarity) or 0.0,
        metadata,
        document_id=None,  # a document of another server: cited, never opened here
        chunk_index=chunk_index if isinstance(chunk_index, int) and not isinstance(chunk_index, bool) else None,
    )
    return Ranked(
        result,
        rank,
        _num(score.get("cosine")),
        _num(score.get("keyword")),
        _num(score.get("fused")),
        _parts(score.get("keyword_parts")),
    )


def _num(value: Any) -> float | None:
    """A finite number from the wire, else None (JSON from Python may carry NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _strings(value: Any) -> list[str]:
    """A list of strings from the wire (anything else: none), each one line, bounded."""
    if not isinstance(value, list):
        return []
    return [" ".join(v.split())[:300] for v in value[:20] if isinstance(v, str)]


_NOT_SEARCHED = re.compile(r"^remote '([^']+)' was not searched \((.*)\): results from the other sources only$")


def unreached_remotes(notes: Sequence[str]) -> list[str]:
    """The remotes a search's notes say were not searched, as ``team (unreachable: …)``
    (the notes survive merging several responses into one, so they are read back here)."""
    out: list[str] = []
    for note in notes:
        match = _NOT_SEARCHED.match(note)
        if match and match.group(1) not in (o.split(" ", 1)[0] for o in out):
            out.append(f"{match.group(1)} ({_short(match.group(2))})")
    return out


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def refuse_change(ref: str, remote: str) -> InvalidInputError:
    """The one-line error for a change asked of a remote KB."""
    return InvalidInputError(
        f"'{ref}' is a knowledge base of the remote '{remote}': it is read-only from this desk "
        "(search, ask and chat reach it; change it on its server)"
    )
