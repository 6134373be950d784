"""The desk: config, paths, store and services, built once by one factory.

The CLI, the TUI and library users all start from :func:`open_desk`, so they share
exactly the same behaviour. Nothing here imports a UI toolkit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdesk.config import Config, load_config, vector_backend_override
from kbdesk.desk_admin import (
    DatabaseHealth,
    TokenUser,
    current_identity,
    database_health,
    my_teams,
    require_owner,
    team_of,
    token_user,
)
from kbdesk.desk_api import DeskApi
from kbdesk.desk_search import FilterHints, QueryEmbedder, filter_hints, search_kbs, unique_kbs
from kbdesk.embedding import Embedders
from kbdesk.errors import InvalidInputError, KbdeskError
from kbdesk.filters import Filters
from kbdesk.models import ChunkInput, Document, DocumentBrief, KnowledgeBase
from kbdesk.paths import Paths, get_paths, resolve_db
from kbdesk.remote.names import clashing_prefix, split_ref
from kbdesk.search import SearchResponse
from kbdesk.store import choose_driver, is_server_uri
from kbdesk.store.api import TEAM, Policy, Store, TeamIdentity, team_store
from kbdesk.store.sqlite import SqliteStore
from kbdesk.store.tokens import Tokens

if TYPE_CHECKING:  # built lazily below: each of them takes the desk (as kbdesk.desk_api.DeskApi)
    from kbdesk.chat.service import ChatService
    from kbdesk.ingest.events import EventSink
    from kbdesk.ingest.pipeline import Ingestor, IngestReport
    from kbdesk.remote.registry import Remotes


@dataclass
class Desk:
    paths: Paths
    config: Config
    db_path: Path
    store: Store
    query_embedder: QueryEmbedder | None = None
    embedders: Embedders = field(init=False)
    _retired: list[Embedders] = field(init=False, default_factory=list, repr=False)
    _remotes: Remotes | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self.embedders = Embedders(self.config, self.store)
        if self.query_embedder is None:
            self.query_embedder = self.embedders.query_vector

    # ── lifecycle ──────────────────────────────────────────────────────────────
    def close(self) -> None:
        for retired in self._retired:
            retired.close()
        self.embedders.close()
        if self._remotes is not None:
            self._remotes.close()
        self.store.close()

    def reload_config(self, config: Config | None = None) -> Config:
        """Use ``config`` (default: config.toml read anew) from now on: providers, roles,
        search and chunking defaults. Work already running keeps the provider clients it
        holds; they are closed with the desk."""
        self.config = config if config is not None else load_config(self.paths.config_file)
        old = self.embedders
        self.embedders = Embedders(self.config, self.store)
        if self.query_embedder == old.query_vector:
            self.query_embedder = self.embedders.query_vector
        self._retired.append(old)
        if self._remotes is not None:
            self._remotes.close()
            self._remotes = None
        return self.config

    @property
    def remotes(self) -> Remotes:
        """The team servers whose KBs this desk searches beside its own
        (:class:`kbdesk.remote.registry.Remotes`, from the ``[remotes.NAME]`` tables)."""
        if self._remotes is None:
            from kbdesk.remote.registry import Remotes

            self._remotes = Remotes(self.config.remotes)
        return self._remotes

    def __enter__(self) -> Desk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def files_dir(self) -> Path:
        return self.paths.files_dir(self.db_path)

    # ── the store's answers, for the faces (they never hold the store) ──────────
    @property
    def capabilities(self) -> frozenset[str]:
        """What this desk's database can do (:data:`kbdesk.store.api.CHAT`, ``TEAM``, …)."""
        return self.store.capabilities

    @property
    def engine(self) -> str:
        """ "sqlite" or "postgres": for a report, not for a decision (ask :attr:`capabilities`)."""
        return self.store.kind

    @property
    def label(self) -> str:
        """The database as a user knows it: a team server's name, or the file's path."""
        return team_store(self.store).label if TEAM in self.capabilities else str(self.db_path)

    @property
    def policy(self) -> Policy:
        """Who may do what here (a team server's scope rules; on a file, its one user may)."""
        return self.store.policy

    def health(self) -> DatabaseHealth:
        """The database's schema, writability, driver and keyword index (``kbdesk doctor``)."""
        return database_health(self.store)

    # ── who acts: kbdesk serve's tokens and the users they act as (desk_admin) ──
    def tokens(self) -> Tokens:
        """kbdesk serve's tokens (on a team server: for the owner of kbdesk's tables only)."""
        require_owner(self.store)
        return Tokens(self.store)

    def token_user(self, name: str) -> TokenUser:
        """The user a new token for ``name`` acts as (:func:`kbdesk.desk_admin.token_user`)."""
        return token_user(self.store, name)

    @property
    def identity(self) -> TeamIdentity | None:
        """Whom a team server's desk acts as (None on a file: its one user)."""
        return team_store(self.store).identity if TEAM in self.capabilities else None

    def current_identity(self, user_id: str, username: str) -> TeamIdentity:
        """A team server's user as the database says now (:class:`TokenUserGone` once revoked)."""
        return current_identity(team_store(self.store), user_id, username)

    def as_user(self, who: TeamIdentity) -> Desk:
        """A new desk on the same team server, acting as ``who`` (close it when done)."""
        store = team_store(self.store).as_user(who)
        return Desk(paths=self.paths, config=self.config, db_path=self.db_path, store=store)

    # ── knowledge bases ────────────────────────────────────────────────────────
    def create_kb(
        self,
        name: str,
        description: str = "",
        *,
        model_id: str | None = None,
        provider: str | None = None,
        dimensions: int | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        scope: str = "personal",
        team_id: str | None = None,
        keyword_only: bool = False,
    ) -> KnowledgeBase:
        """Create a KB. Without ``model_id`` it takes the embedding role's model from the
        config, if one is set; ``keyword_only`` makes a KB without embeddings regardless."""
        role = self.config.roles.embedding
        if keyword_only:
            model_id = provider = None
        elif model_id is None and role.model:
            model_id, provider = role.model, provider or role.provider
        config: dict[str, Any] = {
            "provider": provider,
            "model_id": model_id,
            "dimensions": dimensions,
            "chunk_size": chunk_size if chunk_size is not None else self.config.chunking.chunk_size,
            "chunk_overlap": chunk_overlap if chunk_overlap is not None else self.config.chunking.chunk_overlap,
        }
        self._check_local_name(name)
        return self.store.create_kb(
            name,
            description,
            embedding_config={k: v for k, v in config.items() if v is not None},
            scope=scope,
            team_id=team_id,
        )

    # ── teams (a team server's) ────────────────────────────────────────────────
    def teams(self) -> list[dict[str, Any]]:
        """The user's teams on a team server: id, name, role ("member" or "admin")."""
        return my_teams(self.store)

    def team(self, ref: str) -> dict[str, Any]:
        """One of the user's teams (by name or id) with its KBs, and its members when the
        user administers it (a team's members are shown to its admins only)."""
        return team_of(self.store, ref, self.list_kbs())

    def kb(self, ref: str) -> KnowledgeBase:
        """A local KB by name, id or id prefix (a remote KB's ref is refused in one line:
        it is read-only from this desk)."""
        try:
            return self.store.find_kb(ref)
        except KbdeskError:
            remote = split_ref(ref, self.config.remotes) if self.config.remotes else None
            if remote is not None:
                from kbdesk.remote.federation import refuse_change

                raise refuse_change(ref, remote.remote) from None
            raise

    def _check_local_name(self, name: str) -> None:
        remote = clashing_prefix(name, self.config.remotes) if self.config.remotes else None
        if remote is not None:
            raise InvalidInputError(
                f"a local knowledge base's name cannot start with '{remote}:': that names the remote '{remote}'"
            )

    def list_kbs(self) -> list[KnowledgeBase]:
        """The KBs the user can see, each with its count of failed documents."""
        kbs = self.store.list_kbs()
        failed = self.store.failed_counts()
        return [dataclasses.replace(kb, failed_documents=failed[kb.id]) if kb.id in failed else kb for kb in kbs]

    def warm_search(self, ref: str, *, wait: bool = False) -> None:
        """Get the KB's exact-search file written in the background (``wait``: now) if its
        vectors moved, so the next search does not wait for it. The app calls this when an
        indexing run ends (its indexing process, before it ends, with ``wait``: the file is the
        database's, read by every process); a short process has nothing to gain."""
        kb = self.kb(ref)
        if kb.dimensions:
            self.store.vectors.warm(self.store, kb.id, kb.dimensions, wait=wait)

    def kb_named(self, name: str) -> KnowledgeBase | None:
        """The local KB of exactly this name, if there is one."""
        return self.store.kb_named(name)

    def resolve_team(self, ref: str) -> str:
        """A team's id from its name or id (a team server's)."""
        return self.store.resolve_team(ref)

    def rename_kb(self, ref: str, new_name: str) -> KnowledgeBase:
        self._check_local_name(new_name)
        return self.store.update_kb(self.kb(ref).id, name=new_name)

    def describe_kb(self, ref: str, description: str) -> KnowledgeBase:
        return self.store.update_kb(self.kb(ref).id, description=description)

    def edit_kb(self, ref: str, **changes: Any) -> KnowledgeBase:
        """Change name, description, discoverable, chunk_size or chunk_overlap (new chunking
        applies to documents added or rebuilt from now on)."""
        if isinstance(changes.get("name"), str):
            self._check_local_name(changes["name"])
        return self.store.update_kb(self.kb(ref).id, **changes)

    def delete_kb(self, ref: str) -> KnowledgeBase:
        """Delete a KB and everything of it: rows, keyword and vector index, stored files."""
        kb = self.store.delete_kb(self.kb(ref).id)
        shutil.rmtree(self.files_dir / "kb" / kb.id, ignore_errors=True)
        return kb

    def recount(self, ref: str) -> KnowledgeBase:
        return self.store.recount(self.kb(ref).id)

    # ── documents (the ingestion pipeline builds on these) ─────────────────────
    def add_document(
        self, ref: str, filename: str, chunks: Sequence[ChunkInput | str], *, vectors: Any = None, **kwargs: Any
    ) -> Document:
        return self.store.add_document(self.kb(ref).id, filename, chunks, vectors=vectors, **kwargs)

    def delete_document(self, doc_id: str) -> Document:
        doc = self.store.delete_document(doc_id)
        with contextlib.suppress(FileNotFoundError):
            (self.files_dir / doc.storage_key).unlink()
        return doc

    def documents(self, ref: str, status: str | None = None) -> list[Document]:
        """The documents of a KB (by name, id or id prefix), optionally of one status."""
        return self.store.list_documents(self.kb(ref).id, status)

    def document_briefs(self, ref: str) -> list[DocumentBrief]:
        """Every document of a KB (by name, id or id prefix) as a list shows it: id, name,
        source path, size, chunks, status and error, in no particular order. Much cheaper
        than :meth:`documents` for a KB of thousands of documents."""
        return self.store.document_briefs(self.kb(ref).id)

    def filter_hints(self, refs: Sequence[str]) -> FilterHints:
        """What a filter on these KBs can name: the tags (with the parents of nested ones),
        folders (of document paths) and file types of their documents, for completion —
        read from the facts the store keeps for filtering, not from the document rows."""
        return filter_hints(self.store, unique_kbs([self.kb(ref) for ref in refs]))

    def unfinished_documents(self, ref: str | None = None) -> list[Document]:
        """Documents an ingestion run left unfinished (its runner is gone), in one KB or all;
        ``resume`` finishes them."""
        return self.store.unfinished_documents(self.kb(ref).id if ref else None)

    def document(self, ref: str, doc_ref: str) -> Document:
        """One document of a KB by id, id prefix or filename."""
        return self.store.find_document(self.kb(ref).id, doc_ref)

    def document_by_id(self, doc_id: str) -> Document:
        """One document by its id: where it comes from, its status and error."""
        return self.store.get_document(doc_id)

    def kb_vector_dimensions(self, kb_id: str) -> int | None:
        """The dimensions of the vectors a KB holds (None: it holds none)."""
        return self.store.kb_vector_dimensions(kb_id)

    def rebuildable_documents(self, ref: str) -> list[Document]:
        """The documents of a KB a rebuild would take now (:func:`kbdesk.ingest.pipeline.rebuildable`)."""
        from kbdesk.ingest.pipeline import rebuildable

        return rebuildable(self.store, self.documents(ref))

    def document_text(self, doc_id: str) -> str | None:
        """The text kept of a document (None when none is kept, as for a failed one)."""
        return self.store.document_text(doc_id)

    def chunk_neighbours(self, document_id: str, chunk_index: int, radius: int = 1) -> list[dict[str, Any]]:
        """A chunk with the ``radius`` chunks before and after it in its document."""
        return self.store.chunk_neighbours(document_id, chunk_index, radius)

    def ingestor(self, *, workers: int | None = None, on_event: EventSink | None = None) -> Ingestor:
        """An :class:`kbdesk.ingest.pipeline.Ingestor` over this desk."""
        from kbdesk.ingest.pipeline import Ingestor

        return Ingestor(self, workers=workers, on_event=on_event)

    def add(
        self,
        ref: str,
        paths: Sequence[str | os.PathLike[str]],
        *,
        on_event: EventSink | None = None,
        workers: int | None = None,
        **options: Any,
    ) -> IngestReport:
        """Ingest files and folders into a KB (``options``: those of :meth:`Ingestor.add`)."""
        return self.ingestor(on_event=on_event, workers=workers).add(ref, paths, **options)

    # ── chat and notes (kbdesk.chat) ───────────────────────────────────────────
    def chat(self) -> ChatService:
        """A :class:`kbdesk.chat.ChatService` over this desk (cheap; holds no state)."""
        from kbdesk.chat.service import ChatService

        return ChatService(self)

    # ── search ─────────────────────────────────────────────────────────────────
    def search(
        self,
        refs: Sequence[str],
        query: str,
        *,
        query_vector: Any = None,
        limit: int | None = None,
        threshold: float | None = None,
        mode: str | None = None,
        explain: bool = False,
        filters: Filters | dict[str, Any] | str | None = None,
    ) -> SearchResponse:
        """Search the KBs named by ``refs`` (names, ids or id prefixes; ``team:Product
        Docs`` names a KB of the remote ``team``: docs/REMOTES.md).

        ``filters`` narrows the search to documents by path, file type, date and tags
        (:class:`kbdesk.filters.Filters`, its JSON form as a dict — ``{"path": "work/**",
        "tags": ["q3"]}`` — or a filter line, ``"tag:q3 path:work/**"``; a bad one is an
        InvalidInputError naming the field). It is applied before ranking: the results
        are the best ``limit`` inside the filter.

        Without ``query_vector`` the desk's query embedder (when a provider is set up)
        embeds the query for each KB that holds vectors (once per provider and model; a
        KB without vectors never needs it). A KB whose query cannot be embedded (the
        provider is down, refuses, or was just seen failing) is searched by keyword,
        and the response says so (``keyword_fallback``, ``notes``); only an explicit
        ``mode="vector"`` fails then, with the provider's error.
        """
        return search_kbs(
            self,
            self.query_embedder,
            refs,
            query,
            query_vector=query_vector,
            limit=limit,
            threshold=threshold,
            mode=mode,
            explain=explain,
            filters=filters,
        )


