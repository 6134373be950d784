"""The SQLite file's first schema, as steps 1–5 of :data:`~.migrations.MIGRATIONS` make it:
KBs, documents and chunks (core), the keyword index, vector state, ingestion and chat."""

from __future__ import annotations

from kbdesk.store.sqlite.dbapi import SqliteConnection

NOW = "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"


def m001_core(conn: SqliteConnection) -> None:
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


def m002_keyword_index(conn: SqliteConnection) -> None:
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


def m003_vector_state(conn: SqliteConnection) -> None:
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


def m004_ingestion(conn: SqliteConnection) -> None:
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


def m005_chat(conn: SqliteConnection) -> None:
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
