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

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from kbdesk.errors import StoreError
from kbdesk.filters import Filters
from kbdesk.models import ChunkInput, Document, DocumentBrief, KnowledgeBase
from kbdesk.store.chat_api import ConversationRows, NoteRows, PersonaRows, Settings
from kbdesk.store.dbapi import Connection
from kbdesk.store.doc_types import NewDocument, StatusUpdate
from kbdesk.store.keywords import KeywordParts
from kbdesk.store.within import KbFacts, Within

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
class Store(Transactions, Protocol):
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

    # ── knowledge bases ────────────────────────────────────────────────────────
    def create_kb(
        self,
        name: str,
        description: str = "",
        *,
        embedding_config: dict[str, Any] | None = None,
        scope: str = "personal",
        team_id: str | None = None,
        discoverable: bool = True,
        kb_id: str | None = None,
    ) -> KnowledgeBase: ...
    def get_kb(self, kb_id: str) -> KnowledgeBase: ...
    def find_kb(self, ref: str) -> KnowledgeBase: ...
    def list_kbs(self) -> list[KnowledgeBase]: ...
    def update_kb(
        self,
        kb_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        discoverable: bool | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
    ) -> KnowledgeBase: ...
    def delete_kb(self, kb_id: str) -> KnowledgeBase: ...
    def recount(self, kb_id: str) -> KnowledgeBase: ...
    def set_kb_status(self, kb_id: str, status: str) -> None: ...
    def kb_by_id(self, kb_id: str) -> KnowledgeBase | None: ...
    def kb_named(self, name: str) -> KnowledgeBase | None: ...
    def resolve_team(self, ref: str) -> str: ...

    # ── documents ──────────────────────────────────────────────────────────────
    def source_key(self, path: Path) -> str:
        """The source a file's document is known by in this store."""
        ...

    def get_document(self, doc_id: str) -> Document: ...
    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, Document]: ...
    def find_document(self, kb_id: str, ref: str) -> Document: ...
    def list_documents(self, kb_id: str, status: str | None = None) -> list[Document]: ...
    def document_briefs(self, kb_id: str) -> list[DocumentBrief]:
        """Every document of a KB as a list shows it (no order): cheap for thousands of them."""
        ...

    def documents_by_source(self, kb_id: str) -> dict[str, Document]: ...
    def unfinished_documents(self, kb_id: str | None = None) -> list[Document]: ...
    def searchable_counts(self) -> dict[str, int]: ...
    def failed_counts(self) -> dict[str, int]: ...
    def document_sections(self, doc_id: str) -> list[tuple[str, dict[str, Any]]] | None: ...
    def document_text(self, doc_id: str) -> str | None: ...
    def take_versions(self, specs: Sequence[NewDocument], claim: str) -> list[Document | None]: ...
    def touch_documents(self, items: Sequence[tuple[str, int, float | None]]) -> None: ...
    def claim_documents(self, docs: Sequence[Document], claim: str) -> list[Document]: ...
    def release_claims(self, claim: str) -> int: ...
    def set_statuses(self, updates: Sequence[StatusUpdate]) -> None: ...
    def finish_documents(
        self,
        items: Sequence[tuple[Any, ...]],
        *,
        before: Sequence[StatusUpdate] = (),
        after: Sequence[StatusUpdate] = (),
        rows: bool = True,
    ) -> list[Document | Exception | None]: ...
    def add_document(
        self,
        kb_id: str,
        filename: str,
        chunks: Sequence[ChunkInput | str],
        *,
        vectors: Any = None,
        content_type: str = "text/plain",
        size_bytes: int | None = None,
        extracted_text: str | None = None,
        content_hash: str | None = None,
        source_path: str | None = None,
        doc_id: str | None = None,
    ) -> Document: ...
    def delete_document(self, doc_id: str) -> Document: ...

    # ── the embedding cache ────────────────────────────────────────────────────
    def cached_vectors(self, model_id: str, hashes: Iterable[str]) -> dict[str, bytes]: ...
    def put_cached_vectors(self, model_key: str, items: Sequence[tuple[str, Any]]) -> None: ...
    def drop_cached_vectors(self, model_key: str, hashes: Iterable[str]) -> None: ...
    def prune_cached_vectors(self, prefix: str, days: int) -> int: ...
    def chunk_texts(self, kb_id: str) -> list[tuple[str, str]]: ...
    def swap_embedding_model(self, kb_id: str, provider: str, model_id: str, model_key: str) -> KnowledgeBase: ...
    def log_usage(
        self,
        role: str,
        *,
        provider: str = "",
        model: str = "",
        kb_id: str | None = None,
        inputs: int = 0,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        total_tokens: int | None = None,
    ) -> None: ...

    # ── whole documents in and out (kbdesk.transfer) ───────────────────────────
    def document_summaries(self, kb_id: str) -> dict[str, dict[str, Any]]: ...
    def export_documents(self, kb_id: str, doc_ids: Sequence[str], dims: int | None) -> list[dict[str, Any]]: ...
    def import_documents(self, kb_id: str, docs: Sequence[dict[str, Any]]) -> None: ...
    def delete_documents(self, kb_id: str, doc_ids: Sequence[str]) -> int: ...
    def index_vectors(self, kb_id: str) -> None: ...
    def kb_vector_dimensions(self, kb_id: str) -> int | None: ...

    # ── retrieval (kbdesk.search) ──────────────────────────────────────────────
    def filter_documents(self, kb_ids: Sequence[str], filters: Filters) -> Within:
        """A search filter resolved to the documents of each KB it lets through
        (:mod:`kbdesk.store.core.facts`): what the candidate methods below take as ``within``."""
        ...

    def kb_facts(self, kb_id: str) -> KbFacts:
        """What filters look at in each document of a KB (kept in memory while the KB does
        not change): its path, file type, dates and tags."""
        ...

    def vector_candidates(
        self, kb_id: str, dimensions: int, query: np.ndarray, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest chunks of one KB: (seq, cosine), best first; with ``within``,
        the ``k`` nearest among the chunks of the documents inside it."""
        ...

    def keyword_candidates(
        self, kb_ids: Sequence[str], text: str, k: int, within: Within | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` best keyword matches over several KBs: (seq, BM25 score), best first;
        with ``within``, among the chunks of the documents inside it."""
        ...

    def keyword_scores(self, kb_ids: Sequence[str], text: str, seqs: Sequence[int]) -> dict[int, float]:
        """The BM25 score :meth:`keyword_candidates` would give each chunk (by seq) that
        matches ``text`` at all, however far down the keyword ranking."""
        ...

    def keyword_parts(self, kb_ids: Sequence[str], text: str, chunks: Sequence[tuple[str, int]]) -> KeywordParts:
        """What the keyword (BM25) score of each chunk (document id, chunk index) for
        ``text`` is made of: the collection's size, each query word's document frequency,
        each chunk's score split by word (federated search rescales them to one scale)."""
        ...

    def cosine_for(self, seqs: Iterable[int], query: np.ndarray) -> dict[int, float]:
        """The cosine of each chunk (by seq) that has a vector, to ``query``."""
        ...

    def chunk_kbs(self, seqs: Sequence[int]) -> dict[int, str]:
        """The KB id of each chunk (by seq)."""
        ...

    def result_rows(self, seqs: Sequence[int]) -> dict[int, dict[str, Any]]: ...
    def chunk_neighbours(self, document_id: str, chunk_index: int, radius: int = 1) -> list[dict[str, Any]]: ...


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
