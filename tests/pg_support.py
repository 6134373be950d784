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


def as_login(uri: str, login: str, password: str) -> str:
    """``uri`` connecting as another login (same server and database)."""
    parts = urlsplit(uri)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, f"{login}:{password}@{host}", parts.path, parts.query, parts.fragment))


def create_login(admin_uri: str, login: str, password: str) -> None:
    """A login role with a password (roles belong to the server: names must be unique per test)."""
    from psycopg import sql as pgsql

    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(
            pgsql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(pgsql.Identifier(login), pgsql.Literal(password))
        )
