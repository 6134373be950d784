"""Persistence: one store core (:mod:`kbdesk.store.core`) for two engines behind the
:class:`~kbdesk.store.api.Store` protocol: SQLite (:mod:`kbdesk.store.sqlite`, one file on
the desktop) and PostgreSQL (:mod:`kbdesk.store.postgres`, a team server)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdesk.store.sqlite.driver import Driver, choose_driver

if TYPE_CHECKING:
    from kbdesk.store.sqlite.store import IntegrityCheck, SqliteStore


def open_sqlite_store(path: Path, backend: str = "auto") -> SqliteStore:
    """Open (creating or upgrading) the SQLite store at ``path``."""
    from kbdesk.store.sqlite import SqliteStore

    return SqliteStore(path, choose_driver(backend))


def is_server_uri(value: Any) -> bool:
    """Whether ``value`` names a team server (``postgresql://`` / ``postgres://``), not a file."""
    return isinstance(value, str) and value.startswith(("postgresql://", "postgres://"))


def check_sqlite_file(path: Path, driver: Driver, *, seconds: float) -> IntegrityCheck:
    """``PRAGMA quick_check`` on the SQLite file at ``path`` within ``seconds`` (before
    anything opens it as a store)."""
    from kbdesk.store.sqlite.store import quick_check

    return quick_check(path, driver, seconds=seconds)


__all__ = ["Driver", "check_sqlite_file", "choose_driver", "is_server_uri", "open_sqlite_store"]
