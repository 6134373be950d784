"""Both engines keep the :class:`~kbdesk.store.api.Store` contract: mypy checks it here.

Nothing below runs (``TYPE_CHECKING``): each function hands an engine's store to the
protocols code above the store types against, so a method an engine lacks, or one whose
signature drifts from the protocol's, fails the type check instead of a user's command;
likewise each composed repository against its own protocol, and the drivers' connections
(sqlite3's, psycopg's) against what the store calls on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    import psycopg

    from kbdesk.store.api import ChatStore, Store, TeamStore, Transactions, VectorIndex
    from kbdesk.store.chat_api import ConversationRows, NoteRows, PersonaRows
    from kbdesk.store.core.bulk import Transfer
    from kbdesk.store.core.cache import EmbeddingCache
    from kbdesk.store.core.chat import Conversations
    from kbdesk.store.core.documents import Documents
    from kbdesk.store.core.facts import Facts
    from kbdesk.store.core.notes import Notes
    from kbdesk.store.core.personas import Personas
    from kbdesk.store.core.records import Records
    from kbdesk.store.postgres.connection import PostgresStore
    from kbdesk.store.postgres.dbapi import PgConnection
    from kbdesk.store.postgres.lookup import PgLookup
    from kbdesk.store.postgres.records import PgRecords
    from kbdesk.store.postgres.vectors import PgVectorIndex
    from kbdesk.store.rows_api import CacheRows, DocumentRows, Filtering, KbRows, Retrieval, TransferRows
    from kbdesk.store.sqlite.dbapi import SqliteConnection
    from kbdesk.store.sqlite.lookup import SqliteLookup
    from kbdesk.store.sqlite.store import SqliteStore
    from kbdesk.store.sqlite.vectors import NumpyIndex, SqliteVecIndex

    def sqlite_keeps_it(store: SqliteStore) -> None:
        _store: Store = store
        _chat: ChatStore = store
        _connections: Transactions = store

    def postgres_keeps_it(store: PostgresStore) -> None:
        _store: Store = store
        _chat: ChatStore = store
        _team: TeamStore = store
        _connections: Transactions = store

    def indexes_keep_it(vec: SqliteVecIndex, numpy: NumpyIndex, pg: PgVectorIndex) -> None:
        _vec: VectorIndex = vec
        _numpy: VectorIndex = numpy
        _pg: VectorIndex = pg

    def connections_keep_it(lite: sqlite3.Connection, pg: psycopg.Connection[tuple[object, ...]]) -> None:
        # what the store calls on a connection (kbdesk.store.dbapi) is what the drivers offer
        _lite: SqliteConnection = lite
        _pg: PgConnection = pg

    def repositories_keep_it(
        records: Records,
        pg_records: PgRecords,
        facts: Facts,
        lite_lookup: SqliteLookup,
        pg_lookup: PgLookup,
        documents: Documents,
        transfer: Transfer,
        cache: EmbeddingCache,
        conversations: Conversations,
        personas: Personas,
        notes: Notes,
    ) -> None:
        # each composed repository keeps its own protocol (Store and ChatStore are their sum)
        _records: KbRows = records
        _pg_records: KbRows = pg_records
        _facts: Filtering = facts
        _lite_lookup: Retrieval = lite_lookup
        _pg_lookup: Retrieval = pg_lookup
        _documents: DocumentRows = documents
        _transfer: TransferRows = transfer
        _cache: CacheRows = cache
        _conversations: ConversationRows = conversations
        _personas: PersonaRows = personas
        _notes: NoteRows = notes
