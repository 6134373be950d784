"""What the Postgres store keeps its own way for chat: notes' BM25 over their tsvector
(the :class:`~kbdesk.store.core.notes.NoteKeywords` of :class:`~kbdesk.store.core.notes.Notes`),
one set of settings per user (:class:`~kbdesk.store.api.Settings`), and whether this
database keeps conversations at all (:func:`keeps_chat`)."""

from __future__ import annotations

import kbdesk.store.postgres.keyword as keyword
from kbdesk.store.core.compose import Base
from kbdesk.store.dbapi import Connection

_LEXEMES = (
    "SELECT l.lexeme FROM unnest(%s::text[]) WITH ORDINALITY AS w(word, i) CROSS JOIN LATERAL "
    "unnest(tsvector_to_array(to_tsvector('kbdesk_porter'::regconfig, w.word))) AS l(lexeme) "
    "ORDER BY w.i, l.lexeme"
)
# FTS5's bm25 over this user's notes, the statistics counted in the same statement: each
# matching note's query lexemes with their tf, each lexeme's document frequency, its IDF
# once per query term naming it (two query words of one lexeme count twice, as two FTS5
# phrases do), and the score of every matching note; only the best k leave the server
_BM25 = """
WITH hits AS (
    SELECT n.id, n.seq, n.keyword_length AS dl, u.lexeme, array_length(u.positions, 1) AS tf
    FROM kbdesk_notes n, unnest(ts_filter(setweight(n.content_tsv, 'A', %(lexemes)s::text[]), '{a}')) AS u
    WHERE n.owner_id = %(owner)s AND n.content_tsv @@ %(gate)s::tsquery),
stats AS (
    SELECT count(*)::float8 AS rows, coalesce(nullif(avg(keyword_length), 0), 1)::float8 AS avgdl
    FROM kbdesk_notes WHERE owner_id = %(owner)s),
idf AS (
    SELECT d.lexeme, ln((s.rows - d.df + 0.5) / (d.df + 0.5)) AS value
    FROM (SELECT lexeme, count(*) AS df FROM hits GROUP BY lexeme) d CROSS JOIN stats s),
weights AS (
    SELECT t.lexeme, sum(CASE WHEN i.value > 0 THEN i.value ELSE %(floor)s END) AS w
    FROM unnest(%(terms)s::text[]) AS t(lexeme) JOIN idf i ON i.lexeme = t.lexeme GROUP BY t.lexeme)
SELECT h.id, sum(w.w * h.tf * %(k1p1)s / (h.tf + %(k1)s * (1 - %(b)s + %(b)s * h.dl / s.avgdl))) AS score
FROM hits h JOIN weights w ON w.lexeme = h.lexeme CROSS JOIN stats s
GROUP BY h.id, h.seq ORDER BY score DESC, h.seq LIMIT %(k)s
"""


def keeps_chat(conn: Connection) -> bool:
    """Whether this database keeps conversations: kbdesk's own ``channels`` table (a
    team server's own is not changed)."""
    return bool(
        conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('channels') "
            "AND attname = 'persona_id' AND NOT attisdropped)"
        ).fetchone()[0]
    )


class PgNoteKeywords:
    """FTS5's bm25 over one user's notes, counted on the server."""

    def candidates(self, conn: Connection, owner_id: str, text: str, k: int) -> list[tuple[str, float]]:
        """FTS5's bm25 (same k1, b, IDF and tokenisation as KB chunks, :mod:`.keyword`),
        with the statistics of this user's notes counted now: notes are few."""
        words = keyword.query_words(text)
        terms = [r[0] for r in conn.execute(_LEXEMES, (words,)).fetchall()] if words else []
        if not terms:
            return []
        lexemes = sorted(set(terms))
        rows = conn.execute(
            _BM25,
            {
                "lexemes": lexemes,
                "terms": terms,
                "owner": owner_id,
                "gate": keyword.tsquery_text(lexemes),
                "floor": keyword.IDF_FLOOR,
                "k1": keyword.K1,
                "k1p1": keyword.K1 + 1.0,
                "b": keyword.B,
                "k": k,
            },
        ).fetchall()
        return [(note_id, float(score)) for note_id, score in rows]


class PgSettings:
    """The chat's small settings, one set per user (``kbdesk_user_settings``)."""

    def __init__(self, base: Base) -> None:
        self.base = base

    def get_setting(self, key: str) -> str | None:
        row = (
            self.base.connection()
            .execute(
                "SELECT value FROM kbdesk_user_settings WHERE owner_id = %s AND key = %s",
                (self.base.local_user_id, key),
            )
            .fetchone()
        )
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        with self.base.write() as conn:
            conn.execute(
                "INSERT INTO kbdesk_user_settings(owner_id, key, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (owner_id, key) DO UPDATE SET value = excluded.value",
                (self.base.local_user_id, key, value),
            )
