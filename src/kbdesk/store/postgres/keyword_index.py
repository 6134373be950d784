"""The keyword index on Postgres (:mod:`.keyword` ranks with it): the statistics BM25 needs,
kept exact per KB in two tables of kbdesk's own:

- ``kbdesk_keyword_kbs(kb_id, chunks, tokens)``: N and the sum of dl;
- ``kbdesk_keyword_terms(kb_id, lexeme, chunks)``: n per lexeme (rows at 0 are removed);

and each chunk's dl in ``kb_chunks.keyword_length`` (generated). Triggers on
``kb_chunks`` move them in the transaction that inserts, deletes or rewrites chunks —
COPY, cascades from a document or KB deletion and ``TRUNCATE`` included — so they are
exact whatever path wrote the rows (a seed writer's too). The statement-level
triggers aggregate a whole batch into one upsert per table, the per-KB row first and
lexemes in order, so writers of one KB queue on that row and never deadlock on lexemes.

Tokenisation is FTS5's ``porter unicode61`` as far as Postgres allows: the text is
indexed with ASCII punctuation turned into spaces (``kbdesk_keyword_text``), so the
default parser sees runs of letters and digits as unicode61 does ("covid-19" is
``covid`` and ``19``, never the signed number ``-19``; "1.5" is ``1`` and ``5``), and
the configuration ``kbdesk_porter`` stems every token with Postgres's Snowball copy of
the original Porter stemmer, stopwords kept, as FTS5 does; dl counts those runs.
Diacritics are folded as FTS5's ``remove_diacritics 2`` folds them: the same
``translate`` maps every precomposed Latin, Greek and Cyrillic letter to its base letter
(:func:`kbdesk.textnorm.diacritic_pairs`; in a UTF-8 database), and query words get
:func:`kbdesk.textnorm.fold_diacritics`, so "cafe" finds "café" on both engines. What
differs: FTS5 leaves tokens under three letters unstemmed ("ms" stays, Postgres makes
it "m"), and a few characters split or join tokens differently (the default parser's
rules for non-ASCII text).
"""

from __future__ import annotations

from kbdesk.store.cjk import CJK_CLASS
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.textnorm import diacritic_pairs

# ASCII punctuation, each turned into a space before the parser sees the text
_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_MAX_TEXT = 262144  # a tsvector stops at 1 MB: the first 256k characters are indexed


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def keyword_text_sql(utf8: bool = True, cjk: str = "") -> str:
    """The body of ``kbdesk_keyword_text(content)`` (pg_catalog functions, and ``cjk``:
    the qualified name of :func:`cjk_sql`'s function): ASCII punctuation to spaces and,
    in a UTF-8 database, accented letters to their base and CJK runs as their characters
    and pairs (:mod:`kbdesk.store.cjk`)."""
    accented, plain = diacritic_pairs() if utf8 else ("", "")
    text = f"pg_catalog.left(content, {_MAX_TEXT})"
    if utf8 and cjk:
        text = f"pg_catalog.left({cjk}({text}), {_MAX_TEXT})"
    return (
        f"SELECT pg_catalog.translate({text}, "
        f"E{_literal(_escape(_PUNCTUATION + accented))}, {_literal(' ' * len(_PUNCTUATION) + plain)})"
    )


def cjk_sql() -> str:
    """The body of ``kbdesk_keyword_cjk(content)``: each run of CJK characters as its
    characters then its overlapping pairs, space-separated — :func:`kbdesk.store.cjk.keyword_text`
    in SQL, so both engines index the same tokens (text without CJK is returned as is)."""
    run = f"[{CJK_CLASS}]"
    return f"""SELECT CASE WHEN content !~ '{run}' THEN content ELSE (
        SELECT pg_catalog.string_agg(CASE WHEN r.m[1] IS NULL THEN r.m[2] ELSE
            ' ' || (SELECT pg_catalog.string_agg(pg_catalog.substr(r.m[1], i, 1), ' ' ORDER BY i)
                    FROM pg_catalog.generate_series(1, pg_catalog.length(r.m[1])) AS i)
            || coalesce(' ' || (SELECT pg_catalog.string_agg(pg_catalog.substr(r.m[1], i, 2), ' ' ORDER BY i)
                    FROM pg_catalog.generate_series(1, pg_catalog.length(r.m[1]) - 1) AS i), '')
            || ' ' END, '' ORDER BY r.n)
        FROM pg_catalog.regexp_matches(content, '({run}+)|([^{CJK_CLASS}]+)', 'g')
             WITH ORDINALITY AS r(m, n)) END"""


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\")


