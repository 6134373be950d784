"""Connection plumbing of the Postgres store: URIs, an idle pool, type loaders.

A URI's password is never shown: :func:`redact_uri` is what messages, logs and the
audit log carry.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kbdesk.store import is_server_uri

IDLE_CONNECTIONS = 4


def is_postgres_uri(value: Any) -> bool:
    return is_server_uri(str(value or ""))


def redact_uri(uri: str) -> str:
    """The URI without its password (never printed, logged or stored)."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    netloc = parts.netloc.rsplit("@", 1)
    user = parts.username or ""
    return uri.replace(parts.netloc, f"{user}:***@{netloc[-1]}", 1)


def uri_slug(uri: str) -> str:
    """A file-name-safe label for the server and database (no credentials)."""
    parts = urlsplit(uri)
    host = parts.hostname or "local"
    db = parts.path.lstrip("/") or "postgres"
    key = f"{host}:{parts.port or ''}/{db}?{parts.query}"
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{host}-{db}")[:40]
    return f"{safe}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


@dataclass(frozen=True)
class PgDriver:
    """What ``kbdesk doctor`` reports for a Postgres store (the SQLite driver's fields)."""

    name: str
    sqlite_version: str  # the server version (the field name is the SQLite driver's)
    vec_version: str | None
    backend: str
    reason: str


class Pool:
    """Connections of finished threads, kept for the next thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[Any] = []
        self.closed = False

    def give_back(self, conn: Any) -> None:
        with self.lock:
            keep = not self.closed and not conn.closed and len(self.idle) < IDLE_CONNECTIONS
            if keep:
                self.idle.append(conn)
        if not keep:
            quiet_close(conn)

    def take(self) -> Any | None:
        with self.lock:
            while self.idle:
                conn = self.idle.pop()
                if not conn.closed and not conn.broken:
                    return conn
                quiet_close(conn)
        return None

    def close(self) -> None:
        with self.lock:
            self.closed = True
            idle, self.idle = self.idle, []
        for conn in idle:
            quiet_close(conn)


class Holder:
    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.depth = 0


def quiet_close(conn: Any) -> None:
    with contextlib.suppress(Exception):  # closing a dead connection: nothing to save
        conn.close()


@functools.cache
def uuid_as_text_binary_loader() -> Any:
    """A binary-format uuid loader giving ``str`` (built lazily: importing needs no psycopg)."""
    import uuid

    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class UuidTextBinaryLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> str:
            return str(uuid.UUID(bytes=bytes(data)))

    return UuidTextBinaryLoader
