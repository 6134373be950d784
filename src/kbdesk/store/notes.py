"""Notes in the SQLite store: rows, their FTS5 keyword index and one vector per note.

Mixed into :class:`kbdesk.store.sqlite.SqliteStore`. Embedding and the merged search
live in :mod:`kbdesk.chat.notes`; here are only the rows and the two rankings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kbdesk.errors import InvalidInputError, NotFoundError
from kbdesk.store.ids import new_id, utcnow
from kbdesk.store.lookup import fts_query

MAX_NOTE_CHARS = 20_000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_COLS = "id, title, content, created_at, updated_at"


@dataclass
class Note:
    id: str
    title: str
    content: str
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def clean_note_text(text: str, what: str = "note") -> str:
    text = _CONTROL.sub("", (text or "").replace("\r\n", "\n")).strip()
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInputError(f"a {what} holds at most {MAX_NOTE_CHARS} characters, this one has {len(text)}")
    return text


class NotesMixin:
    """Needs ``write()`` and ``connection()`` from the store."""

    def create_note(self, content: str, title: str = "") -> Note:
        content, title = clean_note_text(content), clean_note_text(title, "note title").replace("\n", " ")
        if not content:
            raise InvalidInputError("a note must not be empty")
        note_id, now = new_id(), utcnow()
        with self.write() as conn:
            conn.execute(f"INSERT INTO notes({_COLS}, owner_id) VALUES (?, ?, ?, ?, ?, ?)",
                         (note_id, title, content, now, now, self.local_user_id))
        return self.find_note(note_id)

    def update_note(self, note_id: str, *, content: str | None = None, title: str | None = None) -> Note:
        note = self.find_note(note_id)
        changes: dict[str, str] = {}
        if content is not None:
            changes["content"] = clean_note_text(content)
            if not changes["content"]:
                raise InvalidInputError("a note must not be empty")
        if title is not None:
            changes["title"] = clean_note_text(title, "note title").replace("\n", " ")
        changes = {k: v for k, v in changes.items() if getattr(note, k) != v}
        if changes:
            with self.write() as conn:
                sets = ", ".join(f"{c} = ?" for c in changes)
                conn.execute(f"UPDATE notes SET {sets}, updated_at = ? WHERE id = ?",
                             (*changes.values(), utcnow(), note.id))
        return self.find_note(note.id)

    def delete_note(self, note_id: str) -> Note:
        note = self.find_note(note_id)
        with self.write() as conn:
            conn.execute("DELETE FROM notes WHERE id = ?", (note.id,))
        return note

    def find_note(self, ref: str) -> Note:
        """A note by id or by a unique id prefix of 4+ characters."""
        conn = self.connection()
        ref = (ref or "").strip()
        row = conn.execute(f"SELECT {_COLS} FROM notes WHERE id = ?", (ref,)).fetchone()
        if row is None and re.fullmatch(r"[0-9a-fA-F-]{4,36}", ref):
            rows = conn.execute(f"SELECT {_COLS} FROM notes WHERE id LIKE ? LIMIT 2", (ref.lower() + "%",)).fetchall()
            if len(rows) > 1:
                raise InvalidInputError(f"'{ref}' matches more than one note id; give more of it")
            row = rows[0] if rows else None
        if row is None:
            raise NotFoundError(f"no note '{ref}'")
        return Note(*row)

    def list_notes(self, limit: int | None = None) -> list[Note]:
        sql = f"SELECT {_COLS} FROM notes ORDER BY updated_at DESC, seq DESC"
        rows = self.connection().execute(sql + (" LIMIT ?" if limit else ""), (int(limit),) if limit else ()).fetchall()
        return [Note(*r) for r in rows]

    def notes_by_id(self, ids: Sequence[str]) -> dict[str, Note]:
        if not ids:
            return {}
        rows = self.connection().execute(f"SELECT {_COLS} FROM notes WHERE id IN ({','.join('?' * len(ids))})",
                                         list(ids)).fetchall()
        return {r[0]: Note(*r) for r in rows}

    def note_count(self) -> int:
        return int(self.connection().execute("SELECT count(*) FROM notes").fetchone()[0])

    # ── the two rankings ───────────────────────────────────────────────────────
    def note_keyword_candidates(self, text: str, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (note id, BM25 score — higher is better); the words are quoted, never FTS syntax."""
        expr = fts_query(text)
        if not expr:
            return []
        rows = self.connection().execute(
            "SELECT n.id, -bm25(notes_fts) AS score FROM notes_fts f JOIN notes n ON n.seq = f.rowid "
            "WHERE notes_fts MATCH ? ORDER BY score DESC, n.seq LIMIT ?", (expr, int(k))).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def note_vector_candidates(self, model: str, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (note id, cosine) among notes embedded with ``model`` at the query's dimension."""
        rows = self.connection().execute("SELECT note_id, embedding FROM note_vectors WHERE model = ? AND dimensions = ?",
                                         (model, int(query.size))).fetchall()
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), query.size)
        scores = matrix @ query.astype(np.float32)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(rows[i][0], float(scores[i])) for i in order]

    def notes_without_vector(self, model: str, limit: int) -> list[Note]:
        rows = self.connection().execute(
            f"SELECT {', '.join('n.' + c.strip() for c in _COLS.split(','))} FROM notes n "
            "LEFT JOIN note_vectors v ON v.note_id = n.id AND v.model = ? WHERE v.note_id IS NULL "
            "ORDER BY n.updated_at DESC LIMIT ?", (model, int(limit))).fetchall()
        return [Note(*r) for r in rows]

    def put_note_vectors(self, model: str, items: Sequence[tuple[str, str, np.ndarray]]) -> int:
        """Store (note id, text it was made from, unit vector); a note whose text changed
        meanwhile is skipped. Returns how many were stored."""
        stored = 0
        with self.write() as conn:
            for note_id, text, vector in items:
                row = conn.execute("SELECT title, content FROM notes WHERE id = ?", (note_id,)).fetchone()
                if row is None or note_text(row[0], row[1]) != text:
                    continue
                conn.execute("INSERT OR REPLACE INTO note_vectors(note_id, model, dimensions, embedding) "
                             "VALUES (?, ?, ?, ?)", (note_id, model, int(vector.size),
                                                     np.asarray(vector, dtype=np.float32).tobytes()))
                stored += 1
        return stored


def note_text(title: str, content: str) -> str:
    """What a note's vector is made from."""
    return f"{title}\n\n{content}" if title else content
