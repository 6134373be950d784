"""The Postgres store: connections, transactions, identity; the same interface as SQLite.

Who the store acts as: a kbdesk user's login is its identity, read from the database
(``kbdesk pg grant``); only a login that row security does not apply to (a superuser
or the tables' owner: a local single-user server, the administrator) acts as its
config's ``[identity]`` (:mod:`.security`).

Each thread uses its own connection (autocommit; transactions are explicit). When a
thread ends, its connection goes back to a small idle pool for the next thread, so
worker threads that come and go do not pile up server connections. A broken
connection (server restart, network drop) is replaced on next use.

``with store.write() as conn:`` is one transaction, committed whole or rolled back
whole, re-entrant in one thread (an inner ``write()`` joins the outer transaction);
``with store.read() as conn:`` is one consistent snapshot (REPEATABLE READ). SQL uses
psycopg's ``%s`` placeholders.
"""

from __future__ import annotations

import importlib.util
import json
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kbdesk.errors import DatabaseWriteError, KbdeskError, StoreError
from kbdesk.store.api import BLOBS, CHAT, TEAM, TeamIdentity
from kbdesk.store.core.audit import AuditLog
from kbdesk.store.core.chat_surface import ChatSurface
from kbdesk.store.core.compose import via
from kbdesk.store.core.store_surface import StoreSurface
from kbdesk.store.postgres.access import Identity, ScopePolicy, identity_from_settings
from kbdesk.store.postgres.bulk import PgBulk
from kbdesk.store.postgres.cache_vectors import PgCacheVectors
from kbdesk.store.postgres.chat import PgNoteKeywords, PgSettings, keeps_chat
from kbdesk.store.postgres.chunks import PgChunks
from kbdesk.store.postgres.dbapi import PgConnection
from kbdesk.store.postgres.engine import PostgresEngine
from kbdesk.store.postgres.guards import database_refusal
from kbdesk.store.postgres.locks import connect
from kbdesk.store.postgres.logins import Identities
from kbdesk.store.postgres.lookup import PgLookup
from kbdesk.store.postgres.pool import Holder, PgDriver, Pool, quiet_close, redact_uri, uuid_as_text_binary_loader
from kbdesk.store.postgres.records import PgRecords
from kbdesk.store.postgres.schema import _first_line, current_version, migrate
from kbdesk.store.postgres.security import Session, check_can_open, database_identity, secure, session
from kbdesk.store.postgres.vectors import PgVectorIndex