def open_desk(
    db: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    config: Config | None = None,
    backend: str | None = None,
    paths: Paths | None = None,
) -> Desk:
    """Build the desk: paths (``home`` / ``KBDESK_HOME``), config, database, services.

    ``db`` (or ``KBDESK_DB``, or ``storage.db`` in the config) selects the database
    file; ``backend`` (or ``KBDESK_VECTOR_BACKEND``, or ``vector.backend``) the vector
    backend. A ``postgresql://`` URI there opens the Postgres store instead (the
    database login is the user — ``[identity]`` counts only for the database's owner;
    original files kept locally under ``data/postgres/<server-db>.files``). ``paths``: the
    paths themselves, in place of ``home`` (another process opening this same desk).
    """
    paths = paths if paths is not None else get_paths(home)
    config = config if config is not None else load_config(paths.config_file)
    chosen = db if db is not None else (os.environ.get("KBDESK_DB") or config.storage.db)
    if is_server_uri(chosen):
        return _open_postgres(paths, config, str(chosen))
    db_path = resolve_db(paths, chosen)
    requested = backend or vector_backend_override() or config.vector.backend
    store = SqliteStore(db_path, choose_driver(requested))
    store.vectors.configure(quantize_above=config.vector.quantize_above, oversample=config.vector.oversample)
    return Desk(paths=paths, config=config, db_path=db_path, store=store)


def _open_postgres(paths: Paths, config: Config, uri: str) -> Desk:
    from kbdesk.store.postgres import PostgresStore, identity_from_settings, uri_slug

    store = PostgresStore(uri, identity_from_settings(config.identity))
    # not a file: files_dir() puts this server's document bytes beside it, in "<slug>.files"
    db_path = paths.data_dir / "postgres" / uri_slug(uri)
    return Desk(paths=paths, config=config, db_path=db_path, store=store)


def _is_desk_api(desk: Desk) -> DeskApi:
    """Nothing at run time: mypy proves here that the desk is what its parts take."""
    return desk
