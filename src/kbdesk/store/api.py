"""What a store is: the protocol the desk, search, ingestion, chat and transfer rely on.

Two engines implement it — :class:`kbdesk.store.sqlite.SqliteStore` (one file) and
:class:`kbdesk.store.postgres.PostgresStore` (a team server). Code above the store
types against :class:`Store` and asks :attr:`Store.capabilities` what an engine can do
instead of probing for methods:

* ``"chat"`` — conversations, messages, personas, projects, notes and small chat
  settings (:class:`ChatStore`): both engines, written once (:mod:`kbdesk.store.core`);
  a Postgres database whose ``channels`` table is a team server's own lacks it;
* ``"vectors-local"`` — the vector index is derived in this process (sqlite-vec or
  numpy), as opposed to an index the database server keeps (pgvector);
* ``"blobs"`` — original document bytes are kept in the database (a team server),
  not only in the desk's files directory;
* ``"team"`` — a shared server (:class:`TeamStore`): users, teams, scopes and row
  security; other processes reach the same store by its URI.

The protocol lists every method the layers above call (the desk, search, ingestion,
chat, transfer, embedding and the four faces); each engine's own helpers stay private to
it. Beside it: :class:`ChatStore` (the ``"chat"`` rows), :class:`TeamStore` (a team
server's login and identity, reached through :func:`team_store`), :class:`VectorIndex`
and :class:`Transactions`. :mod:`kbdesk.store.contract` has mypy prove that both engines
keep all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, cast, runtime_checkable

from kbdesk.errors import StoreError
from kbdesk.models import KnowledgeBase
from kbdesk.store.chat_api import ConversationRows, NoteRows, PersonaRows, Settings
from kbdesk.store.dbapi import Connection
from kbdesk.store.rows_api import CacheRows, DocumentRows, Filtering, KbRows, Retrieval, TransferRows

CHAT = "chat"
VECTORS_LOCAL = "vectors-local"
BLOBS = "blobs"
TEAM = "team"


class Transactions(Protocol):
    """A store's connections: the calling thread's own, and transactions on it. A
    connection is the engine's DB-API one (sqlite3's or psycopg's), as
    :class:`kbdesk.store.dbapi.Connection` describes what the store calls on it."""

    def connection(self) -> Connection: ...
    def write(self) -> AbstractContextManager[Connection]: ...
    def read(self) -> AbstractContextManager[Connection]: ...


class VectorIndex(Protocol):
    """What code above the store asks of an engine's vector index; searching it goes
    through :meth:`Store.vector_candidates`, and the rest is the engine's own."""

    name: str
    """"sqlite-vec", "numpy" or "pgvector"."""

    def warm(self, store: Transactions, kb_id: str, dimensions: int, *, wait: bool = False) -> None:
        """Get ready, in the background (``wait``: now), what the KB's next search will read."""
        ...

    def drop(self, conn: Connection, kb_id: str) -> None:
        """Forget ``kb_id``'s index (inside the transaction deleting the KB or its vectors)."""
        ...

    def close(self) -> None: ...


class Policy(Protocol):
    """Who may do what (:class:`kbdesk.store.policy.LocalPolicy`, or a team server's
    :class:`kbdesk.store.postgres.access.ScopePolicy`)."""

    def check_create(self, scope: str, team_id: str | None) -> None: ...
    def check_manage(self, kb: KnowledgeBase) -> None: ...
    def check_discoverable(self, kb: KnowledgeBase) -> None: ...
    def can_see(self, kb: KnowledgeBase) -> bool: ...
    def visible(self, alias: str = "") -> tuple[str, list[Any]]: ...
    def picker(self, alias: str = "") -> tuple[str, list[Any]]: ...


class DriverInfo(Protocol):
    """What ``kbdesk doctor`` reports of the database underneath: SQLite's module, or a
    Postgres server in the same fields."""

    @property
    def name(self) -> str: ...
    @property
    def sqlite_version(self) -> str:
        """SQLite's version (a Postgres server's version on Postgres)."""
        ...

    @property
    def vec_version(self) -> str | None: ...
    @property
    def backend(self) -> str:
        """The vector backend: "sqlite-vec", "numpy" or "pgvector"."""
        ...

    @property
    def reason(self) -> str:
        """One line: why this backend."""
        ...


@runtime_checkable
class Store(Transactions, KbRows, DocumentRows, CacheRows, TransferRows, Filtering, Retrieval, Protocol):
    @property
    def kind(self) -> str:
        """ "sqlite" or "postgres"."""
        ...

    @property
    def capabilities(self) -> frozenset[str]: ...

    local_user_id: str

    @property
    def driver(self) -> DriverInfo: ...
    @property
    def policy(self) -> Policy:
        """Who may do what with a KB (everyone everything on SQLite; row owners and team
        roles on a team server)."""
        ...

    @property
    def vectors(self) -> VectorIndex:
        """The engine's vector index (:mod:`kbdesk.store.sqlite.vectors` or pgvector's)."""
        ...

    # ── lifecycle and transactions ─────────────────────────────────────────────
    def close(self) -> None: ...
    # connection(), read() and write(): see Transactions
    def audit(
        self,
        conn: Connection,
        action: str,
        kb_id: str | None,
        target: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None: ...
    def schema_version(self) -> int: ...
    def fts5_available(self) -> bool:
        """Whether keyword search can run here (SQLite built without FTS5 cannot)."""
        ...


@runtime_checkable
class ChatStore(Store, ConversationRows, PersonaRows, NoteRows, Settings, Protocol):
    """A store with the ``"chat"`` capability (rows of :mod:`kbdesk.store.chat`,
    :mod:`kbdesk.store.personas`, :mod:`kbdesk.store.notes`; each row its user's): the
    sum of the chat repositories' protocols (:mod:`kbdesk.store.chat_api`)."""


class TeamIdentity(Protocol):
    """The kbdesk user a team server's store acts as."""

    @property
    def user_id(self) -> str: ...
    @property
    def username(self) -> str: ...
    @property
    def admin(self) -> bool: ...
    @property
    def teams(self) -> Mapping[str, str]:
        """Team id -> "member" or "admin"."""
        ...


class TeamLogin(Protocol):
    """What the server says about the store's connection."""

    @property
    def login(self) -> str: ...
    @property
    def kind(self) -> str:
        """ "owner" (of kbdesk's tables), "user" (a kbdesk user's login) or "stranger"."""
        ...


class TeamStore(Store, Protocol):
    """A store on a team server (the ``"team"`` capability): where it is and who it is."""

    @property
    def uri(self) -> str: ...
    @property
    def label(self) -> str:
        """The server's address with any password left out (for messages)."""
        ...

    @property
    def identity(self) -> TeamIdentity: ...
    @property
    def session(self) -> TeamLogin: ...

    def login_identity(self, login: str) -> TeamIdentity | None:
        """The identity of kbdesk user ``login`` as the database says now (user id, system
        admin, teams); None when the login is not a kbdesk user."""
        ...

    def as_user(self, identity: TeamIdentity) -> TeamStore:
        """A new store on the same server acting as ``identity`` (from :meth:`login_identity`)."""
        ...


def is_team(store: Store) -> bool:
    """Whether ``store`` is a team server's (shared, with users and scopes)."""
    return TEAM in store.capabilities


def team_store(store: Store) -> TeamStore:
    """``store`` as the team server's store it is; a one-line error for a local store."""
    if not is_team(store):
        raise StoreError("this needs a team server (a PostgreSQL database), not a local database file")
    return cast(TeamStore, store)
