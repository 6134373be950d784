"""What the SQLite store keeps its own way for chat: notes' FTS5 index and the settings
of its one user (hooks of :mod:`kbdesk.store.core.chat` and :mod:`kbdesk.store.core.notes`)."""

from __future__ import annotations

from typing import Any

from kbdesk.store.core.parts import StoreParts
from kbdesk.store.sqlite.lookup import fts_query


class SqliteChat(StoreParts):
    """Needs ``write()`` and ``connection()`` from the store."""

    def _note_keyword_candidates(self, conn: Any, text: str, k: int) -> list[tuple[str, float]]:
        """FTS5's bm25 over title and text; the words are quoted, never FTS syntax."""
        expr = fts_query(text)
        if not expr:
            return []
        rows = conn.execute(
            "SELECT n.id, -bm25(notes_fts) AS score FROM notes_fts f JOIN notes n ON n.seq = f.rowid "
            "WHERE notes_fts MATCH ? ORDER BY score DESC, n.seq LIMIT ?",
            (expr, k),
        ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def get_setting(self, key: str) -> str | None:
        row = self.connection().execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
