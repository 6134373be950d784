"""What the Postgres store keeps its own way for chat: notes' BM25 over their tsvector,
one set of settings per user, and whether this database keeps conversations at all
(hooks of :mod:`kbdesk.store.core.chat` and :mod:`kbdesk.store.core.notes`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kbdesk.store.api import BLOBS, CHAT
import kbdesk.store.postgres.keyword as keyword

_LEXEMES = ("SELECT l.lexeme FROM unnest(%s::text[]) WITH ORDINALITY AS w(word, i) CROSS JOIN LATERAL "
            "unnest(tsvector_to_array(to_tsvector('kbdesk_porter'::regconfig, w.word))) AS l(lexeme) "
            "ORDER BY w.i, l.lexeme")
# each matching note's length and, per query lexeme it holds, how often (tf)
_HITS = ("SELECT n.id, n.seq, n.keyword_length, u.lexeme, array_length(u.positions, 1) FROM kbdesk_notes n, "
         "unnest(ts_filter(setweight(n.content_tsv, 'A', %s::text[]), '{a}')) AS u "
         "WHERE n.owner_id = %s AND n.content_tsv @@ %s::tsquery")


class PgChat:
    """Needs ``write()``, ``connection()`` and ``local_user_id`` from the store."""

    local_user_id: str
    _keeps_chat: bool | None = None

    @property
    def capabilities(self) -> frozenset[str]:
        """Original files in the database always; chat where conversations can be kept:
        kbdesk's own ``channels`` table (a team server's own is not changed)."""
        if self._keeps_chat is None:
            self._keeps_chat = bool(self.connection().execute(
                "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('channels') "
                "AND attname = 'persona_id' AND NOT attisdropped)").fetchone()[0])
        return frozenset({BLOBS, CHAT}) if self._keeps_chat else frozenset({BLOBS})

    def _note_keyword_candidates(self, conn: Any, text: str, k: int) -> list[tuple[str, float]]:
        """FTS5's bm25 (same k1, b, IDF and tokenisation as KB chunks, :mod:`.keyword`),
        with the statistics of this user's notes counted now: notes are few."""
        words = keyword.query_words(text)
        terms = [r[0] for r in conn.execute(_LEXEMES, (words,)).fetchall()] if words else []
        if not terms:
            return []
        lexemes = sorted(set(terms))
        rows, tokens = conn.execute("SELECT count(*), coalesce(sum(keyword_length), 0) FROM kbdesk_notes "
                                    "WHERE owner_id = %s", (self.local_user_id,)).fetchone()
        hits = conn.execute(_HITS, (lexemes, self.local_user_id, keyword.tsquery_text(lexemes))).fetchall()
        if not hits:
            return []
        df = Counter(lexeme for _, _, _, lexeme, _ in hits)
        weight: Counter[str] = Counter()
        for term in terms:  # a lexeme two query words make counts twice, as two FTS5 phrases do
            weight[term] += keyword.idf(int(rows), df[term])
        avgdl = int(tokens) / int(rows) or 1.0
        scores: dict[str, float] = {}
        order: dict[str, int] = {}
        for note_id, seq, length, lexeme, tf in hits:
            norm = keyword.K1 * (1 - keyword.B + keyword.B * (length or 0) / avgdl)
            scores[note_id] = scores.get(note_id, 0.0) + weight[lexeme] * tf * (keyword.K1 + 1) / (tf + norm)
            order[note_id] = int(seq)
        best = sorted(scores, key=lambda i: (-scores[i], order[i]))[:k]
        return [(i, scores[i]) for i in best]

    def get_setting(self, key: str) -> str | None:
        row = self.connection().execute("SELECT value FROM kbdesk_user_settings WHERE owner_id = %s AND key = %s",
                                        (self.local_user_id, key)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        with self.write() as conn:
            conn.execute("INSERT INTO kbdesk_user_settings(owner_id, key, value) VALUES (%s, %s, %s) "
                         "ON CONFLICT (owner_id, key) DO UPDATE SET value = excluded.value",
                         (self.local_user_id, key, value))
