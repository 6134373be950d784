"""The Postgres store: the seed's schema on PostgreSQL + pgvector, behind the same
interface as :class:`kbdesk.store.sqlite.SqliteStore` (psycopg 3; ``kbdesk[postgres]``).

Importing this package imports neither psycopg nor pgvector; opening a store does.
"""

from __future__ import annotations

from kbdesk.errors import AccessDeniedError
from kbdesk.store.postgres.access import Identity, identity_from_settings
from kbdesk.store.postgres.connection import PostgresStore
from kbdesk.store.postgres.pool import is_postgres_uri, redact_uri, uri_slug

__all__ = [
    "AccessDeniedError",
    "Identity",
    "PostgresStore",
    "identity_from_settings",
    "is_postgres_uri",
    "redact_uri",
    "uri_slug",
]
