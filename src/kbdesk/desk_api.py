"""What the desk offers the parts it is built from: :class:`DeskApi`.

Ingestion, chat and the remotes take the desk they work for as an argument, and the desk
(:mod:`kbdesk.desk`) builds them (``desk.ingestor()``, ``desk.chat()``). Typing their
argument as :class:`kbdesk.desk.Desk` would make each import the module that imports it;
they take this protocol instead — the part of the desk they use — and mypy checks both
sides: every call they make against it, and (:func:`kbdesk.desk._is_desk_api`) that the
real desk satisfies it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kbdesk.config import Config
from kbdesk.embedding import Embedders
from kbdesk.filters import Filters
from kbdesk.models import Document, KnowledgeBase
from kbdesk.paths import Paths
from kbdesk.search import SearchResponse
from kbdesk.store.api import Store

if TYPE_CHECKING:  # the remotes' HTTP client is loaded when a desk first uses them
    from kbdesk.remote.registry import Remotes


class DeskApi(Protocol):
    """The desk as ingestion, chat and the remotes see it (:class:`kbdesk.desk.Desk`)."""

    paths: Paths
    config: Config
    db_path: Path
    store: Store
    embedders: Embedders

    @property
    def files_dir(self) -> Path: ...

    @property
    def remotes(self) -> Remotes: ...

    def kb(self, ref: str) -> KnowledgeBase: ...

    def list_kbs(self) -> list[KnowledgeBase]: ...

    def delete_document(self, doc_id: str) -> Document: ...

    def warm_search(self, ref: str, *, wait: bool = False) -> None: ...

    def reload_config(self, config: Config | None = None) -> Config: ...

    def close(self) -> None: ...

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
    ) -> SearchResponse: ...
