"""Persistence: one store core (:mod:`kbdesk.store.core`) for two engines behind the
:class:`~kbdesk.store.api.Store` protocol: SQLite (:mod:`kbdesk.store.sqlite`, one file on
the desktop) and PostgreSQL (:mod:`kbdesk.store.postgres`, a team server)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kbdesk.store.sqlite.driver import Driver, choose_driver

if TYPE_CHECKING:
    from kbdesk.store.sqlite.store import SqliteStore


def open_sqlite_store(path: Path, backend: str = "auto") -> SqliteStore:
    """Open (creating or upgrading) the SQLite store at ``path``."""
    from kbdesk.store.sqlite import SqliteStore

    return SqliteStore(path, choose_driver(backend))


__all__ = ["Driver", "choose_driver", "open_sqlite_store"]
