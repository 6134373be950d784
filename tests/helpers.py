"""Small builders shared by tests."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from kbdesk.store.api import ChatStore
from kbdesk.store.postgres import PostgresStore
from kbdesk.store.sqlite import SqliteStore

T = TypeVar("T")


def unit(*components: float, dims: int = 8) -> list[float]:
    v = np.zeros(dims, dtype=np.float64)
    v[: len(components)] = components
    return (v / np.linalg.norm(v)).tolist()


def axis(i: int, dims: int = 8, weight: float = 1.0, extra: dict[int, float] | None = None) -> list[float]:
    v = np.zeros(dims)
    v[i] = weight
    for j, w in (extra or {}).items():
        v[j] = w
    return (v / np.linalg.norm(v)).tolist()


def table_counts(conn) -> dict[str, int]:
    """Row counts of every table a KB can leave rows in (shadow tables included)."""
    names = [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]
    out = {}
    for name in names:
        # kb_chunks_fts is external-content (count(*) reads kb_chunks itself); its _data
        # and _idx shadow tables hold b-tree segments whose row counts say nothing about
        # orphans. _docsize has one row per indexed chunk: that one counts.
        if name in ("kb_chunks_fts", "kb_chunks_fts_data", "kb_chunks_fts_idx"):
            continue
        try:
            out[name] = conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
        except Exception:  # noqa: BLE001 - a virtual table whose module is not loaded (either driver)
            out[name] = -1
    return out


def sqlite_store(desk: Any) -> SqliteStore:
    """The desk's store, for a test that looks inside the SQLite engine (its vector tiers,
    connections, keyword budgets): checked to be that engine."""
    store = desk.store
    assert isinstance(store, SqliteStore), f"a SQLite desk, not {type(store).__name__}"
    return store


def pg_store(desk: Any) -> PostgresStore:
    """The desk's store, for a test that looks inside the PostgreSQL engine (its identity,
    roles): checked to be that engine."""
    store = desk.store
    assert isinstance(store, PostgresStore), f"a PostgreSQL desk, not {type(store).__name__}"
    return store


def chat_store(desk: Any) -> ChatStore:
    """The desk's store as the chat service uses it (conversations, notes, settings)."""
    store = desk.store
    assert isinstance(store, ChatStore), f"{type(store).__name__} keeps no conversations"
    return store


def present(value: T | None, what: str = "a value") -> T:
    """``value``, checked to be there (for a test that reads on from it)."""
    assert value is not None, f"no {what}"
    return value