class PostgresStore(StoreSurface, ChatSurface):
    """kbdesk's store on PostgreSQL + pgvector, in the seed's schema."""

    kind = "postgres"
    lookup: PgLookup
    db = PostgresEngine()
    _keeps_chat: bool | None = None
    document_blob = via("bulk", PgBulk.document_blob)

    def __init__(self, uri: str, identity: Identity | None = None) -> None:
        if importlib.util.find_spec("psycopg") is None or importlib.util.find_spec("pgvector") is None:
            raise StoreError("Postgres mode needs psycopg and pgvector: pip install 'kbdesk[postgres]'")
        self.uri = uri
        self.label = redact_uri(uri)
        self._pool = Pool()
        self._local = threading.local()
        self._open: weakref.WeakSet[PgConnection] = weakref.WeakSet()
        self._closed = False
        self._vector_ready = False
        self.bulk = PgBulk(self)
        self.identities = Identities(self)
        self.compose_chat(self, PgNoteKeywords(), PgSettings(self))
        conn = self.connection()
        try:
            self.session = self._prepare(conn)
        except KbdeskError:
            self.close()
            raise
        except Exception as exc:  # noqa: BLE001 - any failure to prepare a connection becomes one line
            self.close()
            raise StoreError(f"cannot prepare {self.label}: {_first_line(exc)}") from None
        self._register_vector(conn)
        self._vector_ready = True
        self.vectors = PgVectorIndex(self)
        self.chunks = PgChunks(self, self.vectors, self)
        records = PgRecords(self, self.chunks, self.vectors, AuditLog(self))
        self.compose_store(self, records, PgLookup(self, self.vectors), self.chunks, self.bulk, PgCacheVectors())
        if self.session.user_id:  # a kbdesk user: the database says who (the config cannot)
            self.identity = database_identity(conn)
            self.db = PostgresEngine(through_functions=True)  # no DELETE privilege: it would allow LOCK TABLE
        else:  # the owner (row security does not apply to it): the config's [identity]
            self.identity = self.identities.resolve(identity or identity_from_settings())
        self.local_user_id = self.identity.user_id
        self.policy = ScopePolicy(self.identity, self.identities.team_name)
        self.identities.record_user(self.identity)
        self.driver = self._driver_info()

    @property
    def capabilities(self) -> frozenset[str]:
        """A team server's store, with original files in the database; chat where
        conversations can be kept (:func:`kbdesk.store.postgres.chat.keeps_chat`)."""
        if self._keeps_chat is None:
            self._keeps_chat = keeps_chat(self.connection())
        return frozenset({BLOBS, CHAT, TEAM}) if self._keeps_chat else frozenset({BLOBS, TEAM})

    def _prepare(self, conn: PgConnection) -> Session:
        """Check who connects, bring the schema up to date, and say who connected.

        A login that is neither a kbdesk user nor the owner is refused in one line; a
        kbdesk user never migrates (only the owner may). After a migration the owner
        puts policies and grants on whatever the new steps made.
        """
        before = session(conn)
        check_can_open(conn, before, self.label)
        if migrate(conn, label=self.label) and before.kind == "owner":
            secure(conn)
        after = session(conn) if not before.tables else before
        if after.kind == "stranger":
            raise StoreError(
                f"the login '{after.login}' is not a kbdesk user of {self.label}: an administrator makes "
                f"it one with kbdesk --db URI pg grant {after.login}"
            )
        return after

    # ── connections ────────────────────────────────────────────────────────────
    def connection(self) -> PgConnection:
        """This thread's connection (made, or taken from the idle pool, on first use)."""
        holder = getattr(self._local, "holder", None)
        if holder is not None:
            if not (holder.conn.closed or holder.conn.broken) or holder.depth:
                return holder.conn
            quiet_close(holder.conn)
        if self._closed:
            raise StoreError("the store is closed")
        conn = self._pool.take() or self._connect()
        holder = Holder(conn)
        weakref.finalize(holder, self._pool.give_back, conn)
        self._local.holder = holder
        return conn

    def _connect(self) -> PgConnection:
        import psycopg
        from psycopg.types.string import TextLoader

        try:
            conn = connect(self.uri, self.label)  # with kbdesk's lock and statement timeouts
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.label}: {_first_line(exc)}") from None
        conn.adapters.register_loader("uuid", TextLoader)
        conn.adapters.register_loader("uuid", uuid_as_text_binary_loader())
        if self._vector_ready:
            self._register_vector(conn)
        self._open.add(conn)
        return conn

    @staticmethod
    def _register_vector(conn: Any) -> None:  # psycopg's own type
        from pgvector.psycopg import register_vector

        register_vector(conn)

    def close(self) -> None:
        self._closed = True
        self._pool.close()
        for conn in list(self._open):
            quiet_close(conn)
        self._local = threading.local()

    # ── transactions ───────────────────────────────────────────────────────────
    @contextmanager
    def write(self) -> Iterator[PgConnection]:
        """One transaction; commit on success, roll back on error. Re-entrant."""
        with self._transaction(read_only=False) as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        """One consistent snapshot (REPEATABLE READ), or the current transaction."""
        with self._transaction(read_only=True) as conn:
            yield conn

    @contextmanager
    def _transaction(self, read_only: bool) -> Iterator[PgConnection]:
        import psycopg

        conn = self.connection()
        holder = self._local.holder
        if holder.depth:
            holder.depth += 1
            try:
                yield conn
            finally:
                holder.depth -= 1
            return
        holder.depth = 1
        try:
            with conn.transaction():
                if read_only:
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield conn
        except psycopg.OperationalError as exc:
            if conn.closed or conn.broken:
                raise StoreError(f"lost the connection to {self.label}: {_first_line(exc)}") from None
            if str(getattr(exc, "sqlstate", "") or "")[:2] in ("53", "58"):  # a full disk, an I/O error
                raise DatabaseWriteError(f"{self.label} cannot write: {_first_line(exc)}") from None
            raise StoreError(f"{self.label}: {_first_line(exc)}") from exc
        except psycopg.Error as exc:
            raise database_refusal(exc) or StoreError(f"{self.label}: {_first_line(exc)}") from exc
        finally:
            holder.depth = 0

    def in_transaction(self) -> bool:
        holder = getattr(self._local, "holder", None)
        return bool(holder and holder.depth)

    # ── identity (Identities) ──────────────────────────────────────────────────
    login_identity = via("identities", Identities.login_identity)
    team_name = via("identities", Identities.team_name)

    def as_user(self, identity: TeamIdentity | None) -> PostgresStore:
        """A new store on this server acting as ``identity`` (a kbdesk user's, from
        :meth:`login_identity`; None: the config's)."""
        if identity is not None and not isinstance(identity, Identity):
            identity = Identity(identity.user_id, identity.username, identity.admin, dict(identity.teams), "database")
        return PostgresStore(self.uri, identity)

    def schema_version(self) -> int:
        return current_version(self.connection())

    def fts5_available(self) -> bool:
        """Keyword search is available (Postgres full text search; the name is SQLite's)."""
        return True

    def _driver_info(self) -> PgDriver:
        conn = self.connection()
        server = conn.execute("SHOW server_version").fetchone()[0]
        vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        return PgDriver(
            "psycopg",
            f"PostgreSQL {server}",
            vec,
            "pgvector",
            f"pgvector {vec} on PostgreSQL {server} at {self.label}: exact cosine for small KBs, "
            f"an HNSW index per KB from {self.vectors.min_rows} vectors",
        )

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "postgres",
            "uri": self.label,
            "user_id": self.identity.user_id,
            "username": self.identity.username,
            "admin": self.identity.admin,
            "teams": json.loads(json.dumps(dict(self.identity.teams))),
            "identity": self.identity.source,
            "login": self.session.login,
        }
