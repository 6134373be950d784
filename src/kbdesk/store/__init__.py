"""Persistence: the SQLite store (and, later, Postgres) behind one interface."""

from __future__ import annotations

from pathlib import Path

from kbdesk.store.driver import Driver, choose_driver


def open_sqlite_store(path: Path, backend: str = "auto"):
    """Open (creating or upgrading) the SQLite store at ``path``."""
    from kbdesk.store.sqlite import SqliteStore

    return SqliteStore(path, choose_driver(backend))


__all__ = ["Driver", "choose_driver", "open_sqlite_store"]