def keyword_length_sql(server_version: int, cjk: str = "") -> str:
    """The body of ``kbdesk_keyword_length(content)``: runs of letters and digits, as
    unicode61 counts tokens (``regexp_count`` from PostgreSQL 15 on), in the text as
    indexed (CJK runs as characters and pairs when ``cjk`` names that function)."""
    text = f"pg_catalog.left(content, {_MAX_TEXT})"
    token = "'[[:alnum:]]+'"
    if cjk:
        text = f"pg_catalog.left({cjk}({text}), {_MAX_TEXT})"
        token = f"'[[:alnum:]{CJK_CLASS}]+'"
    if server_version >= 150000:
        return f"SELECT pg_catalog.regexp_count({text}, {token})"
    return f"SELECT pg_catalog.count(*)::int FROM pg_catalog.regexp_matches({text}, {token}, 'g')"


# FTS5's tokenizer is "porter unicode61": every token indexed (no stopwords), stemmed by
# Martin Porter's original algorithm. Postgres ships that stemmer among its Snowball
# ones ("porter"); kbdesk's configuration uses it, without a stopword list, for every
# token type the default parser gives (the english configuration would stem with Porter2
# and leave out its stopwords, "t" of "T cells" among them).
CONFIG = "kbdesk_porter"
TSV_EXPRESSION = f"to_tsvector('{CONFIG}'::regconfig, kbdesk_keyword_text(content))"


def _ensure_config(conn: PgConnection) -> None:
    """The text search configuration ``kbdesk_porter`` (and its dictionary), once."""
    exists = "SELECT 1 FROM {} WHERE {} = %s AND {} = current_schema()::regnamespace"
    if not conn.execute(exists.format("pg_ts_dict", "dictname", "dictnamespace"), (CONFIG + "_stem",)).fetchone():
        conn.execute(f"CREATE TEXT SEARCH DICTIONARY {CONFIG}_stem (TEMPLATE = snowball, Language = porter)")
    if not conn.execute(exists.format("pg_ts_config", "cfgname", "cfgnamespace"), (CONFIG,)).fetchone():
        conn.execute(f"CREATE TEXT SEARCH CONFIGURATION {CONFIG} (COPY = pg_catalog.english)")
        for old in ("english_stem", "simple"):
            conn.execute(
                f"ALTER TEXT SEARCH CONFIGURATION {CONFIG} ALTER MAPPING REPLACE pg_catalog.{old} WITH {CONFIG}_stem"
            )


def install(conn: PgConnection) -> None:
    """The ``keyword_stats`` migration: functions, columns, tables, triggers, and the
    statistics of the chunks already stored. Idempotent; the table rewrite (a new
    ``content_tsv`` and ``keyword_length``) happens only when they are not there yet."""
    version = int(conn.execute("SHOW server_version_num").fetchone()[0])
    utf8 = conn.execute("SHOW server_encoding").fetchone()[0].upper() in ("UTF8", "UTF-8")
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    path = f"pg_catalog, {_ident(schema)}, pg_temp"
    cjk = f"{_ident(schema)}.kbdesk_keyword_cjk" if utf8 else ""
    if cjk:
        conn.execute(
            f"CREATE OR REPLACE FUNCTION kbdesk_keyword_cjk(content text) RETURNS text "
            f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$ {cjk_sql()} $f$"
        )
    body = keyword_text_sql(utf8, cjk)
    old_body = conn.execute(
        "SELECT prosrc FROM pg_proc WHERE proname = 'kbdesk_keyword_text' "
        "AND pronamespace = current_schema()::regnamespace"
    ).fetchone()
    conn.execute(
        f"CREATE OR REPLACE FUNCTION kbdesk_keyword_text(content text) RETURNS text "
        f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$ {body} $f$"
    )
    conn.execute(
        f"CREATE OR REPLACE FUNCTION kbdesk_keyword_length(content text) RETURNS int "
        f"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$ {keyword_length_sql(version, cjk)} $f$"
    )
    _ensure_config(conn)
    current = conn.execute(
        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid "
        "AND a.attnum = d.adnum WHERE d.adrelid = 'kb_chunks'::regclass AND a.attname = 'content_tsv'"
    ).fetchone()
    has_length = conn.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = 'kb_chunks'::regclass "
        "AND attname = 'keyword_length' AND NOT attisdropped"
    ).fetchone()
    # a stored generated column keeps what the old function computed: a new body means a rewrite
    changed = old_body is not None and old_body[0].strip() != body.strip()
    if changed or not current or "kbdesk_keyword_text" not in current[0] or CONFIG not in current[0] or not has_length:
        # one rewrite of kb_chunks for both columns (the GIN index goes with the old column)
        conn.execute(
            f"ALTER TABLE kb_chunks DROP COLUMN IF EXISTS content_tsv, DROP COLUMN IF EXISTS keyword_length, "
            f"ADD COLUMN content_tsv tsvector GENERATED ALWAYS AS ({TSV_EXPRESSION}) STORED, "
            f"ADD COLUMN keyword_length int GENERATED ALWAYS AS (kbdesk_keyword_length(content)) STORED, "
            f"ALTER COLUMN content_tsv SET STORAGE MAIN"
        )
    # every candidate row's tsvector is read, its text only for the results: a row too
    # wide for its page moves the text out of line first (measured: keyword queries
    # 15-25 % faster than with the tsvector in the TOAST table)
    conn.execute("ALTER TABLE kb_chunks ALTER COLUMN content_tsv SET STORAGE MAIN")
    conn.execute("CREATE INDEX IF NOT EXISTS idx_kbchunk_tsv ON kb_chunks USING gin (content_tsv)")
    for statement in _STATS_DDL:
        conn.execute(statement.replace("@PATH@", path))
    conn.execute("SELECT kbdesk_keyword_rebuild()")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# Trigger functions run as their owner (the role that migrated), with a fixed
