"""Schema migrations for the SQLite store: an ordered list, recorded in a table.

Tables mirror seed 000 §1 (``knowledge_bases``, ``kb_documents``, ``kb_chunks``,
``channel_knowledge_bases``) with SQLite types: UUIDs as text, JSONB as JSON text,
timestamps as ISO-8601 UTC text. Never edit a migration that has shipped; append one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from kbdesk.errors import SchemaTooNewError, StoreError
from kbdesk.store.doc_types import NAME_RULE

NOW = "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"


def _m001_core(conn: Any) -> None:
    conn.executescript(f"""
    CREATE TABLE settings (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE users (
        id         TEXT PRIMARY KEY,
        username   TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE TABLE teams (
        id         TEXT PRIMARY KEY,
        name       TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE TABLE channels (
        id         TEXT PRIMARY KEY,
        title      TEXT NOT NULL DEFAULT '',
        owner_id   TEXT REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL DEFAULT {NOW},
        updated_at TEXT NOT NULL DEFAULT {NOW}
    );

    CREATE TABLE knowledge_bases (
        id               TEXT PRIMARY KEY,
        name             TEXT NOT NULL,
        description      TEXT NOT NULL DEFAULT '',
        scope            TEXT NOT NULL DEFAULT 'personal'
                         CHECK (scope IN ('global', 'team', 'personal')),
        owner_id         TEXT REFERENCES users(id) ON DELETE CASCADE,
        team_id          TEXT REFERENCES teams(id) ON DELETE CASCADE,
        embedding_config TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(embedding_config)),
        document_count   INTEGER NOT NULL DEFAULT 0,
        chunk_count      INTEGER NOT NULL DEFAULT 0,
        total_bytes      INTEGER NOT NULL DEFAULT 0,
        status           TEXT NOT NULL DEFAULT 'active'
                         CHECK (status IN ('active', 'processing', 'error')),
        discoverable     INTEGER NOT NULL DEFAULT 1 CHECK (discoverable IN (0, 1)),
        created_at       TEXT NOT NULL DEFAULT {NOW},
        updated_at       TEXT NOT NULL DEFAULT {NOW},
        CONSTRAINT kb_scope_check CHECK (
            (scope = 'global' AND owner_id IS NULL) OR
            (scope = 'team' AND team_id IS NOT NULL) OR
            (scope = 'personal' AND owner_id IS NOT NULL)
        )
    );
    CREATE INDEX idx_kb_scope ON knowledge_bases(scope);
    CREATE INDEX idx_kb_owner ON knowledge_bases(owner_id) WHERE owner_id IS NOT NULL;
    CREATE INDEX idx_kb_team ON knowledge_bases(team_id) WHERE team_id IS NOT NULL;
    CREATE UNIQUE INDEX idx_kb_name ON knowledge_bases(name COLLATE NOCASE);

    CREATE TABLE kb_documents (
        id             TEXT PRIMARY KEY,
        kb_id          TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        filename       TEXT NOT NULL,
        content_type   TEXT NOT NULL,
        size_bytes     INTEGER NOT NULL,
        storage_key    TEXT NOT NULL,
        extracted_text TEXT,
        chunk_count    INTEGER NOT NULL DEFAULT 0,
        status         TEXT NOT NULL DEFAULT 'pending' CHECK (status IN
                       ('pending', 'extracting', 'chunking', 'embedding', 'ready', 'error')),
        error          TEXT,
        uploaded_by    TEXT NOT NULL REFERENCES users(id),
        content_hash   TEXT,
        source_path    TEXT,
        created_at     TEXT NOT NULL DEFAULT {NOW},
        updated_at     TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE INDEX idx_kbdoc_kb ON kb_documents(kb_id);
    CREATE INDEX idx_kbdoc_hash ON kb_documents(kb_id, content_hash);
    CREATE INDEX idx_kbdoc_source ON kb_documents(kb_id, source_path);

    -- seq is the integer key shared with the keyword (FTS5) and vector (vec0) indexes;
    -- id is the seed's UUID. embedding holds the unit-normalised float32 vector at the
    -- KB's own dimension (no zero padding), or NULL when the KB has no embedding model.
    CREATE TABLE kb_chunks (
        seq         INTEGER PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        kb_id       TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        document_id TEXT NOT NULL REFERENCES kb_documents(id) ON DELETE CASCADE,
        chunk_index INTEGER NOT NULL,
        content     TEXT NOT NULL,
        token_count INTEGER NOT NULL DEFAULT 0,
        embedding   BLOB,
        metadata    TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(metadata)),
        created_at  TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE INDEX idx_kbchunk_kb ON kb_chunks(kb_id);
    CREATE INDEX idx_kbchunk_doc ON kb_chunks(document_id, chunk_index);

    CREATE TABLE channel_knowledge_bases (
        channel_id TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
        kb_id      TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        enabled    INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
        added_at   TEXT NOT NULL DEFAULT {NOW},
        PRIMARY KEY (channel_id, kb_id)
    );
    CREATE INDEX idx_channel_kb_kb ON channel_knowledge_bases(kb_id);

    -- No foreign keys: the history outlives what it describes.
    CREATE TABLE audit_log (
        id         INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL DEFAULT {NOW},
        user_id    TEXT,
        action     TEXT NOT NULL,
        kb_id      TEXT,
        target     TEXT,
        details    TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(details))
    );
    CREATE INDEX idx_audit_kb ON audit_log(kb_id);

    CREATE TABLE usage_log (
        id                INTEGER PRIMARY KEY,
        created_at        TEXT NOT NULL DEFAULT {NOW},
        user_id           TEXT,
        role              TEXT NOT NULL,
        provider          TEXT NOT NULL DEFAULT '',
        model             TEXT NOT NULL DEFAULT '',
        kb_id             TEXT,
        prompt_tokens     INTEGER,
        completion_tokens INTEGER,
        total_tokens      INTEGER,
        inputs            INTEGER NOT NULL DEFAULT 0
    );
    """)


def _m002_keyword_index(conn: Any) -> None:
    # External-content FTS5 over kb_chunks.content. Inserts are written by the store in
    # bulk, in the transaction that inserts the chunks (a per-row trigger measured 2x
    # slower, docs/BENCHMARKS.md); deletes and updates, cascades included, reach the
    # index through these triggers whatever caused them.
    conn.executescript("""
    CREATE VIRTUAL TABLE kb_chunks_fts USING fts5(
        content,
        content='kb_chunks',
        content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER kb_chunks_fts_ad AFTER DELETE ON kb_chunks BEGIN
        INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, content)
        VALUES ('delete', old.seq, old.content);
    END;
    CREATE TRIGGER kb_chunks_fts_au AFTER UPDATE OF content ON kb_chunks BEGIN
        INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, content)
        VALUES ('delete', old.seq, old.content);
        INSERT INTO kb_chunks_fts(rowid, content) VALUES (new.seq, new.content);
    END;
    INSERT INTO kb_chunks_fts(kb_chunks_fts) VALUES ('rebuild');
    """)


def _m003_vector_state(conn: Any) -> None:
    # One row per KB that holds vectors. ``version`` moves on every change to the KB's
    # vectors (by trigger for deletes and updates, whatever caused them; by the store,
    # once per transaction, for its bulk inserts); a derived index (a sqlite-vec table,
    # a numpy matrix in memory) is fresh while it was built at the current version.
    conn.executescript("""
    CREATE TABLE kb_vector_state (
        kb_id           TEXT PRIMARY KEY REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        dimensions      INTEGER NOT NULL CHECK (dimensions > 0),
        version         INTEGER NOT NULL DEFAULT 0,
        indexed_version INTEGER NOT NULL DEFAULT -1
    );
    CREATE TRIGGER kb_vec_ad AFTER DELETE ON kb_chunks WHEN old.embedding IS NOT NULL BEGIN
        UPDATE kb_vector_state SET version = version + 1 WHERE kb_id = old.kb_id;
    END;
    CREATE TRIGGER kb_vec_au AFTER UPDATE OF embedding ON kb_chunks BEGIN
        UPDATE kb_vector_state SET version = version + 1 WHERE kb_id = new.kb_id;
    END;
    """)


def _m004_ingestion(conn: Any) -> None:
    # extracted_sections: JSON [[start, end, metadata], ...] over extracted_text, so a
    # rebuild re-chunks with page numbers and heading paths intact.
    # claimed_by: "host:pid" of the process working on a document, so a restart resumes
    # only documents whose worker is gone. replaces_id: the older version of the same
    # file, removed in the transaction that makes this one ready. embedding_cache:
    # vectors by (provider/model, hash of the chunk text), so unchanged text is never
    # embedded twice.
    conn.executescript(f"""
    ALTER TABLE kb_documents ADD COLUMN source_mtime REAL;
    ALTER TABLE kb_documents ADD COLUMN claimed_by TEXT;
    ALTER TABLE kb_documents ADD COLUMN replaces_id TEXT;
    ALTER TABLE kb_documents ADD COLUMN extracted_sections TEXT;
    CREATE INDEX idx_kbdoc_status ON kb_documents(status);
    ALTER TABLE kb_chunks ADD COLUMN content_hash TEXT;
    CREATE INDEX idx_kbchunk_hash ON kb_chunks(content_hash);
    CREATE TABLE embedding_cache (
        model      TEXT NOT NULL,
        text_hash  TEXT NOT NULL,
        dimensions INTEGER NOT NULL,
        embedding  BLOB NOT NULL,
        created_at TEXT NOT NULL DEFAULT {NOW},
        PRIMARY KEY (model, text_hash)
    ) WITHOUT ROWID;
    """)


def _m005_chat(conn: Any) -> None:
    # Chat (seed 000 §5-§8, seed 002): the seed's ``channels`` are conversations; their
    # KB toggles are ``channel_knowledge_bases``. Personas and projects bind KBs too
    # (resolution: persona -> project -> conversation -> personal). Messages keep the
    # wire roles; ``notice`` rows (errors, fallbacks) are shown but never sent to a model.
    # Notes carry their own keyword index and one stored vector per note.
    conn.executescript(f"""
    CREATE TABLE personas (
        id            TEXT PRIMARY KEY,
        name          TEXT NOT NULL,
        system_prompt TEXT NOT NULL DEFAULT '',
        provider      TEXT,
        model         TEXT,
        owner_id      TEXT REFERENCES users(id) ON DELETE SET NULL,
        created_at    TEXT NOT NULL DEFAULT {NOW},
        updated_at    TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE UNIQUE INDEX idx_persona_name ON personas(name COLLATE NOCASE);
    CREATE TABLE persona_knowledge_bases (
        persona_id  TEXT NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
        kb_id       TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        auto_search INTEGER NOT NULL DEFAULT 0 CHECK (auto_search IN (0, 1)),
        added_at    TEXT NOT NULL DEFAULT {NOW},
        PRIMARY KEY (persona_id, kb_id)
    );
    CREATE INDEX idx_persona_kb_kb ON persona_knowledge_bases(kb_id);
    CREATE TABLE projects (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        owner_id    TEXT REFERENCES users(id) ON DELETE SET NULL,
        created_at  TEXT NOT NULL DEFAULT {NOW},
        updated_at  TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE UNIQUE INDEX idx_project_name ON projects(name COLLATE NOCASE);
    CREATE TABLE project_knowledge_bases (
        project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        kb_id      TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        added_at   TEXT NOT NULL DEFAULT {NOW},
        PRIMARY KEY (project_id, kb_id)
    );
    CREATE INDEX idx_project_kb_kb ON project_knowledge_bases(kb_id);
    ALTER TABLE channels ADD COLUMN persona_id TEXT REFERENCES personas(id) ON DELETE SET NULL;
    ALTER TABLE channels ADD COLUMN project_id TEXT REFERENCES projects(id) ON DELETE SET NULL;
    CREATE INDEX idx_channel_project ON channels(project_id);

    CREATE TABLE chat_messages (
        seq          INTEGER PRIMARY KEY,
        id           TEXT NOT NULL UNIQUE,
        channel_id   TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
        role         TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'notice')),
        content      TEXT NOT NULL DEFAULT '',
        tool_call_id TEXT,
        status       TEXT NOT NULL DEFAULT 'complete'
                     CHECK (status IN ('complete', 'error', 'cancelled')),
        model        TEXT,
        sources      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(sources)),
        created_at   TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE INDEX idx_chat_messages_channel ON chat_messages(channel_id, seq);
    CREATE TABLE chat_tool_calls (
        id         TEXT PRIMARY KEY,
        message_id TEXT NOT NULL REFERENCES chat_messages(id) ON DELETE CASCADE,
        position   INTEGER NOT NULL,
        call_id    TEXT NOT NULL,
        name       TEXT NOT NULL,
        arguments  TEXT NOT NULL DEFAULT '',
        status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ok', 'error')),
        error      TEXT,
        created_at TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE INDEX idx_chat_tool_calls_message ON chat_tool_calls(message_id, position);

    CREATE TABLE notes (
        seq        INTEGER PRIMARY KEY,
        id         TEXT NOT NULL UNIQUE,
        title      TEXT NOT NULL DEFAULT '',
        content    TEXT NOT NULL,
        owner_id   TEXT REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL DEFAULT {NOW},
        updated_at TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE VIRTUAL TABLE notes_fts USING fts5(
        title, content,
        content='notes',
        content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER notes_fts_ai AFTER INSERT ON notes BEGIN
        INSERT INTO notes_fts(rowid, title, content) VALUES (new.seq, new.title, new.content);
    END;
    CREATE TRIGGER notes_fts_ad AFTER DELETE ON notes BEGIN
        INSERT INTO notes_fts(notes_fts, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content);
    END;
    CREATE TRIGGER notes_fts_au AFTER UPDATE OF title, content ON notes BEGIN
        INSERT INTO notes_fts(notes_fts, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content);
        INSERT INTO notes_fts(rowid, title, content) VALUES (new.seq, new.title, new.content);
    END;
    -- one vector per note (seed 000 §7: a note is a single-chunk document), unit float32,
    -- with the model that made it; a note whose text changes loses its vector
    CREATE TABLE note_vectors (
        note_id    TEXT PRIMARY KEY REFERENCES notes(id) ON DELETE CASCADE,
        model      TEXT NOT NULL,
        dimensions INTEGER NOT NULL CHECK (dimensions > 0),
        embedding  BLOB NOT NULL,
        created_at TEXT NOT NULL DEFAULT {NOW}
    );
    CREATE TRIGGER notes_vec_au AFTER UPDATE OF title, content ON notes BEGIN
        DELETE FROM note_vectors WHERE note_id = new.id;
    END;
    """)


def _m006_vector_bits(conn: Any) -> None:
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


def _m007_one_document_per_path(conn: Any) -> None:
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


def _m008_chat_retrieval(conn: Any) -> None:
    # The retrieval policy (auto, tool, always, off; NULL: the next level decides) of a
    # conversation and of a persona, and a persona's answer length (max_tokens).
    conn.executescript("""
    ALTER TABLE channels ADD COLUMN retrieval TEXT CHECK (retrieval IN ('auto', 'tool', 'always', 'off'));
    ALTER TABLE personas ADD COLUMN retrieval TEXT CHECK (retrieval IN ('auto', 'tool', 'always', 'off'));
    ALTER TABLE personas ADD COLUMN max_tokens INTEGER CHECK (max_tokens > 0);
    """)


def _m009_api_tokens(conn: Any) -> None:
    # Bearer tokens of kbdesk serve (store/tokens.py): only a SHA-256 of each token is
    # kept; the token itself is shown once, when it is made.
    from kbdesk.store.tokens import tokens_ddl

    conn.execute(tokens_ddl("api_tokens"))


Migration = tuple[str, Callable[[Any], None]]


def _m010_document_lookup(conn: Any) -> None:
    # Search results read a few columns of each hit's document (name, hashes, when it was
    # indexed). Most of them come after extracted_text in the row, so a document with a
    # large text made SQLite walk its overflow pages for every hit (tens of ms per large
    # document); this index answers those reads on its own.
    conn.executescript("""
    CREATE INDEX idx_kbdoc_result ON kb_documents(id, filename, content_hash, indexed_hash, indexed_at);
    """)


def _m011_keyword_cjk(conn: Any) -> None:
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


def _m012_document_facts(conn: Any) -> None:
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


def _m013_chat_filters(conn: Any) -> None:
    # Default filters of a conversation's or persona's searches ("this project's folder"):
    # kbdesk.filters' JSON form as text; NULL: none.
    conn.executescript("""
    ALTER TABLE channels ADD COLUMN filters TEXT;
    ALTER TABLE personas ADD COLUMN filters TEXT;
    """)


def _m014_document_dates(conn: Any) -> None:
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


def _m015_document_rows(conn: Any) -> None:
    # The columns a list of a KB's documents shows (Store.document_briefs: name, source,
    # size, chunks, status) sit after extracted_text in the row, so listing a KB of large
    # documents walked every document's overflow pages (measured: 180 ms for 12,500
    # documents of 40 kB against 15 ms from this index).
    conn.executescript("""
    CREATE INDEX IF NOT EXISTS idx_kbdoc_rows ON kb_documents(
        kb_id, filename, source_path, size_bytes, chunk_count, status, id);
    """)


def _m016_one_document_per_name(conn: Any) -> None:
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


MIGRATIONS: list[Migration] = [
    ("core_tables", _m001_core),
    ("keyword_index", _m002_keyword_index),
    ("vector_state", _m003_vector_state),
    ("ingestion", _m004_ingestion),
    ("chat_and_notes", _m005_chat),
    ("vector_bits", _m006_vector_bits),
    ("one_document_per_path", _m007_one_document_per_path),
    ("chat_retrieval", _m008_chat_retrieval),
    ("api_tokens", _m009_api_tokens),
    ("document_lookup", _m010_document_lookup),
    ("keyword_cjk", _m011_keyword_cjk),
    ("document_facts", _m012_document_facts),
    ("chat_filters", _m013_chat_filters),
    ("document_dates", _m014_document_dates),
    ("document_rows", _m015_document_rows),
    ("one_document_per_name", _m016_one_document_per_name),
]


def current_version(conn: Any) -> int:
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return row[0] or 0


def migrate(conn: Any, migrations: list[Migration] | None = None, *, path: str = "") -> int:
    """Bring the database up to date; return the number of migrations applied.

    ``conn`` must be in autocommit mode (``isolation_level=None``). Each migration runs
    in its own ``BEGIN IMMEDIATE`` transaction together with its record, so an
    interrupted upgrade leaves the file at the last whole step.
    """
    migrations = MIGRATIONS if migrations is None else migrations
    known = len(migrations)
    found = current_version(conn)
    if found > known:
        raise SchemaTooNewError(
            f"database {path or ''} has schema version {found}, but this kbdesk knows only "
            f"up to {known}: it was written by a newer kbdesk; upgrade kbdesk to open it".replace("  ", " ")
        )
    applied = 0
    conn.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    )""")
    for version, (name, step) in enumerate(migrations, start=1):
        if version <= found:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # re-check inside the lock: another process may have migrated meanwhile
            if current_version(conn) >= version:
                conn.execute("ROLLBACK")
                continue
            _run_step(conn, step)
            conn.execute("INSERT INTO schema_migrations(version, name) VALUES (?, ?)", (version, name))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # (SQLite rolls back by itself after a full disk)
                conn.execute("ROLLBACK")
            raise
        applied += 1
    return applied


def _run_step(conn: Any, step: Callable[[Any], None]) -> None:
    """Run a migration's SQL inside the already-open transaction.

    ``executescript`` would COMMIT first, so statements are split and run one by one.
    """
    try:
        step(_ScriptRunner(conn))
    except Exception as exc:
        raise StoreError(f"schema migration failed: {exc}") from exc


class _ScriptRunner:
    """Looks like a connection; runs ``executescript`` statement by statement."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, *args: Any) -> Any:
        return self._conn.execute(*args)

    def executescript(self, script: str) -> None:
        # any sqlite3 module parses statements the same way; the stdlib one is always here
        complete = sqlite3.complete_statement
        buffer = ""
        for line in script.splitlines(keepends=True):
            buffer += line
            if complete(buffer):
                if buffer.strip():
                    self._conn.execute(buffer)
                buffer = ""
        if buffer.strip():
            self._conn.execute(buffer)
