"""How the SQLite file's schema changed since its first form: steps 6 and on of
:data:`~.migrations.MIGRATIONS`, each a function of the connection, in order."""

from __future__ import annotations

from kbdesk.store.doc_types import NAME_RULE
from kbdesk.store.sqlite.dbapi import SqliteConnection


def m006_vector_bits(conn: SqliteConnection) -> None:
    # Sign bits of each chunk's vector (one bit per dimension, packed, padded to 64-bit
    # words) for the binary-quantised search of large KBs (store/sqlite/quantized.py). Derived
    # from kb_chunks.embedding: rows go with their chunk or when its embedding changes,
    # whatever caused it; the store writes the rows of its own inserts, and anything
    # missing is recomputed at the next load. Clustered by KB for a fast whole-KB read.
    conn.executescript("""
    CREATE TABLE kb_vector_bits (
        kb_id TEXT NOT NULL,
        seq   INTEGER NOT NULL,
        bits  BLOB NOT NULL,
        PRIMARY KEY (kb_id, seq)
    ) WITHOUT ROWID;
    CREATE TRIGGER kb_vector_bits_ad AFTER DELETE ON kb_chunks WHEN old.embedding IS NOT NULL BEGIN
        DELETE FROM kb_vector_bits WHERE kb_id = old.kb_id AND seq = old.seq;
    END;
    CREATE TRIGGER kb_vector_bits_au AFTER UPDATE OF embedding ON kb_chunks BEGIN
        DELETE FROM kb_vector_bits WHERE kb_id = old.kb_id AND seq = old.seq;
    END;
    """)


def m007_one_document_per_path(conn: SqliteConnection) -> None:
    # A source path has exactly one document row in its KB (a partial unique index).
    # The row describes the newest version seen (hash, size, mtime, status, error);
    # ``version`` moves each time a runner claims the row for new work, so a result
    # computed for an older version can never be written; ``indexed_at`` and
    # ``indexed_hash`` say which version the stored chunks come from (a row whose new
    # version failed keeps serving the older text, marked stale). ``error_kind``:
    # 'file' (the file itself cannot be indexed: remembered until it changes),
    # 'provider', 'store' or 'internal' (retried by the next add).
    # Files from older versions of kbdesk may hold several rows for one path: the
    # newest ready one (else the newest) stays, the others go with their chunks.
    conn.executescript("""
    ALTER TABLE kb_documents ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE kb_documents ADD COLUMN indexed_at TEXT;
    ALTER TABLE kb_documents ADD COLUMN indexed_hash TEXT;
    ALTER TABLE kb_documents ADD COLUMN error_kind TEXT;
    DELETE FROM kb_documents WHERE source_path IS NOT NULL AND id NOT IN (
        SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY kb_id, source_path
                        ORDER BY status = 'ready' DESC, created_at DESC, id DESC) AS n
                        FROM kb_documents WHERE source_path IS NOT NULL) WHERE n = 1);
    UPDATE kb_documents SET indexed_at = updated_at, indexed_hash = content_hash
        WHERE EXISTS (SELECT 1 FROM kb_chunks c WHERE c.document_id = kb_documents.id);
    UPDATE kb_documents SET chunk_count = (SELECT count(*) FROM kb_chunks c WHERE c.document_id = kb_documents.id);
    UPDATE knowledge_bases SET
        document_count = (SELECT count(*) FROM kb_documents d WHERE d.kb_id = knowledge_bases.id),
        chunk_count = (SELECT count(*) FROM kb_chunks c WHERE c.kb_id = knowledge_bases.id),
        total_bytes = (SELECT coalesce(sum(size_bytes), 0) FROM kb_documents d WHERE d.kb_id = knowledge_bases.id);
    DROP INDEX IF EXISTS idx_kbdoc_source;
    CREATE UNIQUE INDEX idx_kbdoc_source ON kb_documents(kb_id, source_path) WHERE source_path IS NOT NULL;
    """)


def m008_chat_retrieval(conn: SqliteConnection) -> None:
    # The retrieval policy (auto, tool, always, off; NULL: the next level decides) of a
    # conversation and of a persona, and a persona's answer length (max_tokens).
    conn.executescript("""
    ALTER TABLE channels ADD COLUMN retrieval TEXT CHECK (retrieval IN ('auto', 'tool', 'always', 'off'));
    ALTER TABLE personas ADD COLUMN retrieval TEXT CHECK (retrieval IN ('auto', 'tool', 'always', 'off'));
    ALTER TABLE personas ADD COLUMN max_tokens INTEGER CHECK (max_tokens > 0);
    """)


def m009_api_tokens(conn: SqliteConnection) -> None:
    # Bearer tokens of kbdesk serve (store/tokens.py): only a SHA-256 of each token is
    # kept; the token itself is shown once, when it is made.
    from kbdesk.store.tokens import tokens_ddl

    conn.execute(tokens_ddl("api_tokens"))


