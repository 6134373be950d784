"""Notes (seed 000 §7): short texts with keyword search and, when an embedding model is
set, search by meaning — the two merged without duplicates.

A note is a single-chunk document: its title and text are embedded with the embedding
role's model (``roles.embedding`` in config.toml) when it is written. A note that could
not be embedded then (no model set, server down) is embedded the next time a semantic
search runs, so it is never lost to that search for long.
"""

from __future__ import annotations

import builtins
import logging
from dataclasses import dataclass, field
from typing import Any, cast

from kbdesk.desk_api import DeskApi
from kbdesk.errors import KbdeskError
from kbdesk.search import DEFAULT_THRESHOLD, RRF_K, check_limit
from kbdesk.store.api import ChatStore, Store
from kbdesk.store.notes import Note, note_text
from kbdesk.store.unit_vectors import normalise

log = logging.getLogger("kbdesk.chat")

EMBED_BACKLOG = 100
"""Most notes embedded by one semantic search (older notes still missing a vector)."""


@dataclass(frozen=True)
class NoteHit:
    note: Note
    score: float
    """Cosine similarity when the note matched by meaning, else its keyword score relative
    to the best keyword hit (1.0)."""
    matched: tuple[str, ...]
    """"keyword", "semantic" or both."""

    def to_dict(self) -> dict[str, Any]:
        return {**self.note.to_dict(), "score": round(self.score, 6), "matched": list(self.matched)}


@dataclass
class NoteSearch:
    hits: list[NoteHit]
    query: str
    semantic: bool
    notes: list[str] = field(default_factory=list)
    """What the user should know (no embedding model, so keyword only...)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "results": [h.to_dict() for h in self.hits],
            "query": self.query,
            "semantic": self.semantic,
            "notes": list(self.notes),
        }


def require_chat(store: Store) -> ChatStore:
    """``store`` as the chat store it is: conversations, personas, projects and notes need a
    store with the "chat" capability (a one-line error otherwise)."""
    from kbdesk.errors import StoreError
    from kbdesk.store.api import CHAT

    if CHAT not in store.capabilities:
        raise StoreError(
            f"this {store.kind} database keeps no conversations, personas, projects or notes: its "
            "channels table is a team server's own, which kbdesk leaves as it is"
        )
    return cast(ChatStore, store)


class NoteService:
    def __init__(self, desk: DeskApi) -> None:
        require_chat(desk.store)
        self.desk = desk
        self.store: ChatStore = require_chat(desk.store)

    # ── writing ────────────────────────────────────────────────────────────────
    def add(self, content: str, title: str = "") -> tuple[Note, str | None]:
        """Create a note; returns it and a warning when it could not be embedded now."""
        note = self.store.create_note(content, title)
        return note, self._embed([note])

    def edit(self, ref: str, *, content: str | None = None, title: str | None = None) -> tuple[Note, str | None]:
        note = self.store.update_note(self.store.find_note(ref).id, content=content, title=title)
        return note, self._embed([note])

    def remove(self, ref: str) -> Note:
        return self.store.delete_note(self.store.find_note(ref).id)

    def get(self, ref: str) -> Note:
        return self.store.find_note(ref)

    def list(self, limit: int | None = None) -> list[Note]:
        return self.store.list_notes(limit)

    # ── searching ──────────────────────────────────────────────────────────────
    def search(
        self, query: str, *, semantic: bool = False, limit: int | None = None, threshold: float = DEFAULT_THRESHOLD
    ) -> NoteSearch:
        """Keyword matches; with ``semantic`` also matches by meaning, fused by reciprocal
        rank (a note found both ways appears once, ranked higher)."""
        limit = check_limit(limit)
        query = (query or "").strip()
        result = NoteSearch([], query, semantic)
        if not query:
            return result
        pool = max(limit * 5, 50)
        keyword = self.store.note_keyword_candidates(query, pool)
        vector: list[tuple[str, float]] = []
        if semantic:
            vector = self._vector_hits(query, pool, threshold, result.notes)
        fused: dict[str, float] = {}
        matched: dict[str, list[str]] = {}
        best_kw = keyword[0][1] if keyword and keyword[0][1] > 0 else 1.0
        score: dict[str, float] = {}
        for rank, (note_id, kw) in enumerate(keyword, start=1):
            fused[note_id] = fused.get(note_id, 0.0) + 1.0 / (RRF_K + rank)
            matched.setdefault(note_id, []).append("keyword")
            score[note_id] = max(kw, 0.0) / best_kw
        for rank, (note_id, cosine) in enumerate(vector, start=1):
            fused[note_id] = fused.get(note_id, 0.0) + 1.0 / (RRF_K + rank)
            matched.setdefault(note_id, []).append("semantic")
            score[note_id] = cosine
        order = sorted(fused, key=lambda i: (-fused[i], -score[i], i))[:limit]
        notes = self.store.notes_by_id(order)
        result.hits = [NoteHit(notes[i], score[i], tuple(matched[i])) for i in order if i in notes]
        return result

    def _vector_hits(
        self, query: str, pool: int, threshold: float, notes: builtins.list[str]
    ) -> builtins.list[tuple[str, float]]:
        target = self._embedder()
        if target is None:
            notes.append("no embedding model is set (roles.embedding in config.toml): keyword matches only")
            return []
        provider, model = target
        warning = self._embed(self.store.notes_without_vector(model, EMBED_BACKLOG))
        if warning:
            notes.append(warning)
        try:
            raw = provider.embed([query], model).vectors[0]
            vector = normalise(raw, what="query vector")
        except KbdeskError as exc:
            notes.append(f"the query could not be embedded ({exc}): keyword matches only")
            return []
        return [(i, c) for i, c in self.store.note_vector_candidates(model, vector, pool) if c >= threshold]

    # ── embedding ──────────────────────────────────────────────────────────────
    def _embedder(self) -> tuple[Any, str] | None:
        """(provider, model) of the embedding role, or None when none is set up."""
        role = self.desk.config.roles.embedding
        if not role.model:
            return None
        name = role.provider
        if not name and len(self.desk.config.providers) == 1:
            name = next(iter(self.desk.config.providers))
        if not name:
            return None
        try:
            return self.desk.embedders.provider(name), role.model
        except KbdeskError:
            return None

    def _embed(self, notes: builtins.list[Note]) -> str | None:
        if not notes:
            return None
        target = self._embedder()
        if target is None:
            return None  # keyword search still finds it; said when a semantic search runs
        provider, model = target
        texts = [note_text(n.title, n.content) for n in notes]
        try:
            result = provider.embed(texts, model, on_input_error="collect")
        except KbdeskError as exc:
            log.warning("notes: embedding failed: %s", exc)
            return f"the note could not be embedded now ({exc}); it will be at the next semantic search"
        items = []
        for note, text, raw in zip(notes, texts, result.vectors, strict=True):
            if raw is not None:
                try:
                    items.append((note.id, text, normalise(raw, what="note vector")))
                except KbdeskError:
                    continue
        self.store.put_note_vectors(model, items)
        return None
