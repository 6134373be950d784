"""The seed's migration ``008_knowledge_bases.sql`` (seed 000 §1), statement by statement,
and the minimal tables its foreign keys need when a server has none of its own.

``IF NOT EXISTS`` is the only change to the seed's text: a team server's own tables
are used as they are.
"""

from __future__ import annotations

VECTOR_COLUMN_DIMS = 3072

MINIMAL_TABLES = [
    (
        "users",
        """CREATE TABLE users (
        id         UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        username   TEXT NOT NULL,
        is_admin   BOOLEAN NOT NULL DEFAULT false,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    ),
    (
        "teams",
        """CREATE TABLE teams (
        id         UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        name       TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    ),
    (
        "channels",
        """CREATE TABLE channels (
        id         UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        title      TEXT NOT NULL DEFAULT '',
        owner_id   UUID,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    ),
]

SEED_008 = [
    """CREATE TABLE IF NOT EXISTS knowledge_bases (
        id               UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        name             TEXT NOT NULL,
        description      TEXT NOT NULL DEFAULT '',
        scope            TEXT NOT NULL DEFAULT 'global',
        owner_id         UUID,
        team_id          UUID REFERENCES teams(id) ON DELETE CASCADE,
        embedding_config JSONB NOT NULL DEFAULT '{}',
        document_count   INT NOT NULL DEFAULT 0,
        chunk_count      INT NOT NULL DEFAULT 0,
        total_bytes      BIGINT NOT NULL DEFAULT 0,
        status           TEXT NOT NULL DEFAULT 'active',
        created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
        CONSTRAINT kb_scope_check CHECK (
            (scope = 'global' AND owner_id IS NULL) OR
            (scope = 'team' AND team_id IS NOT NULL) OR
            (scope = 'personal' AND owner_id IS NOT NULL)
        )
    )""",
    "CREATE INDEX IF NOT EXISTS idx_kb_scope ON knowledge_bases(scope)",
    "CREATE INDEX IF NOT EXISTS idx_kb_owner ON knowledge_bases(owner_id) WHERE owner_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS idx_kb_team ON knowledge_bases(team_id) WHERE team_id IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS kb_documents (
        id             UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        kb_id          UUID NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        filename       TEXT NOT NULL,
        content_type   TEXT NOT NULL,
        size_bytes     BIGINT NOT NULL,
        storage_key    TEXT NOT NULL,
        extracted_text TEXT,
        chunk_count    INT NOT NULL DEFAULT 0,
        status         TEXT NOT NULL DEFAULT 'pending',
        error          TEXT,
        uploaded_by    UUID NOT NULL,
        created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at     TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    "CREATE INDEX IF NOT EXISTS idx_kbdoc_kb ON kb_documents(kb_id)",
    f"""CREATE TABLE IF NOT EXISTS kb_chunks (
        id          UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        kb_id       UUID NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        document_id UUID NOT NULL REFERENCES kb_documents(id) ON DELETE CASCADE,
        chunk_index INT NOT NULL,
        content     TEXT NOT NULL,
        token_count INT NOT NULL DEFAULT 0,
        embedding   vector({VECTOR_COLUMN_DIMS}),
        metadata    JSONB NOT NULL DEFAULT '{{}}',
        created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    "CREATE INDEX IF NOT EXISTS idx_kbchunk_kb ON kb_chunks(kb_id)",
    "CREATE INDEX IF NOT EXISTS idx_kbchunk_doc ON kb_chunks(document_id)",
    """CREATE TABLE IF NOT EXISTS channel_knowledge_bases (
        channel_id UUID NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
        kb_id      UUID NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
        enabled    BOOLEAN NOT NULL DEFAULT true,
        added_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (channel_id, kb_id)
    )""",
]


def team_members_ddl(table: str) -> str:
    """A team membership table (kbdesk's, where the server has none of its own)."""
    return f"""CREATE TABLE IF NOT EXISTS {table} (
            team_id  UUID NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
            user_id  UUID NOT NULL,
            role     TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('member', 'admin')),
            added_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (team_id, user_id)
        )"""
