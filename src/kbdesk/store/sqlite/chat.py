"""What the SQLite store keeps its own way for chat: notes' FTS5 index (the
:class:`~kbdesk.store.core.notes.NoteKeywords` of :class:`~kbdesk.store.core.notes.Notes`)
and the settings of its one user (:class:`~kbdesk.store.api.Settings`)."""

from __future__ import annotations

from kbdesk.store.core.compose import Base
from kbdesk.store.dbapi import Connection
from kbdesk.store.sqlite.lookup import fts_query


class SqliteNoteKeywords:
    """FTS5's bm25 over notes' title and text (a local file's notes are all its one user's)."""

    def candidates(self, conn: Connection, owner_id: str, text: str, k: int) -> list[tuple[str, float]]:
        """The words are quoted, never FTS syntax."""
        expr = fts_query(text)
        if not expr:
            return []
        rows = conn.execute(
            "SELECT n.id, -bm25(notes_fts) AS score FROM notes_fts f JOIN notes n ON n.seq = f.rowid "
            "WHERE notes_fts MATCH ? ORDER BY score DESC, n.seq LIMIT ?",
            (expr, k),
        ).fetchall()
        return [(r[0], float(r[1])) for r in rows]


class SqliteSettings:
    """The chat's small settings of the file's one user (the ``settings`` table)."""

    def __init__(self, base: Base) -> None:
        self.base = base

    def get_setting(self, key: str) -> str | None:
        row = self.base.connection().execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        with self.base.write() as conn:
            conn.execute(
                "INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
