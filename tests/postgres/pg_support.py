"""Helpers shared by the Postgres tests."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg


def with_database(uri: str, name: str) -> str:
    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def with_password(uri: str, password: str) -> str:
    parts = urlsplit(uri)
    user = parts.username or "postgres"
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, f"{user}:{password}@{host}", parts.path, parts.query, parts.fragment))


def sql(uri: str, query: str, *args):
    """Run one statement on its own connection; rows when it returns any."""
    with psycopg.connect(uri, autocommit=True) as conn:
        cur = conn.execute(query, args or None)
        return cur.fetchall() if cur.description else None
