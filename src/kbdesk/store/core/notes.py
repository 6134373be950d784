"""Notes, for both engines: rows, one vector per note, and the two rankings.

Each note belongs to one user. Keyword candidates are the engine's own index (FTS5's
bm25 on SQLite, BM25 over a tsvector on Postgres: the :class:`NoteKeywords` it is given);
vectors are few (one per note) and ranked here by exact cosine, the same on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from kbdesk.cpu_threads import scan
from kbdesk.errors import InvalidInputError
from kbdesk.store.core.compose import Base
from kbdesk.store.core.own_rows import OwnRows
from kbdesk.store.dbapi import Connection
from kbdesk.store.engine import Engine
from kbdesk.store.ids import new_id
from kbdesk.store.notes import Note, clean_note_text, note_text

_COLS = "id, title, content, created_at, updated_at"
_N_COLS = ", ".join(f"n.{c}" for c in _COLS.split(", "))


class NoteKeywords(Protocol):
    """An engine's keyword ranking of one user's notes."""

    def candidates(self, conn: Connection, owner_id: str, text: str, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (note id, BM25 score — higher is better) of ``owner_id``'s notes for
        ``text`` (its words, never query syntax)."""
        ...


class Notes:
    """This user's notes: rows, one vector per note, and the two rankings."""

    def __init__(self, base: Base, rows: OwnRows, keywords: NoteKeywords) -> None:
        self.base = base
        self.rows = rows
        self.keywords = keywords

    @property
    def db(self) -> Engine:
        return self.base.db

    def _note(self, row: Sequence[Any]) -> Note:
        return Note(*self.rows.row(row, (3, 4)))

    def create_note(self, content: str, title: str = "") -> Note:
        content, title = clean_note_text(content), clean_note_text(title, "note title").replace("\n", " ")
        if not content:
            raise InvalidInputError("a note must not be empty")
        note_id, now = new_id(), self.db.now()
        with self.base.write() as conn:
            conn.execute(
                self.db.table_sql(f"INSERT INTO {{notes}}({_COLS}, owner_id) VALUES (?, ?, ?, ?, ?, ?)"),
                (note_id, title, content, now, now, self.base.local_user_id),
            )
        return self.find_note(note_id)

    def update_note(self, note_id: str, *, content: str | None = None, title: str | None = None) -> Note:
        """Change a note; its vector goes (made again from the new text when next embedded)."""
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
            with self.base.write() as conn:
                sets = ", ".join(f"{c} = ?" for c in changes)
                conn.execute(
                    self.db.table_sql(f"UPDATE {{notes}} SET {sets}, updated_at = ? WHERE id = ?"),
                    (*changes.values(), self.db.now(), note.id),
                )
                self.db.delete(conn, self.db.table("note_vectors"), "note_id = ?", (note.id,))
        return self.find_note(note.id)

    def delete_note(self, note_id: str) -> Note:
        return self.rows.delete("notes", self.find_note(note_id))

    def find_note(self, ref: str) -> Note:
        """This user's note by id or by a unique id prefix of 4+ characters."""
        return self._note(self.rows.find("notes", _COLS, ref, "note"))

    def list_notes(self, limit: int | None = None) -> list[Note]:
        sql = f"SELECT {_COLS} FROM {{notes}} WHERE owner_id = ? ORDER BY updated_at DESC, seq DESC"
        args: list[Any] = [self.base.local_user_id]
        if limit:
            sql, args = sql + " LIMIT ?", [*args, int(limit)]
        return [self._note(r) for r in self.base.connection().execute(self.db.table_sql(sql), args).fetchall()]

    def notes_by_id(self, ids: Sequence[str]) -> dict[str, Note]:
        ids = list(ids)[: self.db.list_chunk]
        if not ids:
            return {}
        where, args = self.db.in_list("id", ids, ids=True)
        rows = (
            self.base.connection()
            .execute(
                self.db.table_sql(f"SELECT {_COLS} FROM {{notes}} WHERE {where} AND owner_id = ?"),
                [*args, self.base.local_user_id],
            )
            .fetchall()
        )
        return {r[0]: self._note(r) for r in rows}

    def note_count(self) -> int:
        return int(
            self.base.connection()
            .execute(self.db.table_sql("SELECT count(*) FROM {notes} WHERE owner_id = ?"), (self.base.local_user_id,))
            .fetchone()[0]
        )

    # ── the two rankings ───────────────────────────────────────────────────────
    def note_keyword_candidates(self, text: str, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (note id, BM25 score — higher is better) of this user's notes; the
        words are the user's words, never query syntax."""
        if k <= 0 or not (text or "").strip():
            return []
        return self.keywords.candidates(self.base.connection(), self.base.local_user_id, text, int(k))

    def note_vector_candidates(self, model: str, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (note id, cosine) among notes embedded with ``model`` at the query's dimension."""
        rows = (
            self.base.connection()
            .execute(
                self.db.table_sql(
                    "SELECT v.note_id, v.embedding FROM {note_vectors} v JOIN {notes} n ON n.id = v.note_id "
                    "WHERE v.model = ? AND v.dimensions = ? AND n.owner_id = ?"
                ),
                (model, int(query.size), self.base.local_user_id),
            )
            .fetchall()
        )
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32).reshape(len(rows), query.size)
        scores = scan(matrix, query.astype(np.float32))
        order = np.argsort(-scores, kind="stable")[:k]
        return [(rows[i][0], float(scores[i])) for i in order]

    def notes_without_vector(self, model: str, limit: int) -> list[Note]:
        rows = (
            self.base.connection()
            .execute(
                self.db.table_sql(
                    f"SELECT {_N_COLS} FROM {{notes}} n "
                    "LEFT JOIN {note_vectors} v ON v.note_id = n.id AND v.model = ? "
                    "WHERE v.note_id IS NULL AND n.owner_id = ? ORDER BY n.updated_at DESC LIMIT ?"
                ),
                (model, self.base.local_user_id, int(limit)),
            )
            .fetchall()
        )
        return [self._note(r) for r in rows]

    def put_note_vectors(self, model: str, items: Sequence[tuple[str, str, np.ndarray]]) -> int:
        """Store (note id, text it was made from, unit vector); a note whose text changed
        meanwhile (or that is gone) is skipped. Returns how many were stored."""
        stored = 0
        with self.base.write() as conn:
            for note_id, text, vector in items:
                row = conn.execute(
                    self.db.table_sql("SELECT title, content FROM {notes} WHERE id = ?" + self.db.for_update),
                    (note_id,),
                ).fetchone()
                if row is None or note_text(row[0], row[1]) != text:
                    continue
                conn.execute(
                    self.db.table_sql(
                        "INSERT INTO {note_vectors}(note_id, model, dimensions, embedding, created_at) "
                        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (note_id) DO UPDATE SET model = excluded.model, "
                        "dimensions = excluded.dimensions, embedding = excluded.embedding, "
                        "created_at = excluded.created_at"
                    ),
                    (note_id, model, int(vector.size), np.asarray(vector, dtype=np.float32).tobytes(), self.db.now()),
                )
                stored += 1
        return stored