def m010_document_lookup(conn: SqliteConnection) -> None:
    # Search results read a few columns of each hit's document (name, hashes, when it was
    # indexed). Most of them come after extracted_text in the row, so a document with a
    # large text made SQLite walk its overflow pages for every hit (tens of ms per large
    # document); this index answers those reads on its own.
    conn.executescript("""
    CREATE INDEX idx_kbdoc_result ON kb_documents(id, filename, content_hash, indexed_hash, indexed_at);
    """)


def m011_keyword_cjk(conn: SqliteConnection) -> None:
    # Chinese, Japanese and Korean words inside running text (kbdesk.store.cjk): a chunk
    # with CJK characters is indexed by ``keyword_text`` (its CJK runs as characters and
    # pairs), every other chunk by its content as before. The keyword index reads the
    # view kb_chunks_keyword, so its triggers and a 'rebuild' stay plain SQL.
    from kbdesk.store.cjk import CJK_CLASS, keyword_text

    columns = {row[1] for row in conn.execute("PRAGMA table_info(kb_chunks)").fetchall()}
    if "keyword_text" not in columns:  # (run again on a file taken back to an older step)
        conn.execute("ALTER TABLE kb_chunks ADD COLUMN keyword_text TEXT")
    rows = conn.execute(f"SELECT seq, content FROM kb_chunks WHERE content GLOB '*[{CJK_CLASS}]*'").fetchall()
    for seq, content in rows:
        conn.execute("UPDATE kb_chunks SET keyword_text = ? WHERE seq = ?", (keyword_text(content), seq))
    conn.executescript("""
    DROP TRIGGER IF EXISTS kb_chunks_fts_ad;
    DROP TRIGGER IF EXISTS kb_chunks_fts_au;
    DROP TABLE IF EXISTS kb_chunks_fts;
    DROP VIEW IF EXISTS kb_chunks_keyword;
    CREATE VIEW kb_chunks_keyword AS SELECT seq, coalesce(keyword_text, content) AS content FROM kb_chunks;
    CREATE VIRTUAL TABLE kb_chunks_fts USING fts5(
        content,
        content='kb_chunks_keyword',
        content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER kb_chunks_fts_ad AFTER DELETE ON kb_chunks BEGIN
        INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, content)
        VALUES ('delete', old.seq, coalesce(old.keyword_text, old.content));
    END;
    CREATE TRIGGER kb_chunks_fts_au AFTER UPDATE OF content, keyword_text ON kb_chunks BEGIN
        INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, content)
        VALUES ('delete', old.seq, coalesce(old.keyword_text, old.content));
        INSERT INTO kb_chunks_fts(rowid, content) VALUES (new.seq, coalesce(new.keyword_text, new.content));
    END;
    INSERT INTO kb_chunks_fts(kb_chunks_fts) VALUES ('rebuild');
    """)


def m012_document_facts(conn: SqliteConnection) -> None:
    # What search filters look at (kbdesk.filters): the folder a document was added from,
    # its file type, title, tags (JSON list) and other properties (JSON: author, created,
    # date), beside filename (its path relative to that folder), source_mtime and
    # indexed_at. Documents indexed before get their file type from their name; their
    # title and tags come with their next indexing. The covering index answers a
    # filter's read of a KB's documents without walking past their extracted text.
    from kbdesk.filters import file_type_of

    conn.executescript("""
    ALTER TABLE kb_documents ADD COLUMN folder TEXT;
    ALTER TABLE kb_documents ADD COLUMN file_type TEXT NOT NULL DEFAULT '';
    ALTER TABLE kb_documents ADD COLUMN title TEXT;
    ALTER TABLE kb_documents ADD COLUMN tags TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags));
    ALTER TABLE kb_documents ADD COLUMN properties TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(properties));
    """)
    rows = conn.execute("SELECT id, filename FROM kb_documents").fetchall()
    for doc_id, filename in rows:
        kind = file_type_of(filename)
        if kind:
            conn.execute("UPDATE kb_documents SET file_type = ? WHERE id = ?", (kind, doc_id))
    conn.executescript("""
    CREATE INDEX idx_kbdoc_facts ON kb_documents(
        kb_id, chunk_count, id, filename, file_type, source_mtime, indexed_at, tags);
    """)


def m013_chat_filters(conn: SqliteConnection) -> None:
    # Default filters of a conversation's or persona's searches ("this project's folder"):
    # kbdesk.filters' JSON form as text; NULL: none.
    conn.executescript("""
    ALTER TABLE channels ADD COLUMN filters TEXT;
    ALTER TABLE personas ADD COLUMN filters TEXT;
    """)