# search_path: whoever may write chunks keeps the statistics right without any
# privilege on the statistics tables.
_STATS_DDL = [
    """CREATE TABLE IF NOT EXISTS kbdesk_keyword_kbs (
        kb_id  UUID PRIMARY KEY REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        chunks BIGINT NOT NULL,
        tokens BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS kbdesk_keyword_terms (
        kb_id  UUID NOT NULL,
        lexeme TEXT NOT NULL,
        chunks INT NOT NULL,
        PRIMARY KEY (kb_id, lexeme)
    )""",
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_added() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    BEGIN
        INSERT INTO kbdesk_keyword_kbs AS s (kb_id, chunks, tokens)
            SELECT kb_id, count(*), coalesce(sum(keyword_length), 0) FROM kbdesk_added GROUP BY kb_id ORDER BY kb_id
        ON CONFLICT (kb_id) DO UPDATE SET chunks = s.chunks + excluded.chunks, tokens = s.tokens + excluded.tokens;
        INSERT INTO kbdesk_keyword_terms AS s (kb_id, lexeme, chunks)
            SELECT a.kb_id, l.lexeme, count(*)
            FROM kbdesk_added a, unnest(tsvector_to_array(a.content_tsv)) AS l(lexeme)
            GROUP BY a.kb_id, l.lexeme ORDER BY a.kb_id, l.lexeme
        ON CONFLICT (kb_id, lexeme) DO UPDATE SET chunks = s.chunks + excluded.chunks;
        RETURN NULL;
    END $f$""",
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_removed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    DECLARE
        kbs uuid[];
        lexemes text[];
    BEGIN
        UPDATE kbdesk_keyword_kbs s SET chunks = s.chunks - r.n, tokens = s.tokens - r.t
        FROM (SELECT kb_id, count(*) AS n, coalesce(sum(keyword_length), 0) AS t FROM kbdesk_removed
              GROUP BY kb_id) r WHERE s.kb_id = r.kb_id;
        WITH gone AS (SELECT r.kb_id, l.lexeme, count(*) AS n FROM kbdesk_removed r,
                             unnest(tsvector_to_array(r.content_tsv)) AS l(lexeme) GROUP BY r.kb_id, l.lexeme),
             moved AS (UPDATE kbdesk_keyword_terms s SET chunks = s.chunks - g.n FROM gone g
                       WHERE s.kb_id = g.kb_id AND s.lexeme = g.lexeme RETURNING s.kb_id, s.lexeme, s.chunks)
        SELECT array_agg(kb_id), array_agg(lexeme) INTO kbs, lexemes FROM moved WHERE chunks <= 0;
        IF kbs IS NOT NULL THEN
            DELETE FROM kbdesk_keyword_terms s USING unnest(kbs, lexemes) AS z(kb_id, lexeme)
            WHERE s.kb_id = z.kb_id AND s.lexeme = z.lexeme AND s.chunks <= 0;
        END IF;
        RETURN NULL;
    END $f$""",
    # a chunk rewritten in place (an import's INSERT … ON CONFLICT DO UPDATE): out with
    # the old row's counts, in with the new one's
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    BEGIN
        UPDATE kbdesk_keyword_kbs SET chunks = chunks - 1, tokens = tokens - OLD.keyword_length
        WHERE kb_id = OLD.kb_id;
        UPDATE kbdesk_keyword_terms SET chunks = chunks - 1
        WHERE kb_id = OLD.kb_id AND lexeme = ANY(tsvector_to_array(OLD.content_tsv));
        DELETE FROM kbdesk_keyword_terms WHERE kb_id = OLD.kb_id AND lexeme = ANY(tsvector_to_array(OLD.content_tsv))
            AND chunks <= 0;
        INSERT INTO kbdesk_keyword_kbs AS s (kb_id, chunks, tokens) VALUES (NEW.kb_id, 1, NEW.keyword_length)
        ON CONFLICT (kb_id) DO UPDATE SET chunks = s.chunks + 1, tokens = s.tokens + excluded.tokens;
        INSERT INTO kbdesk_keyword_terms AS s (kb_id, lexeme, chunks)
            SELECT NEW.kb_id, l.lexeme, 1 FROM unnest(tsvector_to_array(NEW.content_tsv)) AS l(lexeme) ORDER BY l.lexeme
        ON CONFLICT (kb_id, lexeme) DO UPDATE SET chunks = s.chunks + 1;
        RETURN NULL;
    END $f$""",
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_truncated() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    BEGIN
        DELETE FROM kbdesk_keyword_terms;
        DELETE FROM kbdesk_keyword_kbs;
        RETURN NULL;
    END $f$""",
    # Recount everything from kb_chunks (the migration; a repair after writes made with
    # triggers disabled, e.g. session_replication_role = replica).
    """CREATE OR REPLACE FUNCTION kbdesk_keyword_rebuild() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @PATH@ AS $f$
    BEGIN
        LOCK TABLE kb_chunks IN SHARE MODE;
        DELETE FROM kbdesk_keyword_terms;
        DELETE FROM kbdesk_keyword_kbs;
        INSERT INTO kbdesk_keyword_kbs (kb_id, chunks, tokens)
            SELECT kb_id, count(*), coalesce(sum(keyword_length), 0) FROM kb_chunks GROUP BY kb_id;
        INSERT INTO kbdesk_keyword_terms (kb_id, lexeme, chunks)
            SELECT c.kb_id, l.lexeme, count(*) FROM kb_chunks c, unnest(tsvector_to_array(c.content_tsv)) AS l(lexeme)
            GROUP BY c.kb_id, l.lexeme;
    END $f$""",
    # a repair for the tables' owner (it locks kb_chunks): nobody else may call it
    "REVOKE ALL ON FUNCTION kbdesk_keyword_rebuild() FROM PUBLIC",
    "DROP TRIGGER IF EXISTS kbdesk_keyword_ai ON kb_chunks",
    "DROP TRIGGER IF EXISTS kbdesk_keyword_ad ON kb_chunks",
    "DROP TRIGGER IF EXISTS kbdesk_keyword_au ON kb_chunks",
    "DROP TRIGGER IF EXISTS kbdesk_keyword_at ON kb_chunks",
    "CREATE TRIGGER kbdesk_keyword_ai AFTER INSERT ON kb_chunks REFERENCING NEW TABLE AS kbdesk_added "
    "FOR EACH STATEMENT EXECUTE FUNCTION kbdesk_keyword_added()",
    "CREATE TRIGGER kbdesk_keyword_ad AFTER DELETE ON kb_chunks REFERENCING OLD TABLE AS kbdesk_removed "
    "FOR EACH STATEMENT EXECUTE FUNCTION kbdesk_keyword_removed()",
    # (transition tables cannot go with a column list: a row trigger, for the rare rewrite;
    # the re-embedding UPDATE of vectors never fires it)
    "CREATE TRIGGER kbdesk_keyword_au AFTER UPDATE OF content, kb_id ON kb_chunks FOR EACH ROW "
    "WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.kb_id IS DISTINCT FROM NEW.kb_id) "
    "EXECUTE FUNCTION kbdesk_keyword_changed()",
    "CREATE TRIGGER kbdesk_keyword_at AFTER TRUNCATE ON kb_chunks FOR EACH STATEMENT "
    "EXECUTE FUNCTION kbdesk_keyword_truncated()",
]