def m014_document_dates(conn: SqliteConnection) -> None:
    # The date a document gives itself (front matter date:, an e-mail's Date:, an Office,
    # OpenDocument or EPUB file's created date) as seconds since the epoch, for filters'
    # ``date: document``; NULL without one that parses (kbdesk.filters.document_date).
    # Documents indexed before get it from the properties they keep; the covering index
    # of a filter's read takes the column in.
    import json

    from kbdesk.filters import document_date

    conn.execute("ALTER TABLE kb_documents ADD COLUMN doc_date REAL")
    for doc_id, props in conn.execute("SELECT id, properties FROM kb_documents WHERE properties != '{}'").fetchall():
        found = json.loads(props)
        dated = document_date(found) if isinstance(found, dict) else None
        if dated is not None:
            conn.execute("UPDATE kb_documents SET doc_date = ? WHERE id = ?", (dated, doc_id))
    conn.executescript("""
    DROP INDEX IF EXISTS idx_kbdoc_facts;
    CREATE INDEX idx_kbdoc_facts ON kb_documents(
        kb_id, chunk_count, id, filename, file_type, source_mtime, indexed_at, tags, doc_date);
    """)


def m015_document_rows(conn: SqliteConnection) -> None:
    # The columns a list of a KB's documents shows (Store.document_briefs: name, source,
    # size, chunks, status) sit after extracted_text in the row, so listing a KB of large
    # documents walked every document's overflow pages (measured: 180 ms for 12,500
    # documents of 40 kB against 15 ms from this index).
    conn.executescript("""
    CREATE INDEX IF NOT EXISTS idx_kbdoc_rows ON kb_documents(
        kb_id, filename, source_path, size_bytes, chunk_count, status, id);
    """)


def m016_one_document_per_name(conn: SqliteConnection) -> None:
    # One document per file name in a KB, however it came (kbdesk.store.doc_types.NAME_RULE):
    # a document an upload made (source ``upload:NAME``) is the only document of its name,
    # so an upload and ``kbdesk add`` of the same name at once cannot both insert a row —
    # the second writer is refused by the database and reads the first one's row. Files of
    # one name under different folders stay distinct documents (no upload among them).
    # Pairs an older kbdesk could leave: the newest ready row stays (with its chunks), and
    # an upload loses to the rows of files on disk unless it is that newest ready row.
    conn.executescript(f"""
    DELETE FROM kb_documents WHERE id IN (
        SELECT id FROM (
            SELECT id, upload, count(*) OVER named AS rows, max(upload) OVER named AS uploads,
                   first_value(upload) OVER ranked AS best_upload, row_number() OVER ranked AS n
            FROM (SELECT *, substr(source_path, 1, 7) = 'upload:' AS upload
                  FROM kb_documents WHERE source_path IS NOT NULL)
            WINDOW named AS (PARTITION BY kb_id, filename),
                   ranked AS (PARTITION BY kb_id, filename ORDER BY status = 'ready' DESC, updated_at DESC, id DESC))
        WHERE rows > 1 AND uploads AND n > 1 AND (best_upload OR upload));
    UPDATE knowledge_bases SET
        document_count = (SELECT count(*) FROM kb_documents d WHERE d.kb_id = knowledge_bases.id),
        chunk_count = (SELECT count(*) FROM kb_chunks c WHERE c.kb_id = knowledge_bases.id),
        total_bytes = (SELECT coalesce(sum(size_bytes), 0) FROM kb_documents d WHERE d.kb_id = knowledge_bases.id);
    DROP TRIGGER IF EXISTS kb_documents_name_bi;
    DROP TRIGGER IF EXISTS kb_documents_name_bu;
    CREATE TRIGGER kb_documents_name_bi BEFORE INSERT ON kb_documents
    WHEN new.source_path IS NOT NULL AND {_NAME_TAKEN}
    BEGIN SELECT RAISE(ABORT, '{NAME_RULE}'); END;
    CREATE TRIGGER kb_documents_name_bu BEFORE UPDATE OF kb_id, filename, source_path ON kb_documents
    WHEN new.source_path IS NOT NULL AND (new.kb_id IS NOT old.kb_id OR new.filename IS NOT old.filename
                                         OR new.source_path IS NOT old.source_path) AND {_NAME_TAKEN}
    BEGIN SELECT RAISE(ABORT, '{NAME_RULE}'); END;
    """)


# another row of the new row's name where either is an upload's (a row of the same source
# is the unique index's to refuse: an insert of it does nothing)
_NAME_TAKEN = """EXISTS (SELECT 1 FROM kb_documents d WHERE d.kb_id = new.kb_id AND d.filename = new.filename
        AND d.id != new.id AND d.source_path IS NOT NULL AND d.source_path != new.source_path
        AND (substr(new.source_path, 1, 7) = 'upload:' OR substr(d.source_path, 1, 7) = 'upload:'))"""


def m017_heading_index(conn: SqliteConnection) -> None:
    # A chunk's last heading (a definition's name, a section's title), lower-cased: keyword
    # search looks up the chunks a query names by it (kbdesk.store.headings), so a
    # definition BM25 ranks past its top k is still a candidate. Lower-cased as SQLite's
    # lower() does (ASCII), the same expression as the lookup's (store/sqlite/lookup.py).
    conn.executescript("""
    CREATE INDEX IF NOT EXISTS idx_kbchunk_heading
        ON kb_chunks(lower(json_extract(metadata, '$.headings[#-1]')), kb_id);
    """)
